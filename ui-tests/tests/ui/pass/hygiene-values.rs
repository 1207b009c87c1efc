//! Constants, unit structs and const generics named like the locals and
//! parameters a derive could introduce: a `let` or a parameter of that name
//! would be a pattern matching them (a type error on the derive).
#![allow(dead_code, non_upper_case_globals, non_camel_case_types)]

use pyo3_dlpack::{AlignedBuffer, FromDLPack, IntoDLPack, PyTensor};

const builder: usize = 2;
const tensor: usize = 2;
const py: u8 = 0;
const obj: u8 = 0;
const value: u8 = 0;
struct __field0;

#[derive(IntoDLPack)]
struct Exported {
    #[dlpack(data)]
    data: AlignedBuffer<f32>,
    #[dlpack(shape)]
    shape: [usize; builder],
}

#[derive(FromDLPack)]
#[dlpack(ndim = 2)]
struct Imported<const N: usize> {
    #[dlpack(tensor)]
    held: PyTensor,
    #[dlpack(shape)]
    shape: [usize; tensor],
}

#[derive(FromDLPack)]
struct Generic<const tensor: usize> {
    #[dlpack(tensor)]
    held: PyTensor,
}

fn main() {}
