#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct View<'a> {
    #[dlpack(data)]
    pixels: Vec<u8>,
    name: &'a str,
}

fn main() {}
