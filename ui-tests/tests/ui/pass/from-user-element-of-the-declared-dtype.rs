//! A FromDLPack data pointer to the user's own element type of the declared
//! dtype (the export side accepts the same, `dtype-over-data.rs`).
#![allow(dead_code)]
use pyo3_dlpack::{DataType, Element, FromDLPack, PyTensor};

#[derive(Clone, Copy)]
#[repr(transparent)]
struct Meters(f32);

// SAFETY: a transparent f32: float32's size, alignment and representation.
unsafe impl Element for Meters {
    const DTYPE: DataType = DataType::F32;
}

#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct Distances {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    first: *const Meters,
}

fn main() {}
