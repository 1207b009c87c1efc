use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Borrowed {
    #[dlpack(data)]
    samples: &'static [f32],
}

fn main() {}
