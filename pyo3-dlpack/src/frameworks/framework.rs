//! [`Framework`]: which array framework an object belongs to (NumPy and
//! torch by type identity, from their homes), and the module whose public
//! `from_dlpack` makes its arrays.

use pyo3::prelude::*;

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
    /// included) of NumPy's array type, of its scalars' base `numpy.generic`
    /// (`np.float64(1.0)`, which NumPy's functions return) or of
    /// `torch.Tensor`, never by a
    /// name a class can take. JAX and CuPy arrays, which this crate
    /// handles through their public `from_dlpack` only, by the top-level
    /// module of their type (`jax`/`jaxlib`, `cupy`). A type whose
    /// `__module__` is missing or not a string is none of these.
    pub fn of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        if super::numpy::is_ndarray(obj) || super::numpy::is_scalar(obj) {
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
            Self::Torch => super::torch::MODULE,
            // `jax.numpy.from_dlpack` only calls this one.
            Self::Jax => "jax.dlpack",
            Self::CuPy => "cupy",
        }
    }

    /// [`module`](Self::module), imported once and kept: `py.import` costs
    /// about half a microsecond even for a module already imported. Its
    /// attributes are read at each use (a patched `from_dlpack` is seen).
    pub(crate) fn import(self, py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
        static MODULES: [crate::once::Cell<Py<PyModule>>; 4] =
            [const { crate::once::Cell::new() }; 4];
        let index = match self {
            Self::NumPy => 0,
            Self::Torch => 1,
            Self::Jax => 2,
            Self::CuPy => 3,
        };
        let module = MODULES[index]
            .get_or_try_init(py, || Ok::<_, PyErr>(py.import(self.module())?.unbind()))?;
        Ok(module.bind(py).clone())
    }

    /// The framework's public `from_dlpack` on a [`DLPackTensor`] of the
    /// value: the route of frameworks without a faster one (JAX, CuPy).
    pub(crate) fn through_from_dlpack<T: IntoDLPack>(
        self,
        py: Python<'_>,
        value: T,
    ) -> PyResult<Bound<'_, PyAny>> {
        self.call_from_dlpack(py, DLPackTensor::new(value)?)
    }

    /// The framework's public `from_dlpack` on `tensor`.
    pub(crate) fn call_from_dlpack(
        self,
        py: Python<'_>,
        tensor: DLPackTensor,
    ) -> PyResult<Bound<'_, PyAny>> {
        // The tensor as a plain object first: the call's one argument is then
        // of the type other calls pass (one instance of the generic call).
        let tensor = Bound::new(py, tensor)?.into_any();
        self.import(py)?
            .getattr(pyo3::intern!(py, "from_dlpack"))?
            .call1((&tensor,))
    }
}
