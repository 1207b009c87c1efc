#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
struct Pair {
    #[dlpack(tensor)]
    a: PyTensor,
    #[dlpack(tensor)]
    b: PyTensor,
}

fn main() {}
