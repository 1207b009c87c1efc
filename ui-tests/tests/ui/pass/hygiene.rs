//! The generated code names everything by absolute path: no prelude, no
//! `use` of the traits, and local items that shadow common names.
#![no_implicit_prelude]
#![allow(dead_code)]

struct Result;
struct Ok;
struct Vec;
mod core {}
mod pyo3 {}

#[derive(::pyo3_dlpack::IntoDLPack)]
#[dlpack(dtype = f32)]
struct Exported {
    #[dlpack(data)]
    data: ::std::vec::Vec<u8>,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(strides)]
    strides: ::std::option::Option<::std::vec::Vec<i64>>,
}

#[derive(::pyo3_dlpack::FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous, writable)]
struct Imported {
    #[dlpack(tensor)]
    tensor: ::pyo3_dlpack::PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(strides)]
    strides: ::std::vec::Vec<i64>,
    #[dlpack(data)]
    data: *mut f32,
    #[dlpack(device)]
    device: ::pyo3_dlpack::Device,
    #[dlpack(dtype)]
    dtype: ::pyo3_dlpack::DataType,
    #[dlpack(read_only)]
    read_only: bool,
    label: ::std::string::String,
}


/// Raw identifiers as field names.
#[derive(::pyo3_dlpack::FromDLPack)]
struct RawNames {
    #[dlpack(tensor)]
    r#type: ::pyo3_dlpack::PyTensor,
    #[dlpack(shape)]
    r#match: ::std::vec::Vec<usize>,
}

fn main() {}
