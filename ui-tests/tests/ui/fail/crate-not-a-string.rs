#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(crate = pyo3_dlpack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
}

fn main() {}
