//! Outputs allocated by the caller's framework: a tensor of a given shape
//! and dtype, on an argument's device, made by that argument's framework
//! (torch: its exchange table's `managed_tensor_allocator`, which is its
//! caching allocator on GPUs), returned to Python as the framework's own
//! object and filled from Rust through a writable [`PyTensor`].

#[cfg(feature = "exchange-api")]
mod table;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::framework::Framework;
use crate::error::ExportError;
use crate::{DLPackError, DataType, PyTensor};

/// A tensor a framework allocated: its own object, for Python, and a
/// writable import of it, for Rust to fill. Drop the `tensor` (or let it
/// go out of scope) and return the `object`.
#[derive(Debug)]
pub struct Allocated<'py> {
    /// The framework's tensor (`torch.Tensor`, `numpy.ndarray`, `cupy.ndarray`).
    pub object: Bound<'py, PyAny>,
    /// The same memory, imported: writable, uninitialised (as `torch.empty`).
    pub tensor: PyTensor,
}

/// Allocates a `shape` tensor of `dtype` in `like`'s framework, on `like`'s
/// device: through the framework's DLPack exchange-table allocator when its
/// type has one (torch ≥ 2.10; with the default `exchange-api` feature), else
/// its Python constructor (`numpy.empty`, `torch.empty`, `cupy.empty`). The
/// memory is uninitialised.
///
/// Errors: a `TypeError` for an argument of no supported framework and for
/// JAX (whose arrays are immutable: return a [`Native::jax`](crate::Native::jax)
/// of your own buffer instead); a `BufferError` for a dtype no framework
/// allocates (several lanes, elements narrower than a byte), before any
/// framework sees it; else the framework's own error when it refuses (the
/// exception its allocator names, with the first line of its message).
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{DataType, allocate_like};
///
/// /// Python: `ones_like_rows(x, 3)` is a (3, n) float32 array of ones, of
/// /// x's framework (NumPy in, NumPy out; torch in, torch out) and device.
/// #[pyfunction]
/// fn ones_like_rows<'py>(x: &Bound<'py, PyAny>, rows: i64) -> PyResult<Bound<'py, PyAny>> {
///     let n: i64 = x.getattr("shape")?.get_item(0)?.extract()?;
///     let mut out = allocate_like(x, &[rows, n], DataType::F32)?;
///     out.tensor.as_slice_mut::<f32>()?.fill(1.0);
///     Ok(out.object)
/// }
/// # Python::attach(|py| {
/// #     let x = py.import("numpy").unwrap().call_method1("zeros", (4,)).unwrap();
/// #     let y = ones_like_rows(&x, 3).unwrap();
/// #     assert_eq!(y.getattr("shape").unwrap().extract::<(usize, usize)>().unwrap(), (3, 4));
/// #     assert_eq!(y.call_method0("sum").unwrap().extract::<f64>().unwrap(), 12.0);
/// # });
/// ```
pub fn allocate_like<'py>(
    like: &Bound<'py, PyAny>,
    shape: &[i64],
    dtype: DataType,
) -> PyResult<Allocated<'py>> {
    // Extents non-negative and their product in range: our error, before any
    // framework sees the shape.
    crate::layout::numel(shape)?;
    check_allocatable(like, dtype)?;
    #[cfg(feature = "exchange-api")]
    if let Some(object) = table::allocate(like, shape, dtype)? {
        let tensor = PyTensor::from_pyany(&object)?;
        return Ok(Allocated { object, tensor });
    }
    let object = through_constructor(like, shape, dtype)?;
    let tensor = PyTensor::from_pyany(&object)?;
    Ok(Allocated { object, tensor })
}

/// Refuses, before any framework sees it, a dtype no framework allocates:
/// one the DLPack header does not allow (several lanes, say), or of
/// elements narrower than a byte (a `BufferError` naming it).
fn check_allocatable(like: &Bound<'_, PyAny>, dtype: DataType) -> PyResult<()> {
    let reason = match crate::protocol::check_dtype(dtype) {
        // Multi-lane dtypes among them.
        Err(err) => err.to_string(),
        Ok(()) if dtype.bits % 8 != 0 => {
            "no framework allocates elements narrower than a byte".to_owned()
        }
        Ok(()) => return Ok(()),
    };
    Err(DLPackError::from(ExportError::FrameworkRefused {
        array: crate::python::qualified_type_name(like),
        dtype,
        device: None,
        reason,
    })
    .into())
}

/// `numpy.empty`, `torch.empty` or `cupy.empty` of `like`'s framework.
fn through_constructor<'py>(
    like: &Bound<'py, PyAny>,
    shape: &[i64],
    dtype: DataType,
) -> PyResult<Bound<'py, PyAny>> {
    let py = like.py();
    let framework = Framework::of(like)?;
    let name = dtype.to_string();
    let kwargs = PyDict::new(py);
    let module = match framework {
        Some(Framework::NumPy) => {
            kwargs.set_item("dtype", &name)?;
            Framework::NumPy.import(py)?
        }
        Some(Framework::Torch) => {
            let torch = Framework::Torch.import(py)?;
            kwargs.set_item("dtype", torch.getattr(name.as_str())?)?;
            kwargs.set_item("device", like.getattr("device")?)?;
            torch
        }
        Some(Framework::CuPy) => {
            kwargs.set_item("dtype", &name)?;
            let cupy = Framework::CuPy.import(py)?;
            let device = like.getattr("device")?;
            device.call_method0("__enter__")?;
            let made = cupy.call_method("empty", (shape.to_vec(),), Some(&kwargs));
            device.call_method1("__exit__", (py.None(), py.None(), py.None()))?;
            return made;
        }
        Some(Framework::Jax) => {
            return Err(PyTypeError::new_err(
                "cannot write the result into an array like a jax.Array: JAX arrays are \
                 immutable; pass a numpy.ndarray, torch.Tensor or cupy.ndarray instead",
            ));
        }
        None => {
            return Err(PyTypeError::new_err(format!(
                "cannot allocate like a {}: expected a numpy.ndarray, torch.Tensor or cupy.ndarray",
                like.get_type().name()?
            )));
        }
    };
    module.call_method("empty", (shape.to_vec(),), Some(&kwargs))
}
