use std::rc::Rc;

use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Shared {
    #[dlpack(data)]
    samples: Rc<Vec<f32>>,
}

fn main() {}
