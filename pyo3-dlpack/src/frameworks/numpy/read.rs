//! NumPy arrays imported by reading the array itself, without a `__dlpack__`
//! call: what NumPy's own `__dlpack__` reads (data, shape, strides, dtype,
//! the writeable flag), described the way it would describe them, with a
//! reference to the array keeping the memory alive instead of a capsule.
//!
//! Taken only where the result is the one `__dlpack__` would give: an exact
//! `numpy.ndarray` (a subclass may override `__dlpack__`) of a NumPy that
//! exports versioned capsules (2.1 and later: earlier ones export legacy
//! capsules, whose writability is handled elsewhere), with default import
//! options, a dtype DLPack has, native byte order and strides in whole
//! elements. Everything else (and every refusal: NumPy raises its own
//! `BufferError`) goes through `__dlpack__`.
//!
//! No link-time NumPy dependency and no NumPy import: an object is read
//! only when its type is NumPy's array type, the one NumPy's C API table
//! names ([`super::is_exact_ndarray`]), so its memory is NumPy's array
//! struct; a class that merely carries NumPy's name is never read. The struct layouts
//! read are NumPy 2's public ones (`ndarraytypes.h`: `PyArrayObject_fields`,
//! `PyArray_Descr`), stable across 2.x and part of NumPy's ABI.

use std::ffi::{c_char, c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::ffi::{DLPackVersion, DLTensor};
use crate::{DataType, Device};

/// The head of NumPy's `PyArrayObject_fields`.
#[repr(C)]
struct ArrayFields {
    ob_base: ffi::PyObject,
    data: *mut c_char,
    nd: c_int,
    dimensions: *const ffi::Py_ssize_t,
    strides: *const ffi::Py_ssize_t,
    base: *mut ffi::PyObject,
    descr: *const DescrFields,
    flags: c_int,
}

/// The head of NumPy 2's `PyArray_Descr`.
#[repr(C)]
struct DescrFields {
    ob_base: ffi::PyObject,
    typeobj: *mut ffi::PyTypeObject,
    kind: c_char,
    type_char: c_char,
    byteorder: c_char,
    former_flags: c_char,
    type_num: c_int,
}

/// The DLPack version NumPy's `__dlpack__(max_version=(1, 3))` reports,
/// learned once: `Some` once NumPy is known to export versioned capsules;
/// `None` for older NumPy (or one whose probe failed), which keeps the
/// `__dlpack__` path.
static VERSION: crate::once::Cell<Option<DLPackVersion>> = crate::once::Cell::new();

/// An exact `numpy.ndarray` this path takes (see the module docs), read in
/// place: the caller writes the description where it is kept, so nothing
/// of it is built on the stack and moved.
pub(crate) struct Array<'a> {
    fields: &'a ArrayFields,
    dtype: DataType,
    ndim: usize,
    version: DLPackVersion,
}

/// `obj` when it is an exact `numpy.ndarray` this path takes (see the module
/// docs); `None` sends it through `__dlpack__`. `probe` tells, of an empty
/// array, the DLPack version of NumPy's versioned capsules (`None`: NumPy
/// exports legacy ones only); it is asked once per process.
#[inline]
pub(crate) fn recognise<'a>(
    obj: &'a Bound<'_, PyAny>,
    probe: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<Option<DLPackVersion>>,
) -> Option<Array<'a>> {
    if !super::is_exact_ndarray(obj) {
        return None;
    }
    let version = version(obj, probe)?;
    // SAFETY: `obj`'s type is NumPy's array type itself (by identity with
    // the type NumPy's C API table names, not by name), so its object
    // starts with NumPy's array fields, alive while `obj` is borrowed.
    let fields = unsafe { &*obj.as_ptr().cast::<ArrayFields>() };
    // SAFETY: every array has a live descriptor it holds a reference to.
    let dtype = dtype_of(unsafe { &*fields.descr })?;
    let ndim = usize::try_from(fields.nd).ok()?;
    if ndim > crate::MAX_NDIM {
        return None;
    }
    let array = Array {
        fields,
        dtype,
        ndim,
        version,
    };
    // NumPy's `__dlpack__` raises its own BufferError for strides that are
    // not whole elements; and it describes the strides of an empty array
    // differently across versions (2.2 rewrites them, 2.4 does not), so an
    // empty array, where they matter to nobody, takes `__dlpack__` too.
    let partial = array.itemsize_mask();
    let whole = array
        .byte_strides()
        .iter()
        .all(|stride| stride & partial == 0);
    (whole && !array.extents().contains(&0)).then_some(array)
}

impl Array<'_> {
    /// Number of dimensions.
    pub(crate) fn ndim(&self) -> usize {
        self.ndim
    }

    /// The version NumPy's own versioned capsules report.
    #[inline]
    pub(crate) fn version(&self) -> DLPackVersion {
        self.version
    }

    /// NumPy's `WRITEABLE` flag.
    pub(crate) fn is_writable(&self) -> bool {
        self.fields.flags & super::WRITEABLE != 0
    }

    /// The tensor: data, `cpu:0`, ndim, dtype; `shape` and `strides` NULL
    /// (the caller keeps them, see [`write_dims`](Self::write_dims):
    /// `DLTensor` pointers into a value that moves would dangle).
    pub(crate) fn tensor(&self) -> DLTensor {
        DLTensor {
            data: self.fields.data.cast::<c_void>(),
            device: Device::cpu(),
            ndim: self.fields.nd,
            dtype: self.dtype,
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        }
    }

    /// Writes the shape, then the strides in elements, into `dims` (made by
    /// `DimsBuf::pair(self.ndim())`). Inlined into the import, whatever
    /// code-generation unit each lands in (the hot path of a NumPy argument).
    #[inline]
    pub(crate) fn write_dims(&self, dims: &mut crate::layout::DimsBuf) {
        // Every dtype read here is 1, 2, 4, 8 or 16 bytes: strides in whole
        // elements (checked by `recognise`) are shifts, not divisions.
        let shift = self.dtype.itemsize().trailing_zeros();
        let (shape, strides) = dims.split_mut();
        for (out, extent) in shape.iter_mut().zip(self.extents()) {
            *out = *extent as i64;
        }
        for (out, stride) in strides.iter_mut().zip(self.byte_strides()) {
            *out = (stride >> shift) as i64;
        }
    }

    /// The bits of a byte stride that are not whole elements.
    fn itemsize_mask(&self) -> isize {
        (1isize << self.dtype.itemsize().trailing_zeros()) - 1
    }

    /// NumPy's `dimensions`.
    fn extents(&self) -> &[ffi::Py_ssize_t] {
        // SAFETY: see `byte_strides`.
        unsafe { raw_dims(self.fields.dimensions, self.ndim) }
    }

    /// NumPy's `strides`, in bytes.
    fn byte_strides(&self) -> &[ffi::Py_ssize_t] {
        // SAFETY: NumPy's `dimensions` and `strides` hold `nd` entries each,
        // non-NULL when `nd` > 0, alive while the array is and unchanged
        // while we run no Python code (on a free-threaded interpreter another
        // thread could reshape it meanwhile, as it could while NumPy's own
        // `__dlpack__` reads these arrays, also without a lock).
        unsafe { raw_dims(self.fields.strides, self.ndim) }
    }
}

/// `len` entries at `ptr`; empty for `len == 0`, where `ptr` may be NULL.
///
/// # Safety
///
/// When `len > 0`, `ptr` points to `len` entries alive and unchanged for
/// the result's lifetime.
unsafe fn raw_dims<'a>(ptr: *const ffi::Py_ssize_t, len: usize) -> &'a [ffi::Py_ssize_t] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// The version of NumPy's versioned capsules, learned once from `array`
/// (an exact `numpy.ndarray`, so NumPy is imported: this never imports it).
/// The known version inline (every NumPy argument asks), the first lesson
/// out of line.
#[inline]
fn version(
    array: &Bound<'_, PyAny>,
    probe: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<Option<DLPackVersion>>,
) -> Option<DLPackVersion> {
    match VERSION.get(array.py()) {
        Some(known) => *known,
        None => learn_version(array, probe),
    }
}

/// [`version`]'s first call in the process: asks `probe` of an empty array.
#[cold]
#[inline(never)]
fn learn_version(
    array: &Bound<'_, PyAny>,
    probe: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<Option<DLPackVersion>>,
) -> Option<DLPackVersion> {
    let py = array.py();
    // `ndarray(0)`, its argument passed as `&PyAny`: a tuple type other
    // calls already instantiate the call for.
    let Ok(zero) = 0i32.into_pyobject(py);
    let zero = zero.into_any();
    let learned = array
        .get_type()
        .call1((&zero,))
        .and_then(|empty| probe(&empty))
        .ok()
        .flatten();
    *VERSION.get_or_set(py, learned)
}

/// The DLPack dtype of a NumPy 2 descriptor in native byte order, `None`
/// for anything NumPy's `__dlpack__` refuses or that takes the other path.
fn dtype_of(descr: &DescrFields) -> Option<DataType> {
    let native = if cfg!(target_endian = "little") {
        b'<'
    } else {
        b'>'
    };
    let order = descr.byteorder as u8;
    if !(order == b'=' || order == b'|' || order == native) {
        return None;
    }
    super::dtype_of_number(descr.type_num)
}
