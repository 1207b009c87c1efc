//! The short ways on typed arguments: conversion copies in the argument's
//! rank, and (feature `nalgebra`) nalgebra matrices of a 2-D argument.

use ndarray::{Array, Dimension};

use super::memory::Memory;
use super::{Tensor, TensorMut};
use crate::{CastElement, DLPackError, PlainElement};

macro_rules! short_ways {
    ($ty:ident) => {
        impl<T: PlainElement, D: Dimension, M: Memory> $ty<T, D, M> {
            /// The elements converted to `U`, as an array of the argument's
            /// rank `D` (a row-major host copy from any strides; rust-numpy's
            /// `cast_array`): [`PyTensor::to_array_as`](crate::PyTensor::to_array_as)
            /// without naming the rank again. Device memory is an error.
            ///
            /// ```
            /// use pyo3::prelude::*;
            /// use pyo3_dlpack::{Native, Tensor2};
            /// use pyo3_dlpack::ndarray::Array2;
            ///
            /// /// Python: `halves(np.arange(4).reshape(2, 2))`: int64 in, float64 out.
            /// #[pyfunction]
            /// fn halves(x: Tensor2<i64>) -> PyResult<Native<Array2<f64>>> {
            ///     Ok(Native::numpy(x.cast::<f64>()? / 2.0))
            /// }
            /// # Python::attach(|py| -> PyResult<()> {
            /// #     let x = py.import("numpy")?.call_method1("arange", (4,))?.call_method1("reshape", (2, 2))?;
            /// #     let y = wrap_pyfunction!(halves, py)?.call1((x,))?;
            /// #     assert_eq!(y.call_method0("tolist")?.extract::<Vec<Vec<f64>>>()?, [[0.0, 0.5], [1.0, 1.5]]);
            /// #     Ok(())
            /// # }).unwrap();
            /// ```
            #[doc(alias = "cast_array")]
            pub fn cast<U: CastElement>(&self) -> Result<Array<U, D>, DLPackError> {
                self.tensor().to_array_as::<U, D>()
            }
        }

        #[cfg(feature = "nalgebra")]
        impl<T: PlainElement + nalgebra::Scalar> $ty<T, ndarray::Ix2, super::memory::Host> {
            /// The matrix as a nalgebra view with the argument's strides, no
            /// copy ([`PyTensor::as_dmatrix_view`](crate::PyTensor::as_dmatrix_view)
            /// without naming the dtype again): a `TypeError` for negative
            /// strides (`a[::-1]`), which nalgebra cannot hold; ask for
            /// [`to_dmatrix`](Self::to_dmatrix) to copy those. Feature `nalgebra`.
            pub fn as_dmatrix_view(
                &self,
            ) -> Result<nalgebra::DMatrixView<'_, T, nalgebra::Dyn, nalgebra::Dyn>, DLPackError>
            {
                self.tensor().as_dmatrix_view::<T>()
            }

            /// The matrix copied into a `DMatrix` (column-major), from any
            /// strides, negative ones included. Feature `nalgebra`.
            ///
            /// ```
            /// use pyo3::prelude::*;
            /// use pyo3_dlpack::Tensor2;
            ///
            /// /// Python: `det(np.eye(2)[::-1])`: a view nalgebra cannot hold, copied.
            /// #[pyfunction]
            /// fn det(m: Tensor2<f64>) -> f64 {
            ///     match m.as_dmatrix_view() {
            ///         Ok(view) => view.determinant(),
            ///         Err(_) => m.to_dmatrix().determinant(),
            ///     }
            /// }
            /// # Python::attach(|py| -> PyResult<()> {
            /// #     let flipped = py.eval(c"__import__('numpy').eye(2)[::-1]", None, None)?;
            /// #     assert_eq!(wrap_pyfunction!(det, py)?.call1((flipped,))?.extract::<f64>()?, -1.0);
            /// #     Ok(())
            /// # }).unwrap();
            /// ```
            pub fn to_dmatrix(&self) -> nalgebra::DMatrix<T> {
                let array = self.as_array();
                nalgebra::DMatrix::from_fn(array.nrows(), array.ncols(), |r, c| {
                    array[(r, c)].clone()
                })
            }
        }
    };
}

short_ways!(Tensor);
short_ways!(TensorMut);
