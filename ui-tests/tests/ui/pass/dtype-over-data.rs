//! Struct-level `dtype = T` over every kind of data the type check sees (or
//! leaves to the runtime): what must keep compiling.
#![allow(dead_code)]

use std::sync::Arc;

use pyo3_dlpack::{AlignedBuffer, DataType, Element, IntoDLPack, RawBuffer, TensorData};

#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct SameType {
    #[dlpack(data)]
    data: Vec<f32>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = i64)]
struct Boxed {
    #[dlpack(data)]
    data: Box<[i64]>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = u16)]
struct Shared {
    #[dlpack(data)]
    data: Arc<[u16]>,
}

/// Bytes may hold any dtype but bool.
#[derive(IntoDLPack)]
#[dlpack(dtype = f64)]
struct Bytes {
    #[dlpack(data)]
    data: AlignedBuffer<u8>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = u8)]
struct BytesAsBytes {
    #[dlpack(data)]
    data: Vec<u8>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = bool)]
struct Mask {
    #[dlpack(data)]
    data: Vec<bool>,
}

/// Untyped memory: the dtype is checked when the value is exported.
#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Raw {
    #[dlpack(data)]
    data: RawBuffer,
}

/// A generic buffer: checked when the type is known.
#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Generic<D: TensorData + Send + Sync + 'static> {
    #[dlpack(data)]
    data: D,
}

/// A user-defined element with the dtype of a built-in one.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Meters(f32);

// SAFETY: a `repr(transparent)` f32, which is exactly float32 (any bit
// pattern, including all zeros, is valid).
unsafe impl Element for Meters {
    const DTYPE: DataType = DataType::F32;
}

#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
struct Distances {
    #[dlpack(data)]
    data: Vec<Meters>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = Meters)]
struct BytesAsMeters {
    #[dlpack(data)]
    data: Vec<u8>,
}

fn assert_into<T: IntoDLPack>() {}

fn main() {
    assert_into::<SameType>();
    assert_into::<Boxed>();
    assert_into::<Shared>();
    assert_into::<Bytes>();
    assert_into::<BytesAsBytes>();
    assert_into::<Mask>();
    assert_into::<Raw>();
    assert_into::<Generic<Vec<f32>>>();
    assert_into::<Generic<AlignedBuffer<u8>>>();
    assert_into::<Distances>();
    assert_into::<BytesAsMeters>();
    let distances = Distances { data: vec![Meters(1.0); 3] };
    assert_eq!(distances.tensor_info().unwrap().dtype(), DataType::F32);
}
