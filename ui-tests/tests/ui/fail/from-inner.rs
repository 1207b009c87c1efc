use pyo3_dlpack::{FromDLPack, PyTensor};

#[derive(FromDLPack)]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(inner)]
    inner: Vec<f32>,
}

fn main() {}
