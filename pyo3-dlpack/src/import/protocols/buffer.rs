//! Producers of Python's buffer protocol: `memoryview`, `bytes`,
//! `bytearray`, `array.array`, `mmap`, and every C extension type that
//! fills a `Py_buffer`. The view is held for the tensor's whole life
//! (a `bytearray` cannot be resized, nor an `mmap` closed, under it) and
//! released exactly once when the tensor drops.

use pyo3::ffi;
use pyo3::prelude::*;

use super::format::from_struct_format;
use super::owner::{self, Keeper, Layout, Memory};
use super::view::BufferView;
use crate::error::{Interface, InterfaceError};
use crate::import::tensor::PyTensor;
use crate::python::type_name;
use crate::{DLPackError, Device};

/// Imports `obj` through the buffer protocol.
pub(crate) fn import(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let view = BufferView::get(obj)?;
    let raw = view.raw();
    let dtype = element_type(&view).map_err(DLPackError::from)?;
    let layout = Layout {
        shape: view.shape(),
        byte_strides: view.strides(),
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

/// The dtype of the view's elements, which must be reached without
/// suboffsets.
fn element_type(view: &BufferView) -> Result<crate::DataType, InterfaceError> {
    let raw = view.raw();
    if !raw.suboffsets.is_null() {
        return Err(InterfaceError::Suboffsets);
    }
    let itemsize = usize::try_from(raw.itemsize).unwrap_or(0);
    from_struct_format(&view.format(), itemsize)
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
        return Err(not_contiguous(obj));
    }
    let len = usize::try_from(raw.len).unwrap_or(0);
    Ok((raw.buf as usize, len, raw.readonly != 0, view))
}

/// The error for array-interface `data` whose buffer is not C-contiguous.
#[cold]
#[inline(never)]
fn not_contiguous(obj: &Bound<'_, PyAny>) -> PyErr {
    DLPackError::from(InterfaceError::Malformed {
        interface: Interface::ArrayInterface,
        field: "data",
        expected: "a C-contiguous buffer",
        found: format!("a non-contiguous {} buffer", type_name(obj)),
    })
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An indirect (PIL-style) buffer is refused as such, before its format
    /// is read (`x` has no dtype: the suboffsets are what is named).
    #[test]
    fn an_indirect_buffer_is_refused_for_its_suboffsets() {
        let mut suboffsets: [ffi::Py_ssize_t; 1] = [0];
        let mut raw = ffi::Py_buffer::new();
        raw.itemsize = 1;
        raw.ndim = 1;
        raw.format = c"x".as_ptr().cast_mut();
        raw.suboffsets = suboffsets.as_mut_ptr();
        let view = BufferView::filled(raw);
        assert!(matches!(
            element_type(&view),
            Err(InterfaceError::Suboffsets)
        ));
        // The same view without suboffsets is refused for its format.
        let mut raw = ffi::Py_buffer::new();
        raw.itemsize = 1;
        raw.format = c"x".as_ptr().cast_mut();
        let err = element_type(&BufferView::filled(raw)).unwrap_err();
        assert_eq!(
            format!("{err}"),
            "the buffer protocol describes elements of format 'x', which has no DLPack dtype: \
             expected a bool, integer, float or complex number"
        );
    }
}
