use pyo3_dlpack::IntoDLPack;

// An export's #[dlpack(tensor)] field is the PyTensor of a struct that
// derives both traits: other memory is a #[dlpack(data)] field.
#[derive(IntoDLPack)]
struct Image {
    #[dlpack(tensor)]
    pixels: Vec<u8>,
}

fn main() {}
