use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
#[dlpack(shape = [height, width])]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    height: usize,
    width: f32,
}

fn main() {}
