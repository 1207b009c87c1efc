use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<f32>,
    #[dlpack(skip = true)]
    shape: String,
}

fn main() {}
