use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
#[dlpack(shape = [height, depth])]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    height: usize,
}

fn main() {}
