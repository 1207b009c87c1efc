#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
struct Nothing {}

fn main() {}
