#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(colour = "red", ndim = "x", device = "gpu")]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
