//! Generic structs derive both traits; bounds are the user's own.
#![allow(dead_code)]

use pyo3_dlpack::{Element, FromDLPack, IntoDLPack, PyTensor, TensorData};

#[derive(IntoDLPack)]
struct Signal<E: Element> {
    #[dlpack(data)]
    samples: Vec<E>,
}

#[derive(IntoDLPack)]
struct Any<D: TensorData + Send + Sync + 'static, const N: usize> {
    #[dlpack(data)]
    data: D,
    #[dlpack(shape)]
    shape: [usize; N],
    #[dlpack(dtype)]
    dtype: pyo3_dlpack::DataType,
}

#[derive(FromDLPack)]
struct Typed<T: Element> {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    data: *const T,
}

/// A lifetime parameter of the user's own; the derive's lifetimes do not clash.
#[derive(FromDLPack)]
struct View<'a> {
    #[dlpack(tensor)]
    tensor: PyTensor,
    label: std::marker::PhantomData<&'a str>,
}

/// An address field with a struct-level dtype: any dtype fits an address.
#[derive(FromDLPack)]
#[dlpack(dtype = f32)]
struct Address {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(data)]
    address: usize,
}

fn assert_into<T: IntoDLPack>() {}
fn assert_from<T: FromDLPack>() {}

fn main() {
    assert_into::<Signal<f32>>();
    assert_into::<Signal<bool>>();
    assert_into::<Any<Vec<u8>, 2>>();
    assert_from::<Typed<i64>>();
    assert_from::<View<'static>>();
    assert_from::<Address>();
}
