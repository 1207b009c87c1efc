#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    #[dlpack(crate = "::pyo3_dlpack")]
    pixels: Vec<u8>,
}

fn main() {}
