//! Zero-copy tensor exchange between Rust and Python's array frameworks
//! (NumPy, PyTorch, JAX, CuPy, TensorFlow, array-api-strict, pyarrow) over
//! [DLPack](https://dmlc.github.io/dlpack/latest/), for PyO3 extensions.
//!
//! # Derive: your own tensor types
//!
//! `#[derive(IntoDLPack)]` on a struct whose fields hold the memory and its
//! description makes it a tensor a `#[pyfunction]` can return;
//! `#[derive(FromDLPack)]` makes a struct a `#[pyfunction]` argument that any
//! DLPack producer can fill, with constraints checked at import. The
//! attributes are listed on [`IntoDLPack`] and [`FromDLPack`].
//!
//! ```
//! use pyo3::prelude::*;
//! use pyo3_dlpack::{AlignedBuffer, FromDLPack, IntoDLPack, PyTensor};
//!
//! #[derive(IntoDLPack)]
//! struct Image {
//!     #[dlpack(data)]  pixels: AlignedBuffer<u8>,
//!     #[dlpack(shape)] shape: [usize; 3],
//! }
//!
//! #[derive(FromDLPack)]
//! #[dlpack(dtype = f32, ndim = 2)]
//! struct Matrix {
//!     #[dlpack(tensor)] tensor: PyTensor,
//!     #[dlpack(shape)]  shape: [usize; 2],
//! }
//!
//! #[pyfunction]
//! fn load() -> Image {
//!     Image { pixels: AlignedBuffer::zeroed(2 * 2 * 3), shape: [2, 2, 3] }
//! }
//!
//! #[pyfunction]
//! fn rows(m: Matrix) -> usize {
//!     m.shape[0]
//! }
//! ```
//!
//! # Export: a Rust tensor becomes a Python one
//!
//! Or describe your tensor by hand with [`IntoDLPack`] and return it as a
//! [`DLPackTensor`]; every DLPack consumer imports it without copying:
//!
//! ```
//! use pyo3::prelude::*;
//! use pyo3_dlpack::{AlignedBuffer, DLPackError, DLPackTensor, IntoDLPack, TensorInfo};
//!
//! struct Frame {
//!     pixels: AlignedBuffer<u8>, // 64-byte aligned, so JAX does not copy it either
//!     shape: [usize; 3],
//! }
//!
//! impl IntoDLPack for Frame {
//!     fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
//!         TensorInfo::new(&self.pixels, &self.shape)
//!     }
//! }
//!
//! /// Python: `np.from_dlpack(grab())`, `torch.from_dlpack(grab())`, `jnp.from_dlpack(grab())`
//! #[pyfunction]
//! fn grab() -> PyResult<DLPackTensor> {
//!     let frame = Frame { pixels: AlignedBuffer::zeroed(480 * 640 * 3), shape: [480, 640, 3] };
//!     Ok(DLPackTensor::new(frame)?)
//! }
//! # Python::attach(|_py| assert_eq!(grab().unwrap().info().numel(), 921_600));
//! ```
//!
//! The memory can be any [`TensorData`]: `Vec<T>`, `Box<[T]>`, `Arc<[T]>`,
//! `Arc<Vec<T>>`, [`AlignedBuffer<T>`], `ndarray` arrays (feature `ndarray`,
//! with their own shape and strides), a `memmap2::Mmap` or `bytes::Bytes`
//! (features `memmap2`, `bytes`; read-only bytes), or a [`RawBuffer`] around
//! a pointer from any GPU API. Plain buffers are
//! `IntoDLPack` themselves, as 1-D tensors: `DLPackTensor::new(vec![1.0f32; 8])`.
//!
//! Host tensors also speak Python's buffer protocol (`memoryview(t)`,
//! `bytes(t)`, `np.asarray(t)` without a copy), and CUDA tensors
//! `__cuda_array_interface__` (feature `non-dlpack-export`, on by default);
//! [`asdlpack`], a ready `#[pyfunction]`, makes any producer (`bytes`, a
//! `bytearray`, an `mmap`, …) a `DLPackTensor`.
//!
//! To hand Python a framework's own array instead (a `numpy.ndarray`,
//! `torch.Tensor`, `jax.Array` or CuPy array over the same memory), return
//! [`Native::numpy(value)`](Native::numpy) and its siblings, or the kind of an
//! argument with [`Framework::of`]; to fill an output that the caller's
//! framework allocated on the caller's device, use [`allocate_like`].
//!
//! # Import: a Python tensor seen from Rust
//!
//! [`PyTensor`] takes a tensor from any producer (an object with
//! `__dlpack__`, or a capsule), validates every field, and owns it until
//! dropped. It is a `#[pyfunction]` argument as is; [`FromDLPack`] builds
//! your own types from it, checking their constraints:
//!
//! ```
//! use pyo3::prelude::*;
//! use pyo3_dlpack::PyTensor;
//!
//! /// Python: `mean(np.arange(4.0))`, `mean(torch.ones(3, dtype=torch.float64))`
//! #[pyfunction]
//! fn mean(tensor: PyTensor) -> PyResult<f64> {
//!     let values = tensor.to_vec::<f64>()?; // any strides; "expected a float64 tensor, got …"
//!     Ok(values.iter().sum::<f64>() / values.len().max(1) as f64)
//! }
//! ```
//!
//! # What Python users see
//!
//! Returned tensors are [`DLPackTensor`] objects, whose docstring speaks
//! Python. [`DLPackTensor::add_to_module`] adds the class to your module
//! (so Python code can name it, and it reports your module as its
//! `__module__`), and [`DLPackTensor::PYI`] is its type stub for the `.pyi`
//! file you ship (maturin packs `<module>.pyi` next to `Cargo.toml` into
//! the wheel). A [`FromDLPack`] you write by hand becomes a `#[pyfunction]`
//! argument with [`impl_from_pyobject!`]; the derive does it itself.
//!
//! # The guide
//!
//! The [`guide`] is the rest of this documentation, chapter by chapter:
//! objects that speak no DLPack ([`guide::beyond_dlpack`]), device memory
//! and streams ([`guide::devices`]), the safety model and threads
//! ([`guide::safety`]), every error ([`guide::errors`]), the features and
//! the Rust crates they bring ([`guide::crates`]; the README lists the
//! features in one table), performance, testing without a GPU and
//! migration.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod adapters;
mod cuda;
mod device;
mod dtype;
mod element;
pub mod error;
#[cfg(feature = "exchange-api")]
mod exchange;
mod export;
pub mod ffi;
mod foreign;
mod frameworks;
#[cfg(feature = "__fuzzing")]
#[doc(hidden)]
pub mod fuzz;
mod gather;
// The guide: documentation-only modules, rendered by rustdoc and tested as doc tests.
#[cfg(any(doc, doctest))]
pub mod guide;
mod import;
#[cfg(feature = "experimental-inspect")]
#[doc(hidden)]
pub mod inspect;
mod layout;
mod once;
#[cfg(test)]
mod proptests;
mod protocol;
mod python;
mod spare;
#[cfg(feature = "stub-gen")]
#[doc(hidden)]
pub mod stub_gen;
#[cfg(feature = "pickle")]
mod travel;
mod wrap;

#[cfg(feature = "candle")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle")))]
pub use adapters::candle::CandleTensor;
#[cfg(feature = "safetensors")]
#[cfg_attr(docsrs, doc(cfg(feature = "safetensors")))]
pub use adapters::safetensors::{SafetensorView, SafetensorsFile, safetensors_dtype};
#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
pub use cuda::bridge::{CudaTensorView, CudaTensorViewMut};
pub use device::{Device, DeviceType, ParseDeviceError};
pub use dtype::{DataType, DataTypeCode, ParseDataTypeError};
pub use element::{Element, PlainElement};
pub use error::DLPackError;
pub use export::{
    ALIGNMENT, AlignedBuffer, CapsuleFormat, DLPackTensor, Dims, IntoDLPack, RawBuffer, TensorData,
    TensorInfo, TensorInfoBuilder,
};
pub use frameworks::{Allocated, Framework, Native, NumpyTime, allocate_like, to_framework};
pub use import::{
    CastElement, DeviceTensor, FromDLPack, ImportOptions, Located, Protocols, PyTensor, StreamMode,
};
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub use import::{
    Tensor, Tensor0, Tensor1, Tensor2, Tensor3, Tensor4, Tensor5, Tensor6, TensorDyn, TensorMut,
    TensorMut0, TensorMut1, TensorMut2, TensorMut3, TensorMut4, TensorMut5, TensorMut6,
    TensorMutDyn, memory,
};
pub use layout::MAX_NDIM;
pub use protocol::Writability;
pub use wrap::asdlpack;

/// The names most extensions use, in one import (as `pyo3::prelude`):
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::prelude::*;
///
/// #[derive(IntoDLPack)]
/// struct Ramp {
///     #[dlpack(data)]
///     values: AlignedBuffer<f32>,
/// }
///
/// /// Python: `np.from_dlpack(ramp_like(np.zeros(4)))`, of any framework's tensor.
/// #[pyfunction]
/// fn ramp_like(like: PyTensor) -> PyResult<DLPackTensor> {
///     let ramp: Vec<f32> = (0..like.numel()).map(|i| i as f32).collect();
///     Ok(DLPackTensor::new(Ramp { values: AlignedBuffer::from_slice(&ramp) })?)
/// }
/// ```
pub mod prelude {
    // The traits, and with feature `derive` their derive macros.
    pub use crate::{
        AlignedBuffer, DLPackError, DLPackTensor, DataType, Device, Framework, FromDLPack,
        ImportOptions, IntoDLPack, Native, PyTensor, TensorData, TensorInfo,
    };
}

/// Re-exported so that users need no separate `cudarc` dependency of a
/// matching version (feature `cudarc`).
#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
pub use cudarc;

/// `#[derive(IntoDLPack)]` and `#[derive(FromDLPack)]` (feature `derive`, on by default).
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use pyo3_dlpack_derive::{FromDLPack, IntoDLPack};

/// Re-exported so that users need no separate `ndarray` dependency of a matching version.
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub use ndarray;

/// Re-exported so that users name `Complex32`/`Complex64` (`num_complex::Complex<f32/f64>`)
/// in signatures with no separate `num-complex` dependency of a matching version.
#[cfg(feature = "num-complex")]
#[cfg_attr(docsrs, doc(cfg(feature = "num-complex")))]
pub use ::num_complex;

/// Re-exported so that users name `f16`/`bf16` with no separate `half` dependency of a
/// matching version.
#[cfg(feature = "half")]
#[cfg_attr(docsrs, doc(cfg(feature = "half")))]
pub use ::half;

/// Re-exported so that users need no separate `memmap2` dependency of a matching version.
#[cfg(feature = "memmap2")]
#[cfg_attr(docsrs, doc(cfg(feature = "memmap2")))]
pub use ::memmap2;

/// Re-exported so that users need no separate `bytes` dependency of a matching version.
#[cfg(feature = "bytes")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
pub use ::bytes;

/// Re-exported so that users need no separate `safetensors` dependency of a matching version.
#[cfg(feature = "safetensors")]
#[cfg_attr(docsrs, doc(cfg(feature = "safetensors")))]
pub use ::safetensors;

/// Re-exported so that users need no separate `candle-core` dependency of a matching version.
#[cfg(feature = "candle")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle")))]
pub use ::candle_core;

/// Re-exported so that users need no separate `nalgebra` dependency of a matching version.
#[cfg(feature = "nalgebra")]
#[cfg_attr(docsrs, doc(cfg(feature = "nalgebra")))]
pub use ::nalgebra;

/// Re-exported so that users need no separate `image` dependency of a matching version.
#[cfg(feature = "image")]
#[cfg_attr(docsrs, doc(cfg(feature = "image")))]
pub use ::image;

/// Re-exported so that code generated by the derives, and users, need no
/// separate `pyo3` dependency of a matching version.
pub use pyo3;

/// The examples in the repository's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
