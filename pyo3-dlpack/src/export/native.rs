//! Framework-native results: a Rust value returned to Python as a real
//! `numpy.ndarray`, `torch.Tensor`, `jax.Array` or CuPy array, zero-copy,
//! the value dropped exactly once when the framework frees its array.
//!
//! Each framework through its fastest correct constructor:
//! - torch: its own C exchange table (`managed_tensor_to_py_object_no_sync`
//!   of `torch.Tensor.__dlpack_c_exchange_api__`), no Python call; torch
//!   builds without the table fall back to `torch.from_dlpack`;
//! - NumPy: the NumPy C API ([`numpy_api`](super::numpy_api)), an array over
//!   the memory whose base object owns the value; dtypes NumPy has no type
//!   number for fall back to `numpy.from_dlpack`;
//! - JAX and CuPy: their `from_dlpack` on a [`DLPackTensor`].

use std::cell::Cell;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::export::managed::{call_deleter, drop_owner};
use crate::export::plan::{CapsuleFormat, ExportRequest};
use crate::export::{DLPackTensor, IntoDLPack, managed::write_block, numpy_api};
use crate::ffi::DLManagedTensorVersioned;
use crate::import::exchange::{self, ExchangeApi};
use crate::{DLPackError, TensorInfo};

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
    /// The framework whose array `obj` is, judged by the top-level module of
    /// its type (`numpy`, `torch`, `jax`/`jaxlib`, `cupy`); `None` for
    /// anything else. For "return a result of the same kind as this argument".
    pub fn of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        let module = obj.get_type().module()?;
        // `to_cow`, not `to_str`: the latter is not in the limited API before 3.10.
        let module = module.to_cow()?;
        let top = module.split('.').next().unwrap_or(&module);
        Ok(match top {
            "numpy" => Some(Self::NumPy),
            "torch" => Some(Self::Torch),
            "jax" | "jaxlib" => Some(Self::Jax),
            "cupy" => Some(Self::CuPy),
            _ => None,
        })
    }

    /// The module whose `from_dlpack` makes this framework's arrays.
    fn module(self) -> &'static str {
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
/// hold is a `BufferError`.
pub fn to_framework<T: IntoDLPack>(
    py: Python<'_>,
    value: T,
    framework: Framework,
) -> PyResult<Bound<'_, PyAny>> {
    match framework {
        Framework::Torch => match torch_table(py)? {
            Some(api) => to_torch(py, api, value),
            None => through_from_dlpack(py, value, framework),
        },
        Framework::NumPy => numpy_api::array_of(py, value),
        Framework::Jax | Framework::CuPy => through_from_dlpack(py, value, framework),
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

/// `torch.Tensor`'s exchange table, looked up once (`None`: torch < 2.10).
fn torch_table(py: Python<'_>) -> PyResult<Option<ExchangeApi>> {
    static TENSOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let ty = TENSOR.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("torch")?
            .getattr("Tensor")?
            .cast_into::<PyType>()?
            .unbind())
    })?;
    exchange::lookup_type(ty.bind(py).clone())
}

thread_local! {
    /// The token of the last value handed to torch's table that was dropped
    /// on this thread, and the next token to hand out (see [`Watched`]).
    static DROPPED: Cell<u64> = const { Cell::new(0) };
    static NEXT: Cell<u64> = const { Cell::new(1) };
}

/// The owner of a block handed to torch: tells, on this thread, whether its
/// deleter has run. torch's table takes the block when it succeeds; when it
/// fails, it may have run the deleter (an error after `from_blob`) or not
/// (an error before it): the token says which, so the value is dropped
/// exactly once either way (another value dropped meanwhile, say by a
/// garbage collection inside torch, has another token).
struct Watched<T> {
    _value: T,
    token: u64,
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        DROPPED.set(self.token);
    }
}

/// A versioned block of the value (the plan of `__dlpack__(max_version=(1, 3))`)
/// handed to torch's `managed_tensor_to_py_object_no_sync`.
fn to_torch<T: IntoDLPack>(
    py: Python<'_>,
    api: ExchangeApi,
    value: T,
) -> PyResult<Bound<'_, PyAny>> {
    let token = NEXT.get();
    NEXT.set(token.wrapping_add(1));
    let managed = versioned_block(value, token)?;
    // SAFETY: a live block this function owns and gives to torch.
    match unsafe { api.to_py_object(py, managed) } {
        Ok(tensor) => Ok(tensor),
        Err(err) => {
            if DROPPED.get() != token {
                // SAFETY: torch failed before taking the block (its deleter
                // did not run, see `Watched`): it is still ours, freed once here.
                unsafe { call_deleter(managed) };
            }
            Err(err)
        }
    }
}

/// The value in a versioned managed block (described once, read where
/// `tensor_info` wrote it, as `export_value` does).
fn versioned_block<T: IntoDLPack>(
    value: T,
    token: u64,
) -> Result<std::ptr::NonNull<DLManagedTensorVersioned>, DLPackError> {
    let described = value.tensor_info().map(TensorInfo::detach);
    let info = match described {
        Ok(ref info) => info,
        Err(err) => return Err(err),
    };
    let plan = ExportRequest::of_format(CapsuleFormat::Versioned).plan(info)?;
    if let Some(stream) = plan.sync_stream {
        crate::export::synchronize(&value, info, stream)?;
    }
    Ok(write_block(
        info,
        &plan,
        Watched {
            _value: value,
            token,
        },
    ))
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
