//! Entry points whose only purpose is to be timed (`benchmarks/python_bench.py`).

#[allow(unused_imports)]
use super::*;

/// A lenient derived importer: a float32 vector of any layout.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 1)]
pub(crate) struct VectorIn {
    #[dlpack(tensor)]
    _tensor: PyTensor,
    #[dlpack(shape)]
    len: [usize; 1],
}

/// Imports through the derive and returns the length (the derived path's cost).
#[pyfunction]
pub(crate) fn consume_derived(v: VectorIn) -> usize {
    v.len[0]
}

/// Borrows and returns ndim (the borrowed path's cost).
#[pyfunction]
pub(crate) fn consume_borrowed(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    PyTensor::with_borrowed(obj, PyTensor::ndim)
}

/// Takes any object and does nothing (the floor of a #[pyfunction] call).
#[pyfunction]
pub(crate) fn noop(obj: &Bound<'_, PyAny>) -> usize {
    obj.as_ptr() as usize
}

/// Imports a tensor and drops it (the import path's cost).
#[pyfunction]
pub(crate) fn consume(tensor: PyTensor) -> usize {
    tensor.ndim()
}

/// Imports a list of tensors and drops them (the cost per tensor of a list).
#[pyfunction]
pub(crate) fn consume_list(tensors: Vec<PyTensor>) -> usize {
    tensors.len()
}
