use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Labelled {
    #[dlpack(inner)]
    pixels: Vec<String>,
}

fn main() {}
