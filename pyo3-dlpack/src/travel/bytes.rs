//! A host tensor's bytes, row-major, as a buffer exporter: what a
//! `pickle.PickleBuffer` wraps, so that protocol 5 hands the bytes to the
//! pickler (out-of-band, or written once into the stream) without a copy.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::PythonKind;
use crate::export::{DLPackTensor, HostTensor};
use crate::{DeviceType, Writability};

/// What keeps the bytes alive.
#[allow(dead_code)] // only held
enum Keep {
    /// The tensor itself: contiguous host memory, shared.
    Tensor(Py<DLPackTensor>),
    /// A row-major host copy (strided views, device memory).
    Copy(HostTensor),
}

/// The bytes of a tensor, row-major, on the host.
#[pyclass(frozen, module = "pyo3_dlpack", name = "_TensorBytes")]
pub(crate) struct TensorBytes {
    _keep: Keep,
    ptr: usize,
    len: usize,
    /// Whether the buffer refuses writes (read by the buffer protocol).
    #[cfg_attr(all(Py_LIMITED_API, not(Py_3_11)), allow(dead_code))]
    read_only: bool,
}

/// Why the bytes of memory of unknown length are not read.
const UNKNOWN_LENGTH: &str = "cannot read this tensor's bytes: the length of its memory is \
     unknown (raw memory exported without one), so its elements were not checked to lie in it";

impl TensorBytes {
    /// The bytes of `tensor`: its own memory when it is contiguous memory
    /// of the CPU, else a row-major host copy (gathered once; device memory
    /// after its stream) of `nbytes` bytes.
    pub(crate) fn of(tensor: &Bound<'_, DLPackTensor>, nbytes: usize) -> PyResult<Self> {
        let info = tensor.get().info();
        let read_only = info.writability() != Writability::Writable;
        // In place or copied, the bytes are read: only memory whose length
        // was known, so every element was checked to lie inside it.
        if !info.is_bounds_checked() {
            return Err(PythonKind::Buffer.new_err(UNKNOWN_LENGTH.to_owned()));
        }
        if info.device().device_type == DeviceType::CPU && info.is_contiguous() {
            return Ok(Self {
                ptr: info.data_ptr() as usize,
                len: nbytes,
                read_only,
                _keep: Keep::Tensor(tensor.clone().unbind()),
            });
        }
        let copy = HostTensor::copy_of(info)?;
        let bytes = copy.bytes();
        Ok(Self {
            ptr: bytes.as_ptr() as usize,
            len: bytes.len(),
            read_only,
            _keep: Keep::Copy(copy),
        })
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` bytes of host memory from `ptr`, readable while
        // `keep` (the tensor, whose description was checked, or our copy)
        // lives, which is as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }

    /// What the pickle carries: for protocol 5 a `PickleBuffer` over these
    /// bytes (the pickler writes them once, or hands them out of band),
    /// else `bytes` (one copy). Builds without the buffer protocol for
    /// classes (the limited API before Python 3.11) always give `bytes`.
    pub(crate) fn into_pickle_data(
        self,
        py: Python<'_>,
        protocol: i32,
    ) -> PyResult<Bound<'_, PyAny>> {
        #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
        if protocol >= 5 {
            static PICKLE_BUFFER: crate::once::Cell<Py<pyo3::types::PyType>> =
                crate::once::Cell::new();
            let pickle_buffer =
                crate::once::import_type(&PICKLE_BUFFER, py, "pickle", "PickleBuffer")?;
            // (As `&PyAny`: the one-argument call other calls of the crate use.)
            return pickle_buffer.call1((Bound::new(py, self)?.as_any(),));
        }
        let _ = protocol;
        Ok(PyBytes::new(py, self.as_slice()).into_any())
    }
}

#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
#[pymethods]
impl TensorBytes {
    /// The bytes as one dimension of unsigned bytes.
    ///
    /// # Safety
    ///
    /// Called by Python only (`bf_getbuffer`), with `view` a writable
    /// `Py_buffer` for this object to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        // SAFETY: Python's `view` to fill; `len` bytes from `ptr` stay
        // readable (and writable unless read-only) while `slf`, whose
        // reference the view takes, lives. `PyBuffer_FillInfo` refuses a
        // writable request on read-only bytes.
        let status = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                this.ptr as *mut std::ffi::c_void,
                this.len as pyo3::ffi::Py_ssize_t,
                std::ffi::c_int::from(this.read_only),
                flags,
            )
        };
        if status != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Nothing to free: `PyBuffer_FillInfo` allocates nothing.
    ///
    /// # Safety
    ///
    /// Called by Python only (`bf_releasebuffer`).
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}

    fn __len__(&self) -> usize {
        self.len
    }
}
