use std::rc::Rc;

use pyo3_dlpack::IntoDLPack;

// With the struct's `dtype = f32` too: TensorData's error twice (the builder
// and the compile-time dtype check each need it), and no Send + Sync error.
#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Shared {
    #[dlpack(data)]
    samples: Rc<Vec<f32>>,
}

fn main() {}
