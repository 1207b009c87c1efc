//! `DLPackTensor` as a buffer-protocol exporter: `memoryview(t)`,
//! `bytes(t)`, `np.asarray(t)`, `array.array` and PIL read host tensors
//! without a copy. The view holds a reference to the `DLPackTensor` (so the
//! value lives while any view does); its shape and strides live in an
//! allocation of the view's own, freed when the view is released.

use std::ffi::{CStr, c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::export::info::TensorInfo;
use crate::{DataType, Writability};

/// The struct format of a dtype, if the buffer protocol has one.
fn format(dtype: DataType) -> Option<&'static CStr> {
    Some(match dtype {
        DataType::BOOL => c"?",
        DataType::I8 => c"b",
        DataType::U8 => c"B",
        DataType::I16 => c"h",
        DataType::U16 => c"H",
        DataType::I32 => c"i",
        DataType::U32 => c"I",
        DataType::I64 => c"q",
        DataType::U64 => c"Q",
        DataType::F16 => c"e",
        DataType::F32 => c"f",
        DataType::F64 => c"d",
        DataType::C64 => c"Zf",
        DataType::C128 => c"Zd",
        _ => return None,
    })
}

fn refuse(message: String) -> PyErr {
    PyBufferError::new_err(message)
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
        return Err(refuse("the buffer view is NULL".to_owned()));
    }
    let device = info.device();
    if !device.is_host_accessible() {
        return Err(refuse(format!(
            "expected a tensor in host memory for the buffer protocol, got one on {device}"
        )));
    }
    let dtype = info.dtype();
    let Some(format) = format(dtype) else {
        return Err(refuse(format!(
            "a {dtype} tensor has no buffer-protocol format: expected bool, int8 to int64, \
             uint8 to uint64, float16, float32, float64, complex64 or complex128"
        )));
    };
    let writable = info.writability() == Writability::Writable;
    if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE && !writable {
        return Err(refuse(
            "expected a writable buffer request on a writable tensor, got one on a read-only \
             tensor"
                .to_owned(),
        ));
    }
    let (shape, strides) = info.dims_slices();
    let contiguous = info.is_contiguous();
    if flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES && !contiguous {
        return Err(refuse(format!(
            "the tensor is not C-contiguous (strides {strides:?}): expected a consumer that \
             accepts strides"
        )));
    }
    let itemsize = dtype.itemsize();
    // Shape, then strides in bytes: the view's own, freed on release.
    let dims: Box<[ffi::Py_ssize_t]> = shape
        .iter()
        .map(|&n| n as ffi::Py_ssize_t)
        .chain(
            strides
                .iter()
                .map(|&s| (s * itemsize as i64) as ffi::Py_ssize_t),
        )
        .collect();
    let ndim = shape.len();
    let dims = Box::into_raw(dims).cast::<ffi::Py_ssize_t>();
    let format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
        format.as_ptr().cast_mut()
    } else {
        std::ptr::null_mut()
    };
    let shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
        dims
    } else {
        std::ptr::null_mut()
    };
    let strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
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
        ndim: ndim as c_int,
        format,
        shape,
        strides,
        suboffsets: std::ptr::null_mut(),
        internal: dims.cast::<c_void>(),
    };
    // SAFETY: the caller's `view`, written whole. `dims` holds `2 * ndim`
    // entries until `release` frees it; `format` is static; the memory
    // lives while `owner` does, whose reference the view now holds.
    unsafe { view.write(filled) };
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
    let dims = view.internal.cast::<ffi::Py_ssize_t>();
    if dims.is_null() {
        return;
    }
    let len = 2 * usize::try_from(view.ndim).unwrap_or(0);
    view.internal = std::ptr::null_mut();
    // SAFETY: the boxed slice of `2 * ndim` dims `fill` leaked, freed once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(dims, len)) });
}
