#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(contiguous = true)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
