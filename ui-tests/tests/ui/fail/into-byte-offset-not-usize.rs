use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Window {
    #[dlpack(data)]
    values: Vec<f32>,
    #[dlpack(byte_offset)]
    start: u32,
}

fn main() {}
