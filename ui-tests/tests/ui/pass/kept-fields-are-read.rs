//! The fields a derived value only keeps alive raise no dead-code warning,
//! and `skip` keeps a field named like a part out of the tensor.
#![deny(warnings)]

use pyo3_dlpack::{AlignedBuffer, IntoDLPack};

#[derive(IntoDLPack)]
struct Frame {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>,
    name: String,
    #[dlpack(skip)]
    shape: String,
}

fn main() {
    let frame = Frame {
        pixels: AlignedBuffer::zeroed(4),
        name: "frame".into(),
        shape: "4".into(),
    };
    assert_eq!(frame.tensor_info().unwrap().shape(), &[4]);
}
