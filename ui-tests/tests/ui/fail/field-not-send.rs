#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    // Sync, but not Send.
    guard: std::sync::MutexGuard<'static, u8>,
}

fn main() {}
