//! Outputs allocated by the caller's framework: a tensor of a given shape
//! and dtype, on an argument's device, made by that argument's framework
//! (torch: its exchange table's `managed_tensor_allocator`, which is its
//! caching allocator on GPUs), returned to Python as the framework's own
//! object and filled from Rust through a writable [`PyTensor`].

#[cfg(feature = "exchange-api")]
use std::ffi::{CStr, c_char, c_void};
#[cfg(feature = "exchange-api")]
use std::ptr::{self, NonNull};

#[cfg(feature = "exchange-api")]
use pyo3::exceptions::PyException;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
#[cfg(feature = "exchange-api")]
use pyo3::types::PyType;

use super::framework::Framework;
#[cfg(feature = "exchange-api")]
use crate::Device;
use crate::error::ExportError;
use crate::error::PythonKind;
#[cfg(feature = "exchange-api")]
use crate::exchange::{self, ExchangeApi};
#[cfg(feature = "exchange-api")]
use crate::ffi::DLTensor;
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
    if let Some(api) = exchange::lookup(like)?.filter(|api| api.has_allocator()) {
        let device = device_of(like)?;
        let object = through_table(like.py(), api, shape, dtype, device)?;
        let tensor = PyTensor::from_pyany(&object)?;
        return Ok(Allocated { object, tensor });
    }
    let object = through_constructor(like, shape, dtype)?;
    let tensor = PyTensor::from_pyany(&object)?;
    Ok(Allocated { object, tensor })
}

/// `like.__dlpack_device__()`, validated as an import validates it.
#[cfg(feature = "exchange-api")]
fn device_of(like: &Bound<'_, PyAny>) -> PyResult<Device> {
    crate::import::producer_device(like)?.ok_or_else(|| {
        DLPackError::NotDLPack {
            type_name: crate::python::type_name(like),
        }
        .into()
    })
}

/// Refuses, before any framework sees it, a dtype no framework allocates:
/// one the DLPack header does not allow (several lanes, say), or of
/// elements narrower than a byte (a `BufferError` naming it).
fn check_allocatable(like: &Bound<'_, PyAny>, dtype: DataType) -> PyResult<()> {
    let reason = match crate::protocol::check_dtype(dtype) {
        // Multi-lane dtypes among them.
        Err(err) => format!("{err}"),
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

/// What the allocator's `SetError` reported.
#[cfg(feature = "exchange-api")]
#[derive(Default)]
struct Reported {
    kind: Option<String>,
    message: Option<String>,
}

/// The `SetError` callback handed to a producer's allocator: records its
/// exception kind and message (never unwinds: it only copies two strings).
#[cfg(feature = "exchange-api")]
unsafe extern "C" fn record_error(ctx: *mut c_void, kind: *const c_char, message: *const c_char) {
    let Some(mut reported) = NonNull::new(ctx.cast::<Reported>()) else {
        return;
    };
    let read = |s: *const c_char| {
        if s.is_null() {
            return None;
        }
        // SAFETY: the producer passes NUL-terminated strings that live
        // through this call (the allocator's contract); NULL is handled above.
        let text = unsafe { CStr::from_ptr(s) };
        Some(text.to_string_lossy().into_owned())
    };
    // SAFETY: `ctx` is the `Reported` that `through_table` passed, alive and
    // not otherwise borrowed during the allocator call.
    let reported = unsafe { reported.as_mut() };
    reported.kind = read(kind);
    reported.message = read(message);
}

/// The framework's allocator, then its `managed_tensor_to_py_object_no_sync`.
#[cfg(feature = "exchange-api")]
fn through_table<'py>(
    py: Python<'py>,
    api: ExchangeApi,
    shape: &[i64],
    dtype: DataType,
    device: Device,
) -> PyResult<Bound<'py, PyAny>> {
    let ndim = i32::try_from(shape.len()).map_err(|_| {
        DLPackError::from(crate::error::LayoutError::TooManyDims {
            ndim: shape.len(),
            max: crate::MAX_NDIM,
        })
    })?;
    let mut prototype = DLTensor {
        data: ptr::null_mut(),
        device,
        ndim,
        dtype,
        // Read only (the header: the allocator reads dtype, ndim, shape and device).
        shape: shape.as_ptr().cast_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let mut reported = Reported::default();
    let ctx = ptr::from_mut(&mut reported).cast::<c_void>();
    // SAFETY: attached; the prototype and `reported` outlive the call.
    let managed = unsafe { api.allocate(&mut prototype, ctx, Some(record_error)) };
    let Some(managed) = managed else {
        return Err(reported_error(py, reported));
    };
    // SAFETY: the allocator's fresh struct, ours to give. If torch fails to
    // wrap its own allocation, whether it freed the struct cannot be told
    // (it is not ours to watch), so it is left rather than freed twice.
    unsafe { api.to_py_object(py, managed) }
}

/// The exception the allocator reported (`RuntimeError` when it named no
/// builtin exception, or reported nothing).
#[cfg(feature = "exchange-api")]
fn reported_error(py: Python<'_>, reported: Reported) -> PyErr {
    if let Some(err) = PyErr::take(py) {
        return err;
    }
    // The first line only: torch appends a C++ backtrace.
    let message = reported.message.map_or_else(
        || "the framework's allocator failed without a message".into(),
        |message| message.lines().next().unwrap_or_default().trim().to_owned(),
    );
    let kind = reported.kind.and_then(|kind| {
        let builtin = py.import("builtins").ok()?.getattr(kind.as_str()).ok()?;
        let kind = builtin.cast_into::<PyType>().ok()?;
        kind.is_subclass_of::<PyException>()
            .unwrap_or(false)
            .then_some(kind)
    });
    match kind {
        Some(kind) => PyErr::from_type(kind, message),
        None => PythonKind::Runtime.new_err(message),
    }
}

/// `numpy.empty`, `torch.empty` or `cupy.empty` of `like`'s framework.
fn through_constructor<'py>(
    like: &Bound<'py, PyAny>,
    shape: &[i64],
    dtype: DataType,
) -> PyResult<Bound<'py, PyAny>> {
    let py = like.py();
    let framework = Framework::of(like)?;
    let name = format!("{dtype}");
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
            return Err(PythonKind::Type.new_err(format!(
                "cannot allocate like a {}: expected a numpy.ndarray, torch.Tensor or cupy.ndarray",
                like.get_type().name()?
            )));
        }
    };
    module.call_method("empty", (shape.to_vec(),), Some(&kwargs))
}
