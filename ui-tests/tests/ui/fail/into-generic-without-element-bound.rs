use pyo3_dlpack::IntoDLPack;

#[derive(IntoDLPack)]
struct Signal<P> {
    #[dlpack(data)]
    samples: Vec<P>,
}

fn main() {}
