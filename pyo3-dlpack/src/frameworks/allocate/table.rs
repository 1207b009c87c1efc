//! Allocation through a framework's DLPack exchange table (torch ≥ 2.10):
//! its `managed_tensor_allocator` (torch's caching allocator on GPUs), then
//! its `managed_tensor_to_py_object_no_sync`. Types without a table (and
//! builds without the `exchange-api` feature) allocate through the
//! framework's Python constructor instead (see [`super::allocate_like`]).

use std::ffi::{CStr, c_char, c_void};
use std::ptr::{self, NonNull};

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::exchange::{self, ExchangeApi};
use crate::ffi::DLTensor;
use crate::{DLPackError, DataType, Device};

/// A `shape` tensor of `dtype` on `like`'s device, made by the allocator of
/// the exchange table of `like`'s type, as the framework's own object;
/// `None` when the type has no table, or a table without an allocator.
pub(super) fn allocate<'py>(
    like: &Bound<'py, PyAny>,
    shape: &[i64],
    dtype: DataType,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(api) = exchange::lookup(like)?.filter(|api| api.has_allocator()) else {
        return Ok(None);
    };
    let device = device_of(like)?;
    through_table(like.py(), api, shape, dtype, device).map(Some)
}

/// `like.__dlpack_device__()`, validated as an import validates it.
fn device_of(like: &Bound<'_, PyAny>) -> PyResult<Device> {
    crate::import::producer_device(like)?.ok_or_else(|| {
        DLPackError::NotDLPack {
            type_name: crate::python::type_name(like),
        }
        .into()
    })
}

/// What the allocator's `SetError` reported.
#[derive(Default)]
struct Reported {
    kind: Option<String>,
    message: Option<String>,
}

/// The `SetError` callback handed to a producer's allocator: records its
/// exception kind and message (never unwinds: it only copies two strings).
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
        None => PyRuntimeError::new_err(message),
    }
}
