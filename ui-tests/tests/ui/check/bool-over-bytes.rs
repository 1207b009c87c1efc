//! Compiled with `cargo check`: bytes may hold any dtype but bool, and the
//! type checker says so.
#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(dtype = bool)]
struct Mask {
    #[dlpack(data)]
    bytes: std::sync::Arc<[u8]>,
}

fn main() {}
