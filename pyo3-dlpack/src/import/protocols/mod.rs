//! Producers that speak no DLPack: `__cuda_array_interface__`,
//! `__array_interface__` and the buffer protocol, tried in that order after
//! `__dlpack__` and capsules.
//!
//! The order: DLPack first, because it is the one protocol that carries
//! devices, read-only flags and ownership; then the CUDA array interface,
//! because an object with both interfaces (a device array with a host
//! mirror) is a device array; then NumPy's array interface, which carries
//! dtype and layout; the buffer protocol last, whose struct formats are the
//! least precise.
//!
//! All of them are feature `non-dlpack-import` (on by default); without it an
//! object without `__dlpack__` is refused as no tensor.

#[cfg(feature = "non-dlpack-import")]
mod array_interface;
#[cfg(all(feature = "non-dlpack-import", any(not(Py_LIMITED_API), Py_3_11)))]
pub(crate) mod buffer;
#[cfg(feature = "non-dlpack-import")]
pub(crate) mod cuda_array_interface;
#[cfg(feature = "non-dlpack-import")]
mod format;
#[cfg(feature = "non-dlpack-import")]
mod interface_dict;
#[cfg(feature = "non-dlpack-import")]
pub(crate) mod owner;
// Also what unpickling holds a pickle's buffer with (`travel`).
#[cfg(all(
    any(feature = "non-dlpack-import", feature = "pickle"),
    any(not(Py_LIMITED_API), Py_3_11)
))]
pub(crate) mod view;

use pyo3::prelude::*;

use crate::DLPackError;
use crate::import::options::{ImportOptions, Protocols};
use crate::import::tensor::PyTensor;
use crate::python::type_name;

/// Imports `obj`, which has no `__dlpack__` and is no capsule, through the
/// first protocol it speaks that `options` accept.
#[cfg(feature = "non-dlpack-import")]
pub(crate) fn import(obj: &Bound<'_, PyAny>, options: &ImportOptions) -> PyResult<PyTensor> {
    use crate::python::optional_attr;
    use pyo3::intern;

    let py = obj.py();
    let accepted = options.accepted_protocols();
    if accepted.contains(Protocols::CUDA_ARRAY_INTERFACE) {
        if let Some(value) = optional_attr(obj, intern!(py, "__cuda_array_interface__"))? {
            return cuda_array_interface::import(obj, value, options.consumer_stream());
        }
    }
    if accepted.contains(Protocols::ARRAY_INTERFACE) {
        if let Some(value) = optional_attr(obj, intern!(py, "__array_interface__"))? {
            return array_interface::import(obj, value);
        }
    }
    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    if accepted.contains(Protocols::BUFFER)
        // SAFETY: attached; `obj` is a live object.
        && unsafe { pyo3::ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 1
    {
        return buffer::import(obj);
    }
    not_a_tensor(obj, accepted)
}

/// Refuses `obj`, which has no `__dlpack__` and is no capsule (feature
/// `non-dlpack-import` off: no other protocol is compiled in).
#[cfg(not(feature = "non-dlpack-import"))]
pub(crate) fn import(obj: &Bound<'_, PyAny>, options: &ImportOptions) -> PyResult<PyTensor> {
    not_a_tensor(obj, options.accepted_protocols())
}

/// The error for an object that speaks none of the `accepted` protocols.
#[cold]
#[inline(never)]
fn not_a_tensor(obj: &Bound<'_, PyAny>, accepted: Protocols) -> PyResult<PyTensor> {
    Err(DLPackError::NotATensor {
        type_name: type_name(obj),
        accepted: accepted.names(),
    }
    .into())
}
