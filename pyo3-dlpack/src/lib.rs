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
//! [`AlignedBuffer<T>`], `ndarray` arrays (feature `ndarray`), or a
//! [`RawBuffer`] around a pointer from any GPU API. Plain buffers are
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
//! # Producers that speak no DLPack
//!
//! Objects without `__dlpack__` are imported through the first of these
//! they speak (all accepted by default; [`ImportOptions::protocols`]
//! restricts them; feature `non-dlpack-import`, on by default), in this order:
//!
//! 1. `__cuda_array_interface__` (versions 2 and 3): device memory,
//!    described, never read. The device is asked of the CUDA driver
//!    (`libcuda.so.1`, or the library the variable `PYO3_DLPACK_CUDA_DRIVER`
//!    names, loaded at run time: no build-time CUDA dependency; without it,
//!    a `BufferError` names it). Version 3's `stream` is honoured
//!    as its specification says: the import blocks until that stream's work
//!    is done, or, with [`ImportOptions::stream`], makes your stream wait
//!    for it (an event) without blocking.
//! 2. `__array_interface__` (version 3): host memory, as an `(address,
//!    read_only)` pair or a buffer object with an `offset` (the layout is
//!    checked to stay inside it); strides in bytes must be whole elements;
//!    a `mask` is refused. The producer object is kept alive. A raw
//!    address is trusted as NumPy trusts it (an object that lies about it
//!    crashes the import, as it crashes `np.asarray`); a buffer object is
//!    bounds-checked.
//! 3. The buffer protocol (`bytes`, `bytearray`, `memoryview`,
//!    `array.array`, `mmap`, ctypes objects, …): every struct format with a
//!    DLPack dtype (`?`, `b h i l q n` and unsigned, `e f d`, `Zf Zd`, in
//!    native or standard sizes), strides of any sign, writability as the
//!    buffer says. The view is held until the `PyTensor` drops and released
//!    once, so a `bytearray` cannot be resized, nor an `mmap` closed, under
//!    it. Not in the limited API before CPython 3.11: abi3 builds for older
//!    versions skip it.
//!
//! Elements in non-native byte order are refused, never misread. DLPack
//! comes first because it alone carries devices, read-only flags and
//! ownership; the CUDA interface before NumPy's, as an object with both is
//! a device array; the buffer protocol last, its formats being the least
//! precise. Dropping such an import attaches to the interpreter (to release
//! the view or the producer), as PyO3's own `PyBuffer` does.
//!
//! # Safety model
//!
//! - The only `unsafe` a user writes is the promise about memory:
//!   implementing [`TensorData`] or calling [`RawBuffer::new`]. Describing
//!   a tensor is safe, and [`TensorInfo`] checks that shape, strides and
//!   offset stay inside the buffer before anything is exported.
//! - An exported value lives until the Python object and every consumer are
//!   done with it; it is dropped exactly once, on whatever thread lets go last
//!   (torch frees tensors without the GIL), so it must be `Send + Sync + 'static`.
//! - Exported memory is shared: a consumer may write to it unless it was
//!   exported read-only (`Arc<[T]>` always is, and so are values shared
//!   through [`DLPackTensor::from_arc`] or `with_subclass` while other clones
//!   of their `Arc` exist; the `_writable` variants lift that on your promise).
//! - No panic crosses into C: a panicking `Drop` in a deleter is caught
//!   (the panic hook reports it; the crate itself prints nothing).
//! - Imported fields are validated before use (rank, NULL pointers, negative
//!   extents, size and address overflow, dtype codes); views check dtype,
//!   contiguity, alignment and read-only flags, and never create `&[bool]`
//!   over foreign bytes ([`PlainElement`]).
//!
//! What the types cannot see, and you must (memory shared with Python lies
//! outside Rust's borrow rules, as with rust-numpy's arrays):
//!
//! - **Python code writing an imported tensor.** A view (`as_slice`,
//!   `as_slice_mut`, `ndarray` views) excludes other views of this crate,
//!   not the producer's own object: Python code that runs while the view is
//!   alive (a callback you call, another thread once you detach) may write
//!   the memory through it. Hold views only while no Python code that could
//!   write the array runs, or copy first (`to_vec`).
//! - **Memory your own `IntoDLPack` reaches through something shared.** A
//!   consumer's writes under another Rust reference to the memory break
//!   Rust's aliasing rules, and the crate sees only the reference a
//!   hand-written [`IntoDLPack::tensor_info`] gives it. So an export is
//!   writable only when that buffer (the `Vec`, the `AlignedBuffer`) lies
//!   inside the exported value: a field, or the value itself (what the
//!   derive and `DLPackTensor::new(vec)` export, a `Box<[T]>` value
//!   included). One reached through anything else (the contents of an
//!   `Arc` other clones share, of a `Box` the value holds, one `Vec` of
//!   several) is exported read-only, and refused by `Native::torch`,
//!   unless the description vouches that nothing else reaches it
//!   ([`TensorInfoBuilder::unshared`], `unsafe`).
//! - **`bool` memory exported writable** may come back holding bytes other
//!   than 0 and 1 (a consumer that writes through a `uint8` view): a `Drop`
//!   that reads it after export should read the bytes as `u8`.
//!
//! # Threads and free-threaded Python
//!
//! PyO3 0.30 declares extension modules safe for free-threaded CPython
//! (3.13t/3.14t) unless they opt out, so modules built on this crate are. No
//! free-threaded interpreter can be built where this crate is tested, so
//! what follows is a design review, not a test result; the GIL builds run the
//! same code with eight threads importing, exporting and freeing at once.
//!
//! - **Consuming a capsule** checks its name and renames it `used_…` inside
//!   the capsule's critical section (`with_critical_section`): of two threads
//!   handed the same capsule, exactly one takes the tensor, the other gets
//!   "already consumed". Capsules returned by a producer's `__dlpack__` to
//!   our own call are private to that call until we consume them.
//! - **Exported values** are shared through an atomic `Arc`: concurrent
//!   `__dlpack__` calls on one `DLPackTensor` each make their own block, and
//!   the value is dropped once, by whichever deleter runs last, on any
//!   thread, touching no Python object. A `DLPackTensor` never changes after
//!   it is made.
//! - **The aliasing registry** is a global mutex-protected list that an
//!   import joins when it first hands out a view (a mutable view is refused
//!   while another import's view may overlap it, on any thread; a view of an
//!   import overlapping a writer is refused), left before the producer's
//!   deleter runs, so freed and reused memory is never refused as shared.
//!   Imports that never hand out a view never take its lock. It is one per
//!   process: every extension module built on this crate uses the table the
//!   first of them published in `sys` (a versioned capsule, set with
//!   `dict.setdefault`), so views taken by two extensions exclude each
//!   other as views taken by one do.
//! - **NumPy arrays read directly** (an exact `numpy.ndarray` of NumPy 2.1
//!   or later, default options): the array's fields are read as NumPy's own
//!   `__dlpack__` reads them, without a lock, as NumPy does; a free-threaded
//!   program that reshapes an array on one thread while another imports it
//!   races exactly as it would through `__dlpack__`.
//! - **The exchange-table cache** is read with atomics only; entries are
//!   published once, never changed or freed (with an entry for
//!   `torch.Tensor`, the addresses of torch's own `requires_grad`,
//!   `is_conj` and `is_neg` functions). The NumPy C-API table is read
//!   once through a `PyOnceLock`.
//! - **`max_version` tuples** that `DLPackTensor.__dlpack__` has read are
//!   remembered in four slots, each published once with atomics and never
//!   changed; each holds its tuple forever (an exact tuple of exact ints,
//!   immutable), so an address always names the tuple read.
//! - **A `PyTensor`** owns its managed tensor (`Send + Sync`); mutable
//!   views need `&mut`. It may be dropped on any thread, with or without
//!   the GIL: DLPack requires producers' deleters to allow that.
//! - **Spare allocations.** A dropped `PyTensor`'s state, and an export's
//!   block freed by its deleter, are kept in a slot of the thread that frees
//!   them, one per use, for that thread's next import or export
//!   (thread-local: no lock, no atomic; freed when the thread exits).
//! - **Borrowed views** (`PyTensor::with_borrowed`) hold no reference to the
//!   producer's storage, only to the object: with the GIL, nothing can free
//!   that storage while the closure runs unless the closure itself runs
//!   Python code; on a free-threaded interpreter another thread could (say,
//!   `t.resize_()`). Use the owning import (`PyTensor::from_pyany`, every
//!   `PyTensor` argument) when other threads may touch the tensor.
//!
//! # Features
//!
//! - `derive` (default): `#[derive(IntoDLPack, FromDLPack)]`.
//! - `non-dlpack-import` (default): [`PyTensor`] also imports objects that
//!   speak no DLPack (`__cuda_array_interface__`, `__array_interface__`, the
//!   buffer protocol; see above). Without it, only DLPack producers and
//!   capsules are imported, and [`ImportOptions::protocols`] only narrows
//!   what an error message lists.
//! - `non-dlpack-export` (default): a host [`DLPackTensor`] is also a buffer
//!   exporter (`memoryview(t)`, `bytes(t)`) with `__array__`
//!   (`np.asarray(t)`), and a CUDA one has `__cuda_array_interface__`.
//!   Without them, consumers take it through DLPack (`np.from_dlpack(t)`;
//!   `np.asarray(t)` then makes a 0-d object array, as for any object).
//! - `cuda-driver` (default): the CUDA driver, loaded at run time, for what
//!   needs it: an export's stream ordered before its consumer's, host copies
//!   of device memory, pinned and managed memory read after their stream,
//!   synchronising exchange-API imports, `__cuda_array_interface__`
//!   imports. Without it those fail as on a machine without a driver (a
//!   `BufferError` that names the feature); host tensors never need it.
//! - `ndarray`: export `ndarray::Array<T, D>` with its own strides.
//! - `half`: `f16` and `bf16` elements. `num-complex`: `Complex<f32>`/`Complex<f64>`.
//! - `cudarc` (enables `cuda-driver`): cudarc's `CudaSlice<T>` is tensor
//!   memory (exported on its device, consumers ordered after its stream),
//!   and CUDA imports give typed cudarc views ([`PyTensor::cuda_view`],
//!   [`PyTensor::cuda_view_mut`]).
//!   cudarc loads the CUDA driver at run time, so it builds anywhere.
//! - `safetensors`: `SafetensorsFile` (a memory-mapped file, or bytes you
//!   own) and its tensors, `SafetensorView`s exported read-only with no
//!   copy, every safetensors dtype (float8, float6, float4 included).
//! - `nalgebra`: `DMatrix`/`OMatrix` (and boxed static matrices) exported
//!   column-major with their strides; imports viewed as
//!   `nalgebra::DMatrixView` with the tensor's strides
//!   (`PyTensor::as_dmatrix_view`).
//! - `image`: `image::ImageBuffer<P, Vec<_>>` exported as a (height, width,
//!   channels) tensor with no copy; imports as image buffers (one copy,
//!   `PyTensor::to_image_buffer`) or views (`PyTensor::as_image_view`).
//! - `candle`: [`CandleTensor`], a `candle_core::Tensor` exported read-only
//!   with no copy (CPU tensors; it holds the storage's read lock while
//!   exported); imports copied once into a CPU `Tensor`
//!   (`PyTensor::to_candle_tensor`). Needs Rust 1.89 (candle 0.11's `zip`).
//!
//! An extension that needs DLPack only can turn the defaults off
//! (`default-features = false`, plus `derive` if it derives) for a smaller
//! binary.
//!
//! The adapters' dependencies and the oldest Rust they declare: safetensors
//! 0.8 (1.80) with memmap2 0.9.8 or later (1.63; 0.9.12: 1.65); nalgebra 0.33
//! to 0.35 (0.33 declares none, 0.34 needs 1.87, 0.35 1.89); image 0.25.6 to
//! 0.25.9 (0.25.9: 1.85; 0.25.10 needs 1.88). The workspace's MSRV-aware
//! resolver picks the newest that declare 1.85 or less. Feature `stub-gen`'s
//! pyo3-stub-gen 0.23.2 needs `time` 0.3.47 or later, which declares 1.88.
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
#[cfg(test)]
mod proptests;
mod protocol;
mod python;
mod spare;
#[cfg(feature = "stub-gen")]
#[doc(hidden)]
pub mod stub_gen;
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
pub use frameworks::{Allocated, Framework, Native, allocate_like, to_framework};
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
