//! The DLPack C exchange API table of `DLPackTensor` (DLPack 1.3, DLPACK.md
//! §5): `type(x).__dlpack_c_exchange_api__`, a capsule named
//! `dlpack_exchange_api` around a static table, so consumers such as tvm-ffi
//! import our tensors without a Python call.
//!
//! Every function is `extern "C"`, is called attached to the interpreter,
//! catches panics, and reports failure as -1 with a Python exception set
//! (or through `SetError` for the allocator).

use std::ffi::{CString, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi as pyffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::export::IntoDLPack;
use crate::export::template::Description;
use crate::export::{DLPackTensor, managed_host_tensor, managed_versioned};
use crate::ffi::{
    DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackSetError, DLPackVersion, DLTensor,
};
use crate::{DeviceType, PyTensor};

/// The table, for the whole process.
struct Table(DLPackExchangeAPI);

// SAFETY: the table is immutable; its only pointer (`prev_api`) is NULL.
unsafe impl Sync for Table {}

static TABLE: Table = Table(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: DLPackVersion::CURRENT,
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
    let table = ptr::addr_of!(TABLE.0).cast_mut().cast::<c_void>();
    // SAFETY: attached; the table is a static that outlives every capsule;
    // the name is a `&'static CStr`; no destructor (nothing to free).
    let capsule = unsafe { pyffi::PyCapsule_New(table, DLPACK_EXCHANGE_API.as_ptr(), None) };
    // SAFETY: a new reference, or NULL with an exception set.
    let capsule = unsafe { Bound::from_owned_ptr_or_err(py, capsule) }?;
    // SAFETY: `PyCapsule_New` made a capsule.
    Ok(unsafe { capsule.cast_into_unchecked() })
}

/// Runs `body` attached (the exchange API is called with the interpreter
/// attached), turning an error into a set Python exception and -1, and a
/// panic into a `BufferError`.
fn guarded(body: impl FnOnce(Python<'_>) -> PyResult<()>) -> i32 {
    // SAFETY: PyGILState_Check may be called on any thread.
    let attached = unsafe { pyffi::PyGILState_Check() } == 1;
    debug_assert!(
        attached,
        "the DLPack exchange API was called detached from the interpreter"
    );
    // SAFETY: the DLPack exchange API is only called by consumers attached to
    // the interpreter (its functions create Python objects and errors).
    let py = unsafe { Python::assume_attached() };
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(err)) => {
            err.restore(py);
            -1
        }
        Err(_) => {
            PyBufferError::new_err("pyo3-dlpack: a panic in the exchange API was caught")
                .restore(py);
            -1
        }
    }
}

/// `py_object` as a `DLPackTensor` (or subclass).
///
/// # Safety
///
/// `py_object` is a live Python object and the caller is attached.
unsafe fn tensor_of<'py>(
    py: Python<'py>,
    py_object: *mut c_void,
) -> PyResult<Bound<'py, DLPackTensor>> {
    // SAFETY: the caller's contract.
    let object = unsafe { Bound::from_borrowed_ptr(py, py_object.cast()) };
    object.cast_into::<DLPackTensor>().map_err(|err| {
        PyTypeError::new_err(format!(
            "the DLPackTensor exchange API got a {}",
            err.into_inner()
                .get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })
}

unsafe extern "C" fn managed_from_py_object(
    py_object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    guarded(|py| {
        // SAFETY: consumers pass an instance of the type this table was found on.
        let tensor = unsafe { tensor_of(py, py_object) }?;
        let (value, template) = tensor.get().parts();
        let managed = managed_versioned(value, template)?;
        // SAFETY: `out` is the consumer's writable out-parameter.
        unsafe { out.write(managed.as_ptr()) };
        Ok(())
    })
}

unsafe extern "C" fn dltensor_from_py_object(py_object: *mut c_void, out: *mut DLTensor) -> i32 {
    guarded(|py| {
        // SAFETY: as above.
        let tensor = unsafe { tensor_of(py, py_object) }?;
        let (_, template) = tensor.get().parts();
        if template.is_read_only() {
            // A DLTensor carries no flags: the consumer would think it may write.
            return Err(PyBufferError::new_err(
                "the tensor is read-only, which a borrowed DLTensor cannot say; \
                 use managed_tensor_from_py_object_no_sync",
            ));
        }
        let (shape, strides) = (template.shape(), template.strides());
        let view = DLTensor {
            data: template.data_ptr(),
            device: template.device(),
            ndim: shape.len() as i32,
            dtype: template.dtype(),
            // Into the template, alive as long as the object (DLPack: valid
            // until control returns to Python).
            shape: shape.as_ptr().cast_mut(),
            strides: strides.as_ptr().cast_mut(),
            byte_offset: 0,
        };
        // SAFETY: `out` is the consumer's writable DLTensor.
        unsafe { out.write(view) };
        Ok(())
    })
}

unsafe extern "C" fn managed_to_py_object(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> i32 {
    guarded(|py| {
        let managed = ptr::NonNull::new(tensor)
            .ok_or_else(|| PyBufferError::new_err("a NULL managed tensor"))?;
        // SAFETY: the consumer hands over a live versioned tensor; it is
        // checked before it is adopted, so on failure the consumer still owns
        // it (tvm-ffi and torch delete it themselves when this call fails).
        let mut imported = unsafe { PyTensor::adopt_versioned(managed) }?;
        if let Err(err) = imported.tensor_info() {
            imported.release();
            return Err(err.into());
        }
        // Moved into the object: no Rust view of it can be made again.
        imported.unregister();
        let tensor = DLPackTensor::new(imported).expect("described successfully just above");
        // Only an allocation failure of the Python object itself is left;
        // the tensor is then deleted with the value, and the error reported.
        let object = Bound::new(py, tensor)?;
        // SAFETY: `out` is writable; the new reference goes to the consumer.
        unsafe { out.write(object.into_ptr().cast()) };
        Ok(())
    })
}

unsafe extern "C" fn allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if prototype.is_null() {
            return Err("a NULL prototype".to_string());
        }
        // SAFETY: a non-NULL prototype from the consumer; only dtype, ndim,
        // shape and device are used, as the header says.
        let prototype = unsafe { &*prototype };
        prototype_shape(prototype).and_then(|shape| {
            managed_host_tensor(shape, prototype.dtype).map_err(|e| e.to_string())
        })
    }));
    match result {
        Ok(Ok(managed)) => {
            // SAFETY: `out` is the consumer's writable out-parameter.
            unsafe { out.write(managed.as_ptr()) };
            0
        }
        Ok(Err(message)) => {
            report(set_error, error_ctx, &message);
            -1
        }
        Err(_) => {
            report(
                set_error,
                error_ctx,
                "pyo3-dlpack: a panic in the allocator was caught",
            );
            -1
        }
    }
}

/// The prototype's extents, after checking what the allocator relies on:
/// a CPU device, a dtype it can store, a sane rank, a non-NULL shape.
fn prototype_shape(prototype: &DLTensor) -> Result<&[i64], String> {
    if prototype.device.device_type != DeviceType::CPU {
        return Err(format!(
            "DLPackTensor allocates CPU tensors only, not {}",
            prototype.device
        ));
    }
    let dtype = prototype.dtype;
    if !dtype.code.is_known() || dtype.bits == 0 || dtype.lanes != 1 {
        return Err(format!("cannot allocate a tensor of {dtype}"));
    }
    let ndim = usize::try_from(prototype.ndim)
        .ok()
        .filter(|&n| n <= crate::MAX_NDIM)
        .ok_or_else(|| format!("ndim {} is outside 0..={}", prototype.ndim, crate::MAX_NDIM))?;
    if ndim == 0 {
        return Ok(&[]);
    }
    if prototype.shape.is_null() {
        return Err(format!(
            "a prototype of {ndim} dimensions with a NULL shape"
        ));
    }
    // SAFETY: a prototype's non-NULL shape holds `ndim` extents (DLPack header).
    let shape = unsafe { std::slice::from_raw_parts(prototype.shape, ndim) };
    if let Some(negative) = shape.iter().find(|&&d| d < 0) {
        return Err(format!("shape {shape:?} has a negative extent {negative}"));
    }
    Ok(shape)
}

fn report(set_error: DLPackSetError, error_ctx: *mut c_void, message: &str) {
    let Some(set_error) = set_error else { return };
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the consumer's callback, called once with its context and two
    // NUL-terminated strings that live through the call.
    unsafe { set_error(error_ctx, c"BufferError".as_ptr(), message.as_ptr()) };
}

unsafe extern "C" fn current_work_stream(
    _device_type: i32,
    _device_id: i32,
    out: *mut *mut c_void,
) -> i32 {
    // Rust buffers have no framework stream: NULL, the default (CPU: "may return NULL").
    // SAFETY: `out` is the consumer's writable out-parameter.
    unsafe { out.write(ptr::null_mut()) };
    0
}
