//! One stride per dimension: arrays of other lengths fail every export and
//! import, so they are compile errors.
#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Exported {
    #[dlpack(data)]
    data: Vec<f32>,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(strides)]
    strides: [i64; 3],
}

#[derive(FromDLPack)]
#[dlpack(ndim = 2)]
struct Imported {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(strides)]
    strides: [i64; 3],
}

fn main() {}
