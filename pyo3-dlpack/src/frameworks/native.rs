//! Framework-native results: a Rust value returned to Python as a real
//! `numpy.ndarray`, `torch.Tensor`, `jax.Array` or CuPy array, zero-copy,
//! the value dropped exactly once when the framework frees its array.
//!
//! Each framework through its fastest correct constructor:
//! - torch: its own C exchange table (`managed_tensor_to_py_object_no_sync`
//!   of `torch.Tensor.__dlpack_c_exchange_api__`, `frameworks::torch`), no
//!   Python call; torch builds without the table fall back to
//!   `torch.from_dlpack`;
//! - NumPy: the NumPy C API (`frameworks::numpy`), an array over
//!   the memory whose base object owns the value; a dtype NumPy lacks
//!   (bfloat16, float8, …) is a `BufferError` naming it;
//! - JAX: host values of the dtypes JAX keeps (not the 64-bit ones it
//!   narrows) through jaxlib's capsule import, the array
//!   `jax.dlpack.from_dlpack` would return without its Python steps
//!   (`frameworks::jax`); other values, and jaxlibs other than the one
//!   proven, through `jax.dlpack.from_dlpack`;
//! - CuPy: its `from_dlpack` on a [`DLPackTensor`](crate::DLPackTensor)
//!   ([`Framework::through_from_dlpack`]).

use pyo3::prelude::*;

use super::framework::Framework;
use crate::export::IntoDLPack;

/// A value that a `#[pyfunction]` returns as a framework's own array:
/// zero-copy, the value dropped exactly once when the array is freed.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::Native;
///
/// /// Python: `ramp(4)` is a `numpy.ndarray`, not a DLPack exporter.
/// #[pyfunction]
/// fn ramp(n: usize) -> Native<Vec<f32>> {
///     Native::numpy((0..n).map(|i| i as f32).collect())
/// }
/// # Python::attach(|py| {
/// #     let a = ramp(4).into_pyobject(py).unwrap();
/// #     assert_eq!(a.get_type().name().unwrap().to_str().unwrap(), "ndarray");
/// #     assert_eq!(a.getattr("shape").unwrap().extract::<(usize,)>().unwrap(), (4,));
/// # });
/// ```
///
/// "The same kind as the argument": [`Framework::of`] the argument, and
/// [`Native::new`] with it (a [`DLPackTensor`](crate::DLPackTensor) when it
/// is none of these).
#[derive(Debug)]
pub struct Native<T> {
    value: T,
    framework: Framework,
}

impl<T: IntoDLPack> Native<T> {
    /// `value`, to be returned as a `framework` array.
    pub fn new(value: T, framework: Framework) -> Self {
        Self { value, framework }
    }

    /// `value`, to be returned as a `numpy.ndarray` (host memory only).
    pub fn numpy(value: T) -> Self {
        Self::new(value, Framework::NumPy)
    }

    /// `value`, to be returned as a `torch.Tensor`.
    pub fn torch(value: T) -> Self {
        Self::new(value, Framework::Torch)
    }

    /// `value`, to be returned as a `jax.Array`.
    pub fn jax(value: T) -> Self {
        Self::new(value, Framework::Jax)
    }

    /// `value`, to be returned as a `cupy.ndarray`.
    pub fn cupy(value: T) -> Self {
        Self::new(value, Framework::CuPy)
    }

    /// The array now (what returning it from a `#[pyfunction]` does).
    pub fn into_array(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        to_framework(py, self.value, self.framework)
    }
}

impl<'py, T: IntoDLPack> IntoPyObject<'py> for Native<T> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    #[cfg(feature = "experimental-inspect")]
    const OUTPUT_TYPE: pyo3::inspect::PyStaticExpr = crate::inspect::NATIVE;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.into_array(py)
    }
}

/// `value` as a `framework` array, zero-copy (see [`Native`]). A description
/// that fails is the value's error (`ValueError`); memory a framework cannot
/// hold (a dtype or device it lacks) is a `BufferError` naming the tensor
/// and the framework's reason (its first line: torch appends a C++
/// backtrace).
pub fn to_framework<T: IntoDLPack>(
    py: Python<'_>,
    value: T,
    framework: Framework,
) -> PyResult<Bound<'_, PyAny>> {
    match framework {
        Framework::Torch => super::torch::tensor_of(py, value),
        Framework::NumPy => super::numpy::array_of(py, value),
        Framework::Jax => super::jax::array_of(py, value),
        Framework::CuPy => framework.through_from_dlpack(py, value),
    }
}
