use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
#[dlpack(shape = [height, width])]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    height: usize,
    width: String,
}

fn main() {}
