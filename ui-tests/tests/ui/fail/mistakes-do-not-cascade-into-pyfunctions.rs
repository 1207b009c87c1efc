//! One mistake in a derive is one error: the stub impls include the PyO3
//! conversions, so the functions that take or return the type add none.
#![allow(dead_code)]
use pyo3::prelude::*;
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(ndim = "two")]
struct In {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

#[derive(IntoDLPack)]
#[dlpack(ndim = 2)]
struct Out {
    #[dlpack(data)]
    data: Vec<f32>,
}

#[pyfunction]
fn take(input: In) -> usize {
    let _ = input;
    0
}

#[pyfunction]
fn give() -> Out {
    Out { data: vec![] }
}

fn main() {}
