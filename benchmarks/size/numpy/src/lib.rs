//! The minimal import + export extension over rust-numpy: take an array of
//! float64, return a new one. `ours/src/lib.rs` is the same over pyo3-dlpack.

use numpy::{PyArray1, PyReadonlyArrayDyn};
use pyo3::prelude::*;

/// The sum of a contiguous float64 array.
#[pyfunction]
fn total(array: PyReadonlyArrayDyn<'_, f64>) -> PyResult<f64> {
    Ok(array.as_slice()?.iter().sum())
}

/// A new float64 array `[0, 1, ..., n - 1]`.
#[pyfunction]
fn ramp(py: Python<'_>, n: usize) -> Bound<'_, PyArray1<f64>> {
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    PyArray1::from_vec(py, values)
}

#[pymodule]
fn size_numpy(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(total, m)?)?;
    m.add_function(wrap_pyfunction!(ramp, m)?)
}
