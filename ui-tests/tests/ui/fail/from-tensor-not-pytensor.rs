#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
struct Vector {
    #[dlpack(tensor)]
    tensor: Vec<f32>,
}

fn main() {}
