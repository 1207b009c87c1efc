#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack()]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    #[dlpack()]
    shape: [usize; 1],
}

fn main() {}
