//! The fields a derived value only keeps alive raise no dead-code warning
//! (the derive reads them), and `skip` keeps a field named like a part out
//! of the tensor: named and tuple structs, an inner tensor, and an import's
//! PyTensor, which keeps the memory its data pointer points at alive.
//! `dead_code` is denied by name: trybuild builds with `-A dead_code`, which
//! `deny(warnings)` alone does not undo.
#![deny(warnings, dead_code)]

use pyo3_dlpack::{AlignedBuffer, FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Frame {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>,
    name: String,
    #[dlpack(skip)]
    shape: String,
}

#[derive(IntoDLPack)]
struct Tagged(#[dlpack(data)] Vec<f32>, String);

#[derive(IntoDLPack)]
struct Labelled {
    #[dlpack(inner)]
    frame: Frame,
    label: String,
}

#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct Input {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    first: *const f32,
}

#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct InputTuple(#[dlpack(tensor)] PyTensor, #[dlpack(data)] *const f32);

fn main() {
    let frame = Frame {
        pixels: AlignedBuffer::zeroed(4),
        name: "frame".into(),
        shape: "4".into(),
    };
    assert_eq!(frame.tensor_info().unwrap().shape(), &[4]);
    let tagged = Tagged(vec![0.0; 2], "tag".into());
    assert_eq!(tagged.tensor_info().unwrap().shape(), &[2]);
    let labelled = Labelled { frame, label: "cat".into() };
    assert_eq!(labelled.tensor_info().unwrap().shape(), &[4]);
    let _: fn(PyTensor) -> Option<*const f32> = |t| Input::from_dlpack(t).ok().map(|i| i.first);
    let _: fn(PyTensor) -> Option<*const f32> =
        |t| InputTuple::from_dlpack(t).ok().map(|i| i.1);
}
