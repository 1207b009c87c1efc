#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
union Image {
    bytes: std::mem::ManuallyDrop<Vec<u8>>,
}

fn main() {}
