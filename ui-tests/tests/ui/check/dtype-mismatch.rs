//! Compiled with `cargo check` (what rust-analyzer runs): a dtype that
//! differs from typed data is a type error, not a failure at code generation.
#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Samples {
    #[dlpack(data)]
    values: Vec<i64>,
}

fn main() {}
