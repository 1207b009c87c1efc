use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(ndim = 2, shape = [height, width, channels])]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    height: usize,
    width: usize,
    channels: usize,
}

fn main() {}
