#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(data)]
struct Image {
    pixels: Vec<u8>,
}

fn main() {}
