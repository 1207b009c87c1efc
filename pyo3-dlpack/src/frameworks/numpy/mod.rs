//! NumPy: everything this crate does specially for NumPy, in both
//! directions. What NumPy's array type is ([`ndarray_type`]: `PyArray_Type`
//! from NumPy's own C API table), its type numbers (one table, both ways),
//! arrays read in place on import ([`read`]), and arrays made over exported
//! memory for `Native::numpy` ([`native`]).
//!
//! **Identity, never names.** An object is taken for a NumPy array only
//! when its type *is* `PyArray_Type`, the object NumPy's table names. A
//! class that calls itself `numpy.ndarray` is an ordinary producer: its own
//! `__dlpack__` is asked. A type's name may say when it is worth looking
//! (before NumPy's table has been read), never what the type is.

pub(crate) mod api;
mod native;
#[cfg(feature = "fast-paths")]
pub(crate) mod read;
mod time;

use std::ffi::c_int;
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;

use crate::DataType;

pub(crate) use native::array_of;
pub use time::NumpyTime;

/// `NPY_ARRAY_WRITEABLE`, the flag NumPy keeps in an array's `flags`.
pub(crate) const WRITEABLE: c_int = 0x0400;

/// NumPy's `long`/`ulong` (type numbers 7 and 8): 64 bits where C's long is
/// (LP64), 32 elsewhere.
const LONG: (DataType, DataType) = if size_of::<std::ffi::c_long>() == 8 {
    (DataType::I64, DataType::U64)
} else {
    (DataType::I32, DataType::U32)
};

/// NumPy's type numbers of the dtypes DLPack and NumPy share
/// (`ndarraytypes.h`), the one table both directions read. Where two
/// numbers have one dtype, the first listed is the one an export uses.
const TYPE_NUMBERS: [(c_int, DataType); 16] = [
    (0, DataType::BOOL),
    (1, DataType::I8),
    (2, DataType::U8),
    (3, DataType::I16),
    (4, DataType::U16),
    (5, DataType::I32),
    (6, DataType::U32),
    (7, LONG.0),
    (8, LONG.1),
    (9, DataType::I64),
    (10, DataType::U64),
    (11, DataType::F32),
    (12, DataType::F64),
    (14, DataType::C64),
    (15, DataType::C128),
    (23, DataType::F16),
];

/// The dtype of NumPy's type number `number`, if DLPack has it.
#[cfg(feature = "fast-paths")]
pub(crate) fn dtype_of_number(number: c_int) -> Option<DataType> {
    TYPE_NUMBERS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|&(_, dtype)| dtype)
}

/// NumPy's type number for `dtype` (`None` for bfloat16, float8, sub-byte
/// and multi-lane types, which NumPy has no number for).
pub(crate) fn type_number(dtype: DataType) -> Option<c_int> {
    TYPE_NUMBERS
        .iter()
        .find(|(_, d)| *d == dtype)
        .map(|&(number, _)| number)
}

/// NumPy's array type, `PyArray_Type` from NumPy's C API table, if NumPy
/// is imported (this never imports it).
pub(crate) fn ndarray_type(py: Python<'_>) -> Option<*mut pyo3::ffi::PyTypeObject> {
    api::api_if_imported(py).map(|api| api.array_type)
}

/// Whether `obj`'s type is exactly NumPy's array type (a subclass is not:
/// it may override `__dlpack__`), judged by identity with the type NumPy's
/// C API table names.
#[inline]
pub(crate) fn is_exact_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    let ty = obj.get_type_ptr();
    if let Some(api) = api::known(obj.py()) {
        return ty == api.array_type;
    }
    is_exact_ndarray_unread(obj)
}

/// [`is_exact_ndarray`] while NumPy's table is unread: one body out of
/// line for the callers that inline the known table's comparison.
#[cold]
#[inline(never)]
fn is_exact_ndarray_unread(obj: &Bound<'_, PyAny>) -> bool {
    may_be_ndarray(obj) && ndarray_type(obj.py()) == Some(obj.get_type_ptr())
}

/// Whether `obj` is a NumPy array, exact or a subclass (identity, as
/// [`is_exact_ndarray`]).
pub(crate) fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    if is_exact_ndarray(obj) {
        return true;
    }
    let Some(array_type) = ndarray_type(obj.py()) else {
        return false;
    };
    // SAFETY: attached; `obj` and NumPy's static array type are live.
    unsafe { pyo3::ffi::PyObject_TypeCheck(obj.as_ptr(), array_type) != 0 }
}

/// For a NumPy array (or scalar) whose dtype DLPack cannot carry (Python
/// objects, datetimes, timedeltas, strings, records), the `TypeError` an
/// argument conversion raises instead of NumPy's own export error: the dtype
/// found, and the way out. `None` for anything else.
pub(crate) fn dtype_without_dlpack(obj: &Bound<'_, PyAny>) -> Option<PyErr> {
    if !is_ndarray(obj) && !is_scalar(obj) {
        return None;
    }
    let dtype = obj.getattr(pyo3::intern!(obj.py(), "dtype")).ok()?;
    let kind: String = dtype
        .getattr(pyo3::intern!(obj.py(), "kind"))
        .ok()?
        .extract()
        .ok()?;
    let name = format!("{}", dtype.str().ok()?);
    // The way out, and for datetimes the unit's dtype again after it: one
    // message format for every kind.
    let (way_out, unit) = match kind.as_str() {
        "M" => (
            "DLPack has no datetime type; pass x.view('int64') (its int64 counts of the unit in ",
            name.as_str(),
        ),
        "m" => (
            "DLPack has no timedelta type; pass x.view('int64') (its int64 counts of the unit in ",
            name.as_str(),
        ),
        "O" => (
            "its elements are Python objects; convert them first, e.g. \
             np.asarray(x, dtype='float64')",
            "",
        ),
        "U" | "S" => ("DLPack carries numbers only; encode the strings first", ""),
        "V" => (
            "DLPack carries numbers only; pass each field (x['name']) on its own",
            "",
        ),
        _ => return None,
    };
    let close = if unit.is_empty() { "" } else { ")" };
    let message = format!(
        "expected a tensor, got a NumPy array of dtype {name}, which DLPack cannot carry: \
         {way_out}{unit}{close}"
    );
    Some(match dtype_error_class(obj.py()) {
        Ok(class) => PyErr::from_type(class.clone(), message),
        Err(err) => err,
    })
}

/// The class of [`dtype_without_dlpack`]'s error: a `BufferError`, as NumPy
/// raises for such dtypes (and NumPy's own tests expect of `from_dlpack`),
/// that is also a `TypeError`, which PyO3 names the argument in.
/// `pyo3_dlpack.UnsupportedDtypeError`, made as Python code makes a class:
/// `type(name, bases, {"__module__": "pyo3_dlpack"})`.
fn dtype_error_class(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    static CLASS: crate::once::Cell<Py<pyo3::types::PyType>> = crate::once::Cell::new();
    let class = CLASS.get_or_try_init(py, || {
        let bases = (
            py.get_type::<pyo3::exceptions::PyBufferError>(),
            py.get_type::<pyo3::exceptions::PyTypeError>(),
        );
        let namespace = pyo3::types::PyDict::new(py);
        namespace.set_item("__module__", "pyo3_dlpack")?;
        let class = py.get_type::<pyo3::types::PyType>().call1((
            "UnsupportedDtypeError",
            bases,
            namespace,
        ))?;
        Ok::<_, PyErr>(class.cast_into::<pyo3::types::PyType>()?.unbind())
    })?;
    Ok(class.bind(py))
}

/// Whether `obj` is a NumPy scalar (`np.float64(1.0)`: an instance of
/// `numpy.generic` as NumPy's C API table names it), if NumPy is imported.
pub(crate) fn is_scalar(obj: &Bound<'_, PyAny>) -> bool {
    let Some(api) = api::api_if_imported(obj.py()) else {
        return false;
    };
    // SAFETY: attached; `obj` and NumPy's static scalar base type are live.
    unsafe { pyo3::ffi::PyObject_TypeCheck(obj.as_ptr(), api.generic_type) != 0 }
}

/// Whether `obj`, which exported a legacy capsule, may be written: NumPy
/// before 2.1 exports only legacy capsules, and only of writable arrays
/// (read-only ones raise `BufferError`), so an exact `numpy.ndarray` whose
/// `flags.writeable` is true is writable.
pub(crate) fn legacy_writable(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !is_exact_ndarray(obj) {
        return Ok(false);
    }
    let py = obj.py();
    let flags = obj.getattr(pyo3::intern!(py, "flags"))?;
    flags.getattr(pyo3::intern!(py, "writeable"))?.is_truthy()
}

/// The address of the last type found not to be named `numpy.ndarray`
/// while NumPy's table is unread (see `may_be_ndarray`).
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
static NOT_NAMED_NDARRAY: AtomicUsize = AtomicUsize::new(0);

/// Whether looking NumPy's table up could find `obj`'s type there: its C
/// name is `numpy.ndarray`. A hint only (a Python class can take the name):
/// the answer is [`is_exact_ndarray`]'s comparison of types. It keeps
/// imports of other tensors, before any NumPy array has been seen, from a
/// look into `sys.modules` each; the last type that failed it is
/// remembered (its address may later name another type, which then takes
/// the general path: correct too).
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
fn may_be_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    let ty = obj.get_type_ptr() as usize;
    if NOT_NAMED_NDARRAY.load(Ordering::Relaxed) == ty {
        return false;
    }
    // SAFETY: a live type object (`obj` holds a reference to it).
    let mut name = unsafe { (*obj.get_type_ptr()).tp_name };
    // Byte by byte up to the first difference, so a long name is not
    // measured first.
    for &expected in c"numpy.ndarray".to_bytes_with_nul() {
        // SAFETY: `tp_name` is a NUL-terminated string owned by the live
        // type; `name` moves past a byte only when it matched a non-NUL
        // byte, so it stays within the string.
        if unsafe { *name } as u8 != expected {
            NOT_NAMED_NDARRAY.store(ty, Ordering::Relaxed);
            return false;
        }
        // SAFETY: as above: at most one past the NUL, which stays in
        // bounds of the string's allocation as `add` requires.
        name = unsafe { name.add(1) };
    }
    true
}

/// No `tp_name` in the limited API: every type is worth the look.
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
fn may_be_ndarray(_: &Bound<'_, PyAny>) -> bool {
    true
}
