use std::rc::Rc;

use pyo3_dlpack::IntoDLPack;

// One error, which names `Arc<[T]>`; not a second one saying `Rc` is not
// `Send + Sync`.
#[derive(IntoDLPack)]
struct Shared {
    #[dlpack(data)]
    samples: Rc<[f32]>,
}

fn main() {}
