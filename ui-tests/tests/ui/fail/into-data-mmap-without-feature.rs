use pyo3_dlpack::IntoDLPack;

// Without pyo3-dlpack's `memmap2` feature a mapped file is not memory: one
// error, which names the feature.
#[derive(IntoDLPack)]
struct Weights {
    #[dlpack(data)]
    file: memmap2::Mmap,
}

fn main() {}
