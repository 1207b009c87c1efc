#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(ndim = 2, device = "cuda", contiguous, writable)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
}

fn main() {}
