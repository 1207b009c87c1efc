#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(ndim = "2")]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
