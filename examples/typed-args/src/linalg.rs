//! rust-numpy's `linalg` example (which calls ndarray-linalg's `inv`): the
//! inverse of a float64 matrix, by Gauss-Jordan elimination here, so the
//! example needs no LAPACK.

use ndarray::{Array2, Axis};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_dlpack::{Native, Tensor2};

use crate::Result;

/// The inverse of a square float64 matrix, as a NumPy array; a singular or
/// non-square matrix is a `ValueError`.
#[pyfunction]
pub fn inv(x: Tensor2<f64>) -> Result<Native<Array2<f64>>> {
    let x = x.as_array();
    let n = x.nrows();
    if x.ncols() != n {
        return Err(PyValueError::new_err(format!(
            "inv: expected a square matrix, got {n}x{}",
            x.ncols()
        )));
    }
    // [x | I], reduced to [I | x⁻¹].
    let mut m = ndarray::concatenate(Axis(1), &[x, Array2::eye(n).view()])
        .map_err(|err| PyValueError::new_err(err.to_string()))?;
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&a, &b| m[[a, col]].abs().total_cmp(&m[[b, col]].abs()))
            .filter(|&row| m[[row, col]] != 0.0)
            .ok_or_else(|| PyValueError::new_err("inv: the matrix is singular"))?;
        for k in 0..2 * n {
            m.swap([col, k], [pivot, k]);
        }
        let scale = m[[col, col]];
        m.row_mut(col).mapv_inplace(|v| v / scale);
        let pivot_row = m.row(col).to_owned();
        for row in (0..n).filter(|&row| row != col) {
            let factor = m[[row, col]];
            m.row_mut(row).scaled_add(-factor, &pivot_row);
        }
    }
    Ok(Native::numpy(m.slice_move(ndarray::s![.., n..])))
}
