#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    #[dlpack(shape(2))]
    shape: [usize; 1],
}

fn main() {}
