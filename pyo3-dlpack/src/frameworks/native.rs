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
//! - JAX and CuPy: their `from_dlpack` on a [`DLPackTensor`].

use pyo3::prelude::*;

use crate::export::managed::drop_owner;
use crate::export::{DLPackTensor, IntoDLPack};

/// An array framework a result can be returned in.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::Framework;
///
/// # Python::attach(|py| -> PyResult<()> {
/// let np = py.import("numpy")?;
/// let a = np.call_method1("zeros", (3,))?;
/// assert_eq!(Framework::of(&a)?, Some(Framework::NumPy));
/// assert_eq!(Framework::of(3i32.into_pyobject(py)?.as_any())?, None);
/// # Ok(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Framework {
    /// `numpy.ndarray` (host memory only).
    NumPy,
    /// `torch.Tensor`.
    Torch,
    /// `jax.Array`.
    Jax,
    /// `cupy.ndarray`.
    CuPy,
}

impl Framework {
    /// The framework whose array `obj` is; `None` for anything else. For
    /// "return a result of the same kind as this argument".
    ///
    /// NumPy and torch are recognised by identity: an instance (subclasses
    /// included) of NumPy's array type or of `torch.Tensor`, never by a
    /// name a class can take. JAX and CuPy arrays, which this crate
    /// handles through their public `from_dlpack` only, by the top-level
    /// module of their type (`jax`/`jaxlib`, `cupy`). A type whose
    /// `__module__` is missing or not a string is none of these.
    pub fn of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        if super::numpy::is_ndarray(obj) {
            return Ok(Some(Self::NumPy));
        }
        if let Some(tensor) = super::torch::tensor_type(obj.py()) {
            // The object's own type, not `isinstance` (which a `__class__`
            // property can answer).
            // SAFETY: attached; `obj` and the type are live.
            if unsafe { pyo3::ffi::PyObject_TypeCheck(obj.as_ptr(), tensor.as_type_ptr()) } != 0 {
                return Ok(Some(Self::Torch));
            }
        }
        let Ok(module) = obj.get_type().module() else {
            return Ok(None);
        };
        // `to_cow`, not `to_str`: the latter is not in the limited API before 3.10.
        let Ok(module) = module.to_cow() else {
            return Ok(None);
        };
        let top = module.split('.').next().unwrap_or(&module);
        Ok(match top {
            "jax" | "jaxlib" => Some(Self::Jax),
            "cupy" => Some(Self::CuPy),
            _ => None,
        })
    }

    /// The module whose `from_dlpack` makes this framework's arrays.
    pub(crate) fn module(self) -> &'static str {
        match self {
            Self::NumPy => "numpy",
            Self::Torch => "torch",
            Self::Jax => "jax.numpy",
            Self::CuPy => "cupy",
        }
    }
}

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
/// [`Native::new`] with it (a [`DLPackTensor`] when it is none of these).
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
        Framework::CuPy => through_from_dlpack(py, value, framework),
    }
}

/// The framework's `from_dlpack` on a `DLPackTensor` of the value.
pub(crate) fn through_from_dlpack<T: IntoDLPack>(
    py: Python<'_>,
    value: T,
    framework: Framework,
) -> PyResult<Bound<'_, PyAny>> {
    let tensor = DLPackTensor::new(value)?;
    py.import(framework.module())?
        .call_method1(pyo3::intern!(py, "from_dlpack"), (tensor,))
}

/// Drops a value without letting a panic escape (a base object's destructor
/// runs from C).
pub(crate) struct CatchDrop<T>(pub(crate) Option<T>);

impl<T> Drop for CatchDrop<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_owner(value);
        }
    }
}
