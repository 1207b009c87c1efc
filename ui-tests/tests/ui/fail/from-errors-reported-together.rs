#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(ndim = 3)]
struct Matrix {
    #[dlpack(shape)]
    rows_cols: [usize; 2],
    #[dlpack(shape)]
    again: [usize; 2],
}

fn main() {}
