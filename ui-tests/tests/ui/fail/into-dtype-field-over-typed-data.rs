//! A runtime dtype over typed data could only repeat or contradict it.
use pyo3_dlpack::{DataType, IntoDLPack};

#[derive(IntoDLPack)]
struct Samples {
    #[dlpack(data)]
    values: Vec<f32>,
    #[dlpack(dtype)]
    dtype: DataType,
}

fn main() {}
