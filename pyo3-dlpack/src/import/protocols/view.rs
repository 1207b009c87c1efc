//! A held buffer-protocol view (`Py_buffer`): filled once, read while an
//! import is built, released once when the import drops.

use pyo3::ffi;
use pyo3::prelude::*;

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
    pub(crate) fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
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

    /// A view filled by hand (of no exporter: `obj` NULL, so its release
    /// does nothing), for tests of what an exporter may hand over.
    #[cfg(test)]
    pub(crate) fn filled(raw: ffi::Py_buffer) -> Self {
        Self(Box::new(raw))
    }

    pub(crate) fn raw(&self) -> &ffi::Py_buffer {
        &self.0
    }

    #[cfg(feature = "non-dlpack-import")]
    /// Extents (`ndim` of them; none for a 0-d view, whose `shape` may be NULL).
    pub(crate) fn shape(&self) -> Vec<i64> {
        self.dims(self.raw().shape)
    }

    #[cfg(feature = "non-dlpack-import")]
    /// Strides in bytes; `None` when the exporter left them NULL, which the
    /// buffer protocol defines as C-contiguous (ctypes arrays,
    /// `array.array` and many C extensions do).
    pub(crate) fn strides(&self) -> Option<Vec<i64>> {
        let strides = self.raw().strides;
        (!strides.is_null()).then(|| self.dims(strides))
    }

    #[cfg(feature = "non-dlpack-import")]
    #[inline(never)] // one copy for shape and strides
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

    #[cfg(feature = "non-dlpack-import")]
    pub(crate) fn format(&self) -> std::borrow::Cow<'_, str> {
        let format = self.raw().format;
        if format.is_null() {
            return "B".into(); // the buffer protocol's default: unsigned bytes
        }
        // SAFETY: a NUL-terminated string owned by the exporter, valid while
        // the view is held (as long as `self` is borrowed).
        unsafe { std::ffi::CStr::from_ptr(format) }.to_string_lossy()
    }
}

impl Drop for BufferView {
    // Out of line: each unit that drops a view carries its own drop glue,
    // which is then a call (and the box's free), not this body.
    #[inline(never)]
    fn drop(&mut self) {
        // If the interpreter is gone, so is the exporter: nothing to release.
        let _ = Python::try_attach(|_| {
            // SAFETY: attached; the view was filled by `PyObject_GetBuffer`
            // and is released here, once (this is its only release).
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}
