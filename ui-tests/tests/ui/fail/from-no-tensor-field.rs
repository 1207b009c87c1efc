#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
struct Matrix {
    #[dlpack(shape)]
    shape: [usize; 2],
}

fn main() {}
