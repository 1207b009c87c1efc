//! Helpers for the process tests (`tests/python/test_process.py`): views
//! taken with the interpreter released, from a thread that keeps doing so
//! while another thread forks.

use pyo3::prelude::*;
use pyo3_dlpack::PyTensor;

/// Imports `obj` `rounds` times, then, with the interpreter released, reads
/// each import through a view and drops it (so the aliasing registry is
/// entered and left while another thread may fork). Returns the last sum.
#[pyfunction]
pub(crate) fn views_released(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    rounds: usize,
) -> PyResult<f64> {
    let tensors = (0..rounds)
        .map(|_| PyTensor::from_pyany(obj))
        .collect::<Result<Vec<_>, _>>()?;
    py.detach(move || {
        let mut sum = 0.0;
        for tensor in tensors {
            sum = tensor.as_slice::<f64>()?.iter().sum();
            drop(tensor);
        }
        Ok(sum)
    })
}

/// An import that handed out a mutable view and is kept alive: its range
/// stays a writer in the aliasing registry until this object is freed.
#[pyclass(frozen)]
pub(crate) struct HeldWriter {
    _tensor: PyTensor,
}

/// Imports `obj`, takes a mutable view of it (claiming its memory), and
/// keeps the import alive in the returned object.
#[pyfunction]
pub(crate) fn hold_writer(mut tensor: PyTensor) -> PyResult<HeldWriter> {
    tensor.as_slice_mut::<f64>()?;
    Ok(HeldWriter { _tensor: tensor })
}
