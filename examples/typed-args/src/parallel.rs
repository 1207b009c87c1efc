//! rust-numpy's `parallel` example: a matrix-vector product whose rows run on
//! rayon's threads, the interpreter released meanwhile.

use ndarray::{Array1, Zip};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_dlpack::{Native, Tensor1, Tensor2};

/// `x @ y`, one row per task, without holding the interpreter: the typed
/// views are plain `ndarray` views, `Send` and `Sync`.
#[pyfunction]
pub fn rows_dot(py: Python<'_>, x: Tensor2<f64>, y: Tensor1<f64>) -> PyResult<Native<Array1<f64>>> {
    let (x, y) = (x.as_array(), y.as_array());
    if x.ncols() != y.len() {
        return Err(PyValueError::new_err(format!(
            "rows_dot: x has {} columns but y has {} entries",
            x.ncols(),
            y.len()
        )));
    }
    let z = py.detach(|| Zip::from(x.rows()).par_map_collect(|row| row.dot(&y)));
    Ok(Native::numpy(z))
}
