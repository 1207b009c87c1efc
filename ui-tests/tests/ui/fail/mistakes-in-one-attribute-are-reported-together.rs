//! A mistake that is not a key (a flag given a value, a dtype that is no
//! type) does not end the attribute: the mistakes after it are reported too.
#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(dtype = 1, contiguous = true, ndim = "x", device = "gpu", bogus)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
