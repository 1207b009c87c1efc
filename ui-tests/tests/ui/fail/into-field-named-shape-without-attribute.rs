//! A field named like a part of the tensor, without its attribute, would
//! silently be no part of it (this export would be 1-D).
use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<f32>,
    shape: [usize; 2],
}

fn main() {}
