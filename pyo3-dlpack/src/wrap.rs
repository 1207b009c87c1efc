//! `asdlpack`: a ready `#[pyfunction]` that turns any producer into a `DLPackTensor`.

use pyo3::prelude::*;

use crate::{DLPackTensor, PyTensor};

/// `asdlpack(obj)`: `obj` as a `DLPackTensor`, zero-copy, for Python code
/// that hands `bytes`, a `bytearray`, a `memoryview`, an `mmap`, an object
/// with `__array_interface__` or `__cuda_array_interface__`, or any DLPack
/// producer to a consumer that takes only DLPack (`torch.from_dlpack`,
/// `jax.numpy.from_dlpack`). The object is imported as a [`PyTensor`]
/// (holding its memory: a `bytearray` cannot be resized meanwhile) and
/// exported again, keeping its writability.
///
/// Add it to your module:
///
/// ```
/// use pyo3::prelude::*;
///
/// #[pymodule]
/// fn my_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     m.add_function(wrap_pyfunction!(pyo3_dlpack::asdlpack, m)?)?;
///     Ok(())
/// }
/// // Python: torch.from_dlpack(my_module.asdlpack(bytearray(16)))
/// ```
#[pyfunction]
pub fn asdlpack(obj: &Bound<'_, PyAny>) -> PyResult<DLPackTensor> {
    let tensor = PyTensor::from_pyany(obj)?;
    Ok(DLPackTensor::new(tensor)?)
}
