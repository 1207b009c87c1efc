use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(byte_offset)]
    offset: usize,
}

fn main() {}
