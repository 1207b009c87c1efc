//! `DLPackTensor` as a buffer-protocol exporter: `memoryview(t)`,
//! `bytes(t)`, `np.asarray(t)`, `array.array` and PIL read host tensors
//! without a copy. The view holds a reference to the `DLPackTensor` (so the
//! value lives while any view does); its shape and strides live in an
//! allocation of the view's own, freed when the view is released.

use std::ffi::{CStr, c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::error::PythonKind;
use crate::export::info::TensorInfo;
use crate::layout;
use crate::{DataType, DataTypeCode, Writability};

/// The struct format of a dtype, if the buffer protocol has one. Matched
/// on the code, then the bits (a switch on each), not on each whole dtype
/// in turn.
fn format(dtype: DataType) -> Option<&'static CStr> {
    if dtype.lanes != 1 {
        return None;
    }
    Some(match (dtype.code, dtype.bits) {
        (DataTypeCode::BOOL, 8) => c"?",
        (DataTypeCode::INT, 8) => c"b",
        (DataTypeCode::UINT, 8) => c"B",
        (DataTypeCode::INT, 16) => c"h",
        (DataTypeCode::UINT, 16) => c"H",
        (DataTypeCode::INT, 32) => c"i",
        (DataTypeCode::UINT, 32) => c"I",
        (DataTypeCode::INT, 64) => c"q",
        (DataTypeCode::UINT, 64) => c"Q",
        (DataTypeCode::FLOAT, 16) => c"e",
        (DataTypeCode::FLOAT, 32) => c"f",
        (DataTypeCode::FLOAT, 64) => c"d",
        (DataTypeCode::COMPLEX, 64) => c"Zf",
        (DataTypeCode::COMPLEX, 128) => c"Zd",
        _ => return None,
    })
}

/// The `BufferError` of a refused request. Out of line, taking a fixed
/// message as it is: one copy of its allocation, not one at each place
/// that refuses.
#[cold]
#[inline(never)]
fn refuse(message: impl Into<String>) -> PyErr {
    PythonKind::Buffer.new_err(message.into())
}

/// Fills `view` for a consumer's `flags` from the tensor `info` describes,
/// `owner` (the `DLPackTensor`) becoming the view's object.
///
/// # Safety
///
/// `view` points to a `Py_buffer` the caller owns, and `info` describes
/// memory `owner` keeps alive and unchanged in size while it lives.
pub(crate) unsafe fn fill(
    view: *mut ffi::Py_buffer,
    flags: c_int,
    info: &TensorInfo<'_>,
    owner: Bound<'_, PyAny>,
) -> PyResult<()> {
    if view.is_null() {
        return Err(refuse("the buffer view is NULL"));
    }
    let device = info.device();
    if !device.is_host_accessible() {
        return Err(refuse(format!(
            "expected a tensor in host memory for the buffer protocol, got one on {device}"
        )));
    }
    if !info.is_bounds_checked() {
        return Err(refuse(
            "the buffer protocol cannot expose this tensor: the length of its memory is \
             unknown (raw memory exported without one)",
        ));
    }
    crate::cuda::host::make_host_readable(owner.py(), device, info.stream())?;
    let dtype = info.dtype();
    let Some(format) = format(dtype) else {
        return Err(refuse(format!(
            "{} tensor has no buffer-protocol format: expected bool, int8 to int64, \
             uint8 to uint64, float16, float32, float64, complex64 or complex128",
            crate::error::WithArticle(&dtype)
        )));
    };
    let writable = info.writability() == Writability::Writable;
    check_request(flags, info, writable)?;
    let (shape, strides) = info.dims_slices();
    let itemsize = dtype.itemsize();
    let ndim = shape.len();
    // The view's own allocation, freed on release: its length, then the
    // shape, then the strides in bytes (the length, as `ndim` may be 1
    // for a consumer that asked for no shape).
    // Plain pushes, not a chain of iterators collected (their adapters are
    // compiled for this one use).
    let mut block = Vec::with_capacity(1 + 2 * ndim);
    block.push((1 + 2 * ndim) as ffi::Py_ssize_t);
    for &n in shape {
        block.push(n as ffi::Py_ssize_t);
    }
    for &s in strides {
        block.push(layout::byte_stride(s, itemsize));
    }
    let block = block.into_boxed_slice();
    let block = Box::into_raw(block).cast::<ffi::Py_ssize_t>();
    let dims = block.wrapping_add(1);
    let format = if requested(flags, ffi::PyBUF_FORMAT) {
        format.as_ptr().cast_mut()
    } else {
        std::ptr::null_mut()
    };
    // Without `PyBUF_ND` the consumer sees `len` unsigned bytes: one
    // dimension, no shape (as `memoryview` gives them).
    let (shape, ndim_seen) = if requested(flags, ffi::PyBUF_ND) {
        (dims, ndim)
    } else {
        (std::ptr::null_mut(), 1)
    };
    let strides = if requested(flags, ffi::PyBUF_STRIDES) {
        dims.wrapping_add(ndim)
    } else {
        std::ptr::null_mut()
    };
    let filled = ffi::Py_buffer {
        buf: info.data_ptr(),
        obj: owner.into_ptr(),
        len: (info.numel() * itemsize) as ffi::Py_ssize_t,
        itemsize: itemsize as ffi::Py_ssize_t,
        readonly: c_int::from(!writable),
        ndim: ndim_seen as c_int,
        format,
        shape,
        strides,
        suboffsets: std::ptr::null_mut(),
        internal: block.cast::<c_void>(),
    };
    // SAFETY: the caller's `view`, written whole. `block` holds its length
    // and `2 * ndim` entries until `release` frees it; `format` is static; the memory
    // lives while `owner` does, whose reference the view now holds.
    unsafe { view.write(filled) };
    Ok(())
}

/// Whether every bit of `request` (one of the `PyBUF_*` requests, some of
/// which include others) is in `flags`.
fn requested(flags: c_int, request: c_int) -> bool {
    flags & request == request
}

/// Refuses a request the tensor cannot honour, as `memoryview` refuses it
/// (CPython's `memory_getbuf`), so that a consumer reading `len` bytes from
/// `buf`, or walking the shape without strides, stays inside the value:
/// writes to a read-only tensor; C, Fortran or any contiguity the layout
/// lacks; no strides for a layout that is not C-contiguous; a format
/// without a shape.
fn check_request(flags: c_int, info: &TensorInfo<'_>, writable: bool) -> PyResult<()> {
    if requested(flags, ffi::PyBUF_WRITABLE) && !writable {
        return Err(refuse(
            "expected a writable buffer request on a writable tensor, got one on a read-only \
             tensor",
        ));
    }
    let (shape, strides) = info.dims_slices();
    let c_order = layout::is_contiguous(shape, strides);
    let f_order = layout::is_column_major(shape, strides);
    let refused = |wanted: &str, request: &str| {
        refuse(format!(
            "expected a {wanted} tensor for a {request} buffer request, got shape {shape:?} \
             with strides {strides:?} (in elements)"
        ))
    };
    if requested(flags, ffi::PyBUF_C_CONTIGUOUS) && !c_order {
        return Err(refused("C-contiguous", "PyBUF_C_CONTIGUOUS"));
    }
    if requested(flags, ffi::PyBUF_F_CONTIGUOUS) && !f_order {
        return Err(refused("Fortran-contiguous", "PyBUF_F_CONTIGUOUS"));
    }
    if requested(flags, ffi::PyBUF_ANY_CONTIGUOUS) && !(c_order || f_order) {
        return Err(refused("C- or Fortran-contiguous", "PyBUF_ANY_CONTIGUOUS"));
    }
    if !requested(flags, ffi::PyBUF_STRIDES) && !c_order {
        return Err(refused("C-contiguous", "strides-free"));
    }
    if !requested(flags, ffi::PyBUF_ND) && requested(flags, ffi::PyBUF_FORMAT) {
        return Err(refuse(
            "expected PyBUF_ND with PyBUF_FORMAT: a buffer without a shape is read as unsigned \
             bytes, which a format would contradict",
        ));
    }
    Ok(())
}

/// Frees what `fill` allocated for `view` (the view's object is released by
/// Python itself).
///
/// # Safety
///
/// `view` was filled by `fill` and is released once, now.
pub(crate) unsafe fn release(view: *mut ffi::Py_buffer) {
    // SAFETY: the caller's promise: a view `fill` filled, ours to release.
    let view = unsafe { &mut *view };
    let block = view.internal.cast::<ffi::Py_ssize_t>();
    if block.is_null() {
        return;
    }
    view.internal = std::ptr::null_mut();
    // SAFETY: `fill` wrote the block's length first.
    let len = usize::try_from(unsafe { *block }).unwrap_or(0);
    // SAFETY: the boxed slice of `len` entries `fill` leaked, freed once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(block, len)) });
}
