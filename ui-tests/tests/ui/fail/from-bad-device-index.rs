#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(device = "cuda:first")]
struct OnGpu {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
