use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
#[dlpack(shape = [height, width])]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    #[dlpack(shape)]
    dims: [usize; 2],
    height: usize,
    width: usize,
}

fn main() {}
