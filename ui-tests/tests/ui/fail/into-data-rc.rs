use std::rc::Rc;

use pyo3_dlpack::IntoDLPack;

// One error, which names `Arc<Vec<T>>`; not a second one saying `Rc` is not
// `Send + Sync`.
#[derive(IntoDLPack)]
struct Shared {
    #[dlpack(data)]
    samples: Rc<Vec<f32>>,
}

fn main() {}
