use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Pixels {
    #[dlpack(data)]
    values: Vec<u8>,
}

#[derive(IntoDLPack)]
#[dlpack(read_only)]
struct Labelled {
    #[dlpack(inner)]
    pixels: Pixels,
    #[dlpack(shape)]
    dims: [usize; 2],
}

fn main() {}
