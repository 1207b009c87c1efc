#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Samples {
    #[dlpack(data)]
    values: Vec<i64>,
}

fn main() {}
