#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
struct Vector {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    data: &'static [f32],
}

fn main() {}
