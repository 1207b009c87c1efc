use pyo3_dlpack::{Device, FromDLPack, PyTensor};

#[derive(FromDLPack)]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    device: Device,
}

fn main() {}
