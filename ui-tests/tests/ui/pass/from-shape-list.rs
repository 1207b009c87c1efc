//! An import's `shape = [...]` fills one scalar field per extent, in order.
#![deny(warnings)]

use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(dtype = u8, shape = [height, width, channels])]
struct Input {
    #[dlpack(tensor)]
    pixels: PyTensor,
    height: usize,
    width: u32,
    channels: u8,
}

#[derive(FromDLPack)]
#[dlpack(shape = [1, 2])]
struct Pair(#[dlpack(tensor)] PyTensor, u64, usize);

fn main() {
    let _: fn(PyTensor) -> Result<Input, _> = <Input as FromDLPack>::from_dlpack;
    let _: fn(PyTensor) -> Result<Pair, _> = <Pair as FromDLPack>::from_dlpack;
}
