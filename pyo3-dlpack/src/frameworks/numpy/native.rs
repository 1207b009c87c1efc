//! `Native::numpy` results: an array made directly over the exported
//! memory through NumPy's C API ([`super::api`]), its base object owning
//! the value.

use std::ffi::c_int;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::api::api;
use super::{WRITEABLE, type_number};
use crate::error::ExportError;
use crate::export::managed::drop_owner;
use crate::export::{Described, IntoDLPack};
use crate::{DLPackError, layout};

/// `value` as a `numpy.ndarray` over its own memory: shape and strides from
/// its description, writable unless the description says otherwise (or
/// cannot say: unknown writability is read-only, as NumPy makes it), the
/// value dropped when the array (its base) is freed.
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    let described = Described::new(value)?;
    let info = described.info();
    // Pinned and managed memory too, once its stream is done (NumPy's own
    // `from_dlpack` and `memoryview` read them).
    if !info.device().is_host_accessible() {
        return Err(DLPackError::from(ExportError::FrameworkDevice {
            array: "numpy.ndarray",
            device: info.device(),
        })
        .into());
    }
    crate::cuda::host::make_host_readable(py, info.device(), info.stream())?;
    let Some(number) = type_number(info.dtype()) else {
        // NumPy's `from_dlpack` takes no dtype its type numbers lack either.
        return Err(DLPackError::from(ExportError::FrameworkRefused {
            array: "numpy.ndarray".into(),
            dtype: info.dtype(),
            device: Some(info.device()),
            reason: if info.dtype().code == crate::DataTypeCode::BCOMPLEX {
                // torch 2.15 takes no bcomplex over DLPack either.
                "NumPy has no such dtype; return it as a DLPackTensor".into()
            } else {
                "NumPy has no such dtype (bfloat16, float8 and narrower types, \
                 multi-lane types); return it as a DLPackTensor or a torch.Tensor"
                    .into()
            },
        })
        .into());
    };
    let api = api(py)?;
    let itemsize = info.dtype().itemsize();
    let (shape, strides) = info.dims_slices();
    let ndim = shape.len();
    // Extents, then strides in bytes (`byte_stride`: those an element steps
    // along are within the checked reach); on the stack for up to 8 dimensions.
    let mut inline = [0 as ffi::Py_ssize_t; 16];
    let mut heap = Vec::new();
    let dims: &mut [ffi::Py_ssize_t] = if ndim <= 8 {
        &mut inline[..2 * ndim]
    } else {
        heap.resize(2 * ndim, 0);
        &mut heap
    };
    for (i, (&extent, &stride)) in shape.iter().zip(strides).enumerate() {
        dims[i] = extent as ffi::Py_ssize_t;
        dims[ndim + i] = layout::byte_stride(stride, itemsize);
    }
    let (dims, byte_strides) = dims.split_at(ndim);
    let flags = if info.is_read_only() { 0 } else { WRITEABLE };
    let data = info.data_ptr();
    // The owner: the value, dropped (without unwinding into C) with the
    // capsule; NumPy copied what it needs of the description.
    let value = described.into_owner();
    let owner = PyCapsule::new_with_value(py, CatchDrop(Some(value)), c"pyo3_dlpack.native")?;
    // SAFETY: attached; NumPy's function, returning a new reference or NULL
    // with an exception set.
    let descr = unsafe { (api.descr_from_type)(number) };
    if descr.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: attached; `descr` is a new reference, which this call steals
    // (also when it fails); `data` is the value's memory, which `owner`
    // keeps alive and which the description checked; `dims` and
    // `byte_strides` are `ndim` long, copied by NumPy; `array_type` is
    // NumPy's `PyArray_Type`.
    let array = unsafe {
        (api.new_from_descr)(
            api.array_type,
            descr,
            ndim as c_int,
            dims.as_ptr(),
            byte_strides.as_ptr(),
            data,
            flags,
            std::ptr::null_mut(),
        )
    };
    if array.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference to the array just made.
    let array = unsafe { Bound::from_owned_ptr(py, array) };
    // SAFETY: attached; `array` is a fresh ndarray without a base; the call
    // steals the reference to `owner`, also when it fails.
    if unsafe { (api.set_base)(array.as_ptr(), owner.into_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(array)
}

/// Drops a value without letting a panic escape (a base object's destructor
/// runs from C).
struct CatchDrop<T>(Option<T>);

impl<T> Drop for CatchDrop<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_owner(value);
        }
    }
}
