#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(dtype = bool)]
struct Mask {
    #[dlpack(data)]
    bytes: Vec<u8>,
}

fn main() {}
