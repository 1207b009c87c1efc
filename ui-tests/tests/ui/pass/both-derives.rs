//! One struct derives both traits: its import's PyTensor is its export's
//! memory, and `shape = [...]` names the same fields both ways.
#![deny(warnings, dead_code)]

use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack, FromDLPack)]
#[dlpack(dtype = u8, shape = [height, width, channels])]
struct Image {
    #[dlpack(tensor)]
    pixels: PyTensor,
    height: usize,
    width: u32,
    channels: u8,
    label: String,
}

#[derive(IntoDLPack, FromDLPack)]
struct Pair(#[dlpack(tensor)] PyTensor, #[dlpack(shape)] Vec<usize>);

fn main() {
    let _: fn(PyTensor) -> Result<Image, _> = <Image as FromDLPack>::from_dlpack;
    let _: fn(PyTensor) -> Result<Pair, _> = <Pair as FromDLPack>::from_dlpack;
    let _ = |image: &Image| image.tensor_info().map(|info| info.numel());
    let _ = |pair: &Pair| pair.tensor_info().map(|info| info.numel());
}
