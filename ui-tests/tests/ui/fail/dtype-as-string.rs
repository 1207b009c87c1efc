#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(dtype = "f32")]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
}

fn main() {}
