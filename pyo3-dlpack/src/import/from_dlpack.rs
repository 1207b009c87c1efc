//! `FromDLPack`: building a user type from an imported tensor.

use crate::DLPackError;
use crate::import::tensor::PyTensor;

/// A type that can be built from an imported tensor, checking its
/// constraints (dtype, rank, device, layout, …).
///
/// `#[derive(FromDLPack)]` implements it and `FromPyObject`, so the type is
/// a `#[pyfunction]` argument that any DLPack producer can fill:
///
/// | attribute | meaning |
/// |---|---|
/// | struct `dtype = T` | the tensor's dtype must be `T`'s (an [`Element`](crate::Element)) |
/// | struct `ndim = N` | it must have `N` dimensions (a `[usize; N]` shape field implies it) |
/// | struct `device = "cpu"`, `"cuda"`, `"cuda:1"`, … | device type, and index when given |
/// | struct `contiguous` | row-major contiguous |
/// | struct `writable` | not read-only |
/// | struct `crate = "path"` | the runtime crate's path, when renamed |
/// | field `#[dlpack(tensor)]` | the [`PyTensor`] (required: it owns the memory) |
/// | field `#[dlpack(shape)]`, `#[dlpack(strides)]` | `[usize; N]`, `Vec<i64>`, … (strides may be an `Option`) |
/// | field `#[dlpack(device)]`, `#[dlpack(dtype)]`, `#[dlpack(read_only)]` | `Device`, `DataType`, `bool` |
/// | field `#[dlpack(data)]` | `*const T`, `*mut T` (needs a writable tensor), `NonNull<T>`, or a `u64`/`usize` address; `T` must be the dtype's type |
///
/// Fields without an attribute get `Default::default()`. A failed
/// constraint is a [`DLPackError`] (a `ValueError` in Python) that names
/// what was expected and what was found; an object that speaks no DLPack is
/// a `TypeError`.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{FromDLPack, PyTensor};
///
/// #[derive(FromDLPack)]
/// #[dlpack(dtype = f64, ndim = 1, contiguous)]
/// struct Samples {
///     #[dlpack(tensor)]
///     tensor: PyTensor,
///     #[dlpack(shape)]
///     len: [usize; 1],
/// }
///
/// /// Python: `mean(np.arange(4.0))`; `mean(np.ones((2, 2)))` raises
/// /// ValueError("expected a 1-dimensional tensor, got 2 dimensions")
/// #[pyfunction]
/// fn mean(s: Samples) -> PyResult<f64> {
///     Ok(s.tensor.as_slice::<f64>()?.iter().sum::<f64>() / s.len[0].max(1) as f64)
/// }
/// ```
///
/// It can also be written by hand:
///
/// ```
/// use pyo3_dlpack::{DataType, DLPackError, FromDLPack, PyTensor};
///
/// /// A float32 matrix.
/// struct Matrix {
///     tensor: PyTensor,
///     rows: usize,
///     cols: usize,
/// }
///
/// impl FromDLPack for Matrix {
///     fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
///         tensor.ensure_dtype(DataType::F32)?;
///         tensor.ensure_ndim(2)?;
///         let (rows, cols) = (tensor.shape()[0] as usize, tensor.shape()[1] as usize);
///         Ok(Matrix { tensor, rows, cols })
///     }
/// }
/// ```
pub trait FromDLPack: Sized {
    /// Builds `Self`, or says which constraint the tensor fails.
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError>;
}

impl FromDLPack for PyTensor {
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
        Ok(tensor)
    }
}
