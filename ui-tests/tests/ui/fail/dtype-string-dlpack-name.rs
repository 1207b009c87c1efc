#![allow(unused_imports, dead_code)]
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

// A DLPack/NumPy dtype name in a string: the error names the Rust type.
#[derive(IntoDLPack)]
#[dlpack(dtype = "float32")]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
}

#[derive(FromDLPack)]
#[dlpack(dtype = "torch.int64")]
struct Indices {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

fn main() {}
