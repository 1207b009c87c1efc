//! Producers of Python's buffer protocol: `memoryview`, `bytes`,
//! `bytearray`, `array.array`, `mmap`, and every C extension type that
//! fills a `Py_buffer`. The view is held for the tensor's whole life
//! (a `bytearray` cannot be resized, nor an `mmap` closed, under it) and
//! released exactly once when the tensor drops.

use std::ffi::CStr;

use pyo3::ffi;
use pyo3::prelude::*;

use super::format::from_struct_format;
use super::owner::{self, Keeper, Layout, Memory};
use crate::error::{Interface, InterfaceError};
use crate::import::tensor::PyTensor;
use crate::python::type_name;
use crate::{DLPackError, Device};

/// A filled `Py_buffer`, released once when dropped. Boxed, so it never
/// moves: exporters may point its fields into the struct itself.
pub(crate) struct BufferView(Box<ffi::Py_buffer>);

// SAFETY: the view is plain data plus a strong reference to its exporter;
// it is only read (under the GIL, while the tensor is built) and released
// in `Drop`, which attaches to the interpreter first, as PyO3's own
// `PyBuffer` does.
unsafe impl Send for BufferView {}
// SAFETY: `&BufferView` gives no access to anything.
unsafe impl Sync for BufferView {}

impl BufferView {
    /// `PyObject_GetBuffer(obj, PyBUF_FULL_RO)`: shape, strides, format and
    /// whether the exporter allows writes; a writable view is not asked for,
    /// so read-only exporters (`bytes`) succeed too.
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut view = Box::new(ffi::Py_buffer::new());
        // SAFETY: attached; `view` is a writable `Py_buffer` that stays at
        // its address; on success it is released exactly once, in `Drop`.
        let status =
            unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, ffi::PyBUF_FULL_RO) };
        if status != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(Self(view))
    }

    fn raw(&self) -> &ffi::Py_buffer {
        &self.0
    }

    /// Extents (`ndim` of them; none for a 0-d view, whose `shape` may be NULL).
    fn shape(&self) -> Vec<i64> {
        self.dims(self.raw().shape)
    }

    fn strides(&self) -> Vec<i64> {
        self.dims(self.raw().strides)
    }

    fn dims(&self, dims: *mut ffi::Py_ssize_t) -> Vec<i64> {
        let ndim = usize::try_from(self.raw().ndim).unwrap_or(0);
        if ndim == 0 || dims.is_null() {
            return Vec::new();
        }
        // SAFETY: with PyBUF_FULL_RO the exporter fills `shape` and
        // `strides` with `ndim` entries, valid while the view is held.
        unsafe { std::slice::from_raw_parts(dims, ndim) }
            .iter()
            .map(|&d| d as i64)
            .collect()
    }

    fn format(&self) -> String {
        let format = self.raw().format;
        if format.is_null() {
            return "B".to_owned(); // the buffer protocol's default: unsigned bytes
        }
        // SAFETY: a NUL-terminated string owned by the exporter, valid while
        // the view is held.
        unsafe { CStr::from_ptr(format) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for BufferView {
    fn drop(&mut self) {
        // If the interpreter is gone, so is the exporter: nothing to release.
        let _ = Python::try_attach(|_| {
            // SAFETY: attached; the view was filled by `PyObject_GetBuffer`
            // and is released here, once (this is its only release).
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

/// Imports `obj` through the buffer protocol.
pub(crate) fn import(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let view = BufferView::get(obj)?;
    let raw = view.raw();
    if !raw.suboffsets.is_null() {
        return Err(DLPackError::from(InterfaceError::Suboffsets).into());
    }
    let itemsize = usize::try_from(raw.itemsize).unwrap_or(0);
    let dtype = from_struct_format(&view.format(), itemsize).map_err(DLPackError::from)?;
    let layout = Layout {
        shape: view.shape(),
        byte_strides: Some(view.strides()),
        dtype,
        read_only: raw.readonly != 0,
    };
    let first = raw.buf as usize;
    // SAFETY: the exporter's buffer stays valid and unchanged in size while
    // the view is held, which the tensor does (the keeper); it may be
    // written only if the exporter said it is not read-only.
    unsafe {
        owner::import(
            Memory::FirstElement(first),
            layout,
            Device::cpu(),
            Interface::Buffer,
            Keeper::View(view),
        )
    }
}

/// The buffer of `obj` as a region (for `__array_interface__` data given as
/// a buffer object): its start, length and read-only flag, and the view.
pub(crate) fn region(obj: &Bound<'_, PyAny>) -> PyResult<(usize, usize, bool, BufferView)> {
    let view = BufferView::get(obj)?;
    let raw = view.raw();
    // The region is `len` bytes from `buf` only for a C-contiguous buffer
    // (which is what array-interface data buffers are).
    // SAFETY: attached; a filled view.
    if unsafe { ffi::PyBuffer_IsContiguous(raw, b'C' as std::ffi::c_char) } == 0 {
        return Err(DLPackError::from(InterfaceError::Malformed {
            interface: Interface::ArrayInterface,
            field: "data",
            expected: "a C-contiguous buffer",
            found: format!("a non-contiguous {} buffer", type_name(obj)),
        })
        .into());
    }
    let len = usize::try_from(raw.len).unwrap_or(0);
    Ok((raw.buf as usize, len, raw.readonly != 0, view))
}
