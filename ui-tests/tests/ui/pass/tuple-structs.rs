//! Tuple structs derive both traits, their roles by position.
#![deny(warnings)]

use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

#[derive(IntoDLPack)]
struct Image(#[dlpack(data)] Vec<u8>, #[dlpack(shape)] [usize; 2], String);

#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct Input(#[dlpack(tensor)] PyTensor, #[dlpack(shape)] Vec<usize>);

fn main() {
    let image = Image(vec![0; 6], [2, 3], "kept".into());
    assert_eq!(image.tensor_info().unwrap().shape(), &[2, 3]);
    let _: fn(PyTensor) -> Result<Input, _> = <Input as FromDLPack>::from_dlpack;
}
