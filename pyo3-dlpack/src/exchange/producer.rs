//! The DLPack C exchange API table of `DLPackTensor` (DLPack 1.3, DLPACK.md
//! §5): `type(x).__dlpack_c_exchange_api__`, a capsule named
//! `dlpack_exchange_api` around a static table, so consumers such as tvm-ffi
//! import our tensors without a Python call.
//!
//! Every function is `extern "C"`, is called attached to the interpreter,
//! catches panics, and reports failure as -1 with a Python exception set
//! (or through `SetError` for the allocator).

use std::ffi::{CStr, CString, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::ExportError;
use crate::export::IntoDLPack;
use crate::export::plan::ExportPlan;
use crate::export::{DLPackTensor, managed_host_tensor, managed_shared, ready_for_exchange};
use crate::ffi::{
    DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackSetError, DLTensor,
};
use crate::foreign::{self, Role};
use crate::{DLPackError, DeviceType, PyTensor, protocol};

/// The table, for the whole process.
struct Table(DLPackExchangeAPI);

// SAFETY: the table is immutable; its only pointer (`prev_api`) is NULL.
unsafe impl Sync for Table {}

static TABLE: Table = Table(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: protocol::VERSION,
        prev_api: ptr::null_mut(),
    },
    managed_tensor_allocator: Some(allocator),
    managed_tensor_from_py_object_no_sync: Some(managed_from_py_object),
    managed_tensor_to_py_object_no_sync: Some(managed_to_py_object),
    dltensor_from_py_object_no_sync: Some(dltensor_from_py_object),
    current_work_stream: Some(current_work_stream),
});

/// The capsule `DLPackTensor.__dlpack_c_exchange_api__` holds.
pub(crate) fn capsule(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    let table = NonNull::from(&TABLE.0).cast::<c_void>();
    // SAFETY: the table is an immutable static that outlives every capsule
    // (DLPack: "the struct must live for the whole process"); consumers only
    // read it; nothing to free, so no destructor.
    unsafe { PyCapsule::new_with_pointer(py, table, DLPACK_EXCHANGE_API) }
}

/// Runs `body`, turning an error into a set Python exception and -1, and a
/// panic into PyO3's `PanicException` with the panic's message.
fn guarded(py: Python<'_>, body: impl FnOnce(Python<'_>) -> PyResult<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(err)) => {
            err.restore(py);
            -1
        }
        Err(payload) => {
            crate::error::panic_error(payload).restore(py);
            -1
        }
    }
}

/// `py_object` as a `DLPackTensor` (or subclass).
///
/// # Safety
///
/// `py_object` is NULL or a live Python object, and the caller is attached.
unsafe fn tensor_of<'py>(
    py: Python<'py>,
    py_object: *mut c_void,
) -> PyResult<Bound<'py, DLPackTensor>> {
    if py_object.is_null() {
        return Err(DLPackError::NotADLPackTensor {
            found: "NULL object".into(),
        }
        .into());
    }
    // SAFETY: non-NULL and live, by the caller's contract.
    let object = unsafe { Bound::from_borrowed_ptr(py, py_object.cast()) };
    object.cast_into::<DLPackTensor>().map_err(|err| {
        let found = err
            .into_inner()
            .get_type()
            .name()
            .map_or_else(|_| "?".into(), |n| n.to_string_lossy().into_owned());
        DLPackError::NotADLPackTensor { found }.into()
    })
}

/// `py_object` as a `DLPackTensor` (or subclass) whose memory is ready for
/// a consumer on the stream this table reports as current (NULL: the
/// device's default stream), with the plan of that export: what both
/// `_no_sync` exports hand over (see [`crate::export::ready_for_exchange`]).
///
/// # Safety
///
/// As for [`tensor_of`].
unsafe fn ordered_tensor_of<'py>(
    py: Python<'py>,
    py_object: *mut c_void,
) -> PyResult<(Bound<'py, DLPackTensor>, ExportPlan)> {
    // SAFETY: the caller's contract.
    let tensor = unsafe { tensor_of(py, py_object) }?;
    let plan = ready_for_exchange(py, tensor.get().described())?;
    Ok((tensor, plan))
}

/// A consumer's out-pointer, or the error a NULL one is (nothing is written
/// or adopted then).
fn out_param<T>(out: *mut T, name: &'static str) -> PyResult<NonNull<T>> {
    NonNull::new(out).ok_or_else(|| DLPackError::from(ExportError::NullOut { name }).into())
}

/// `managed_tensor_from_py_object_no_sync`: an owned versioned tensor of a
/// `DLPackTensor`.
///
/// # Safety
///
/// As the DLPack header requires of callers: attached to the interpreter;
/// `py_object` NULL or a live object; `out` NULL or writable.
unsafe extern "C" fn managed_from_py_object(
    py_object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    // SAFETY: the DLPack exchange API is only called by consumers attached to
    // the interpreter (dlpack.h: the `*_py_object_*` functions "must be
    // called with the GIL held"; they create Python objects and errors).
    let py = unsafe { Python::assume_attached() };
    guarded(py, |py| {
        let out = out_param(out, "out")?;
        // SAFETY: consumers pass NULL or a live object, attached (the contract).
        let (tensor, plan) = unsafe { ordered_tensor_of(py, py_object) }?;
        let managed = managed_shared(tensor.get().described(), &plan);
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(managed.as_ptr()) };
        Ok(())
    })
}

/// `dltensor_from_py_object_no_sync`: a borrowed view of a `DLPackTensor`.
///
/// # Safety
///
/// As for `managed_from_py_object`; `out` NULL or a writable `DLTensor`.
unsafe extern "C" fn dltensor_from_py_object(py_object: *mut c_void, out: *mut DLTensor) -> i32 {
    // SAFETY: the DLPack exchange API is only called by consumers attached to
    // the interpreter (dlpack.h: the `*_py_object_*` functions "must be
    // called with the GIL held"; they create Python objects and errors).
    let py = unsafe { Python::assume_attached() };
    guarded(py, |py| {
        let out = out_param(out, "out")?;
        // SAFETY: as above.
        let (tensor, _) = unsafe { ordered_tensor_of(py, py_object) }?;
        let info = tensor.get().info();
        if !info.writability().allows_legacy_export() {
            // A DLTensor carries no flags: the consumer would think it may
            // write. Unknown writability is handed on, as in a legacy capsule.
            return Err(DLPackError::from(ExportError::ReadOnlyBorrowed).into());
        }
        let (shape, strides) = info.dims_slices();
        let view = DLTensor {
            data: info.data_ptr(),
            device: info.device(),
            ndim: shape.len() as i32,
            dtype: info.dtype(),
            // Into the stored description, alive as long as the object
            // (DLPack: valid until control returns to Python).
            shape: shape.as_ptr().cast_mut(),
            strides: strides.as_ptr().cast_mut(),
            byte_offset: 0,
        };
        // SAFETY: `out` is the consumer's non-NULL, writable DLTensor.
        unsafe { out.write(view) };
        Ok(())
    })
}

/// `managed_tensor_to_py_object_no_sync`: a `DLPackTensor` owning a
/// consumer's versioned tensor.
///
/// # Safety
///
/// Attached; `tensor` NULL or a live versioned tensor the caller gives up
/// on success; `out` NULL or writable.
unsafe extern "C" fn managed_to_py_object(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> i32 {
    // SAFETY: the DLPack exchange API is only called by consumers attached to
    // the interpreter (dlpack.h: the `*_py_object_*` functions "must be
    // called with the GIL held"; they create Python objects and errors).
    let py = unsafe { Python::assume_attached() };
    guarded(py, |py| {
        let out = out_param(out, "out")?;
        let managed =
            NonNull::new(tensor).ok_or_else(|| DLPackError::Export(ExportError::NullTensor))?;
        // SAFETY: the consumer hands over a live versioned tensor; it is
        // checked before it is adopted, so on failure the consumer still owns
        // it (tvm-ffi and torch delete it themselves when this call fails).
        let mut imported = unsafe { PyTensor::adopt_versioned(managed) }?;
        if let Err(err) = imported.tensor_info() {
            let err = PyErr::from(err);
            imported.release();
            return Err(err);
        }
        // Moved into the object: no Rust view of it can be made again.
        imported.unregister();
        // `from_arc`, the shared half of `new` (whose other half is for
        // Rust `bool` buffers): no copy of `new` for `PyTensor`. It cannot
        // fail (described successfully just above); its error is passed on,
        // not dropped here (no copy of the error's drop glue).
        let tensor = DLPackTensor::from_arc(std::sync::Arc::new(imported))?;
        // Only an allocation failure of the Python object itself is left;
        // the tensor is then deleted with the value, and the error reported.
        let object = Bound::new(py, tensor)?;
        // SAFETY: `out` is non-NULL and writable; the new reference goes to the consumer.
        unsafe { out.write(object.into_ptr().cast()) };
        Ok(())
    })
}

/// `managed_tensor_allocator`: a zero-filled CPU tensor like `prototype`.
///
/// # Safety
///
/// `prototype` NULL or a `DLTensor` whose non-NULL shape holds `ndim`
/// extents; `out` NULL or writable; `set_error`, if given, callable with
/// `error_ctx`.
unsafe extern "C" fn allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let out = NonNull::new(out).ok_or_else(|| ExportError::NullOut { name: "out" })?;
        let prototype =
            NonNull::new(prototype).ok_or_else(|| ExportError::NullOut { name: "prototype" })?;
        // SAFETY: a non-NULL prototype from the consumer; only dtype, ndim,
        // shape and device are read, as the header says.
        let managed = allocate(unsafe { prototype.as_ref() })?;
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(managed.as_ptr()) };
        Ok::<_, DLPackError>(())
    }));
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(err)) => {
            // The consumer's `SetError` gets the name of the Python exception
            // the error is everywhere else, and its message.
            let (kind, message) = err.into_report();
            report_message(set_error, error_ctx, kind.name(), &message);
            -1
        }
        Err(_payload) => {
            report_message(
                set_error,
                error_ctx,
                c"BufferError",
                "pyo3-dlpack: a panic in the allocator was caught",
            );
            -1
        }
    }
}

/// A zero-filled CPU tensor shaped like the prototype, after the checks
/// every foreign struct gets (rank, shape, dtype).
fn allocate(prototype: &DLTensor) -> Result<NonNull<DLManagedTensorVersioned>, DLPackError> {
    if prototype.device.device_type != DeviceType::CPU {
        let device = prototype.device;
        return Err(ExportError::AllocationDevice { device }.into());
    }
    let dtype = prototype.dtype;
    allocate_on_host(prototype).map_err(|source| source.in_allocation(dtype))
}

/// [`allocate`] of a CPU prototype: its dtype and shape checked, then the
/// tensor; the error is the check's or the allocation's own (one place
/// wraps it as the allocator's).
fn allocate_on_host(
    prototype: &DLTensor,
) -> Result<NonNull<DLManagedTensorVersioned>, DLPackError> {
    protocol::check_dtype(prototype.dtype)?;
    // SAFETY: a prototype's non-NULL shape holds `ndim` extents (the DLPack header).
    let (shape, _) = unsafe { foreign::shape_of(prototype, Role::Prototype) }?;
    managed_host_tensor(shape, prototype.dtype)
}

/// Hands `message` to the consumer's `SetError` callback, as an exception
/// of type `kind`.
fn report_message(set_error: DLPackSetError, error_ctx: *mut c_void, kind: &CStr, message: &str) {
    let Some(set_error) = set_error else { return };
    // NUL bytes (which would end the C string) as spaces, byte for byte.
    let bytes = message
        .bytes()
        .map(|byte| if byte == 0 { b' ' } else { byte });
    let message = CString::new(bytes.collect::<Vec<u8>>()).unwrap_or_default();
    // SAFETY: the consumer's callback, called once with its context and two
    // NUL-terminated strings that live through the call.
    unsafe { set_error(error_ctx, kind.as_ptr(), message.as_ptr()) };
}

/// `current_work_stream`: NULL, the default stream (Rust buffers have none).
///
/// # Safety
///
/// Attached; `out` NULL or writable.
unsafe extern "C" fn current_work_stream(
    _device_type: i32,
    _device_id: i32,
    out: *mut *mut c_void,
) -> i32 {
    // SAFETY: the DLPack exchange API is only called by consumers attached to
    // the interpreter (dlpack.h: the `*_py_object_*` functions "must be
    // called with the GIL held"; they create Python objects and errors).
    let py = unsafe { Python::assume_attached() };
    guarded(py, |_| {
        let out = out_param(out, "out")?;
        // Rust buffers have no framework stream: NULL, the default (CPU: "may return NULL").
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(ptr::null_mut()) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_the_exchange_api_is_a_panic_exception_with_its_message() {
        Python::attach(|py| {
            assert_eq!(guarded(py, |_| panic!("boom {}", 7)), -1);
            // PyO3 resumes a fetched `PanicException` as a panic with its message.
            let resumed = catch_unwind(AssertUnwindSafe(|| PyErr::take(py)))
                .expect_err("a PanicException is set");
            assert_eq!(
                resumed.downcast_ref::<String>().map(String::as_str),
                Some("boom 7")
            );
            assert_eq!(guarded(py, |_| Ok(())), 0);
            assert!(PyErr::take(py).is_none());
        });
    }
}
