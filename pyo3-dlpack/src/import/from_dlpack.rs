//! `FromDLPack`: building a user type from an imported tensor.

use crate::DLPackError;
use crate::import::tensor::PyTensor;

/// A type that can be built from an imported tensor, checking its
/// constraints (dtype, rank, device, layout, …).
///
/// `#[derive(FromDLPack)]` implements it (and `FromPyObject`, so the type is
/// a `#[pyfunction]` argument); it can also be written by hand:
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
