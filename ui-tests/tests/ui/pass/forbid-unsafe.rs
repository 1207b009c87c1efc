//! A crate that forbids `unsafe` can derive both traits: the generated code
//! is safe, and so is everything it calls.
#![forbid(unsafe_code)]
#![allow(dead_code)]

use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, Device, FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>,
    #[dlpack(shape)]
    shape: [usize; 3],
    #[dlpack(device)]
    device: Device,
    #[dlpack(read_only)]
    frozen: bool,
}

#[derive(FromDLPack)]
#[dlpack(dtype = u8, ndim = 3)]
struct ImageIn {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 3],
}

#[pyfunction]
fn load() -> Image {
    Image { pixels: AlignedBuffer::zeroed(12), shape: [2, 2, 3], device: Device::cpu(), frozen: false }
}

#[pyfunction]
fn height(image: ImageIn) -> usize {
    image.shape[0]
}

fn main() {}
