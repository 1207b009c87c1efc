//! The minimal import + export extension over pyo3-dlpack: take an array of
//! float64, return a new one. `numpy/src/lib.rs` is the same over rust-numpy.

use pyo3::prelude::*;
use pyo3_dlpack::{DLPackTensor, PyTensor};

/// The sum of a contiguous float64 array (any DLPack producer).
#[pyfunction]
fn total(tensor: PyTensor) -> PyResult<f64> {
    Ok(tensor.as_slice::<f64>()?.iter().sum())
}

/// A new float64 array `[0, 1, ..., n - 1]`.
#[pyfunction]
fn ramp(n: usize) -> PyResult<DLPackTensor> {
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    Ok(DLPackTensor::new(values)?)
}

#[pymodule]
fn size_ours(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(total, m)?)?;
    m.add_function(wrap_pyfunction!(ramp, m)?)
}
