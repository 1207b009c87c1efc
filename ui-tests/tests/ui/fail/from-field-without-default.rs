#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

struct Handle;

#[derive(FromDLPack)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
    handle: Handle,
}

fn main() {}
