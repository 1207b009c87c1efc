#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct Vector {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    data: *const f64,
}

fn main() {}
