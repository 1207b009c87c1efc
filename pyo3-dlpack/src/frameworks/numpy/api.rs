//! NumPy's C API table: the `_ARRAY_API` capsule NumPy itself publishes
//! (what `import_array()` reads), read once. No link-time NumPy dependency.
//! Only five entries are used, whose slots NumPy keeps stable across 1.x
//! and 2.x (`__multiarray_api.h`): `PyArray_Type` 2, `PyGenericArrType_Type`
//! 10 (`numpy.generic`, the scalars' base), `PyArray_DescrFromType` 45,
//! `PyArray_NewFromDescr` 94, `PyArray_SetBaseObject` 282.
//!
//! `PyArray_Type` from this table is how the crate knows NumPy's array type
//! (see [`super::ndarray_type`]): an object, not a name.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::error::PythonKind;

/// The functions and the array type of NumPy's C API, read once from its
/// table (whose entries live as long as NumPy, never unloaded).
pub(crate) struct Api {
    /// `PyArray_Type`.
    pub(crate) array_type: *mut ffi::PyTypeObject,
    /// `PyGenericArrType_Type` (`numpy.generic`).
    pub(crate) generic_type: *mut ffi::PyTypeObject,
    pub(crate) descr_from_type: DescrFromType,
    pub(crate) new_from_descr: NewFromDescr,
    pub(crate) set_base: SetBaseObject,
}

// SAFETY: a static type object and function pointers of NumPy's library,
// never unloaded nor changed; only used attached to the interpreter.
unsafe impl Send for Api {}
// SAFETY: as above; nothing here is written after `read`.
unsafe impl Sync for Api {}

pub(crate) type DescrFromType = unsafe extern "C" fn(c_int) -> *mut ffi::PyObject;
pub(crate) type NewFromDescr = unsafe extern "C" fn(
    *mut ffi::PyTypeObject,
    *mut ffi::PyObject,
    c_int,
    *const ffi::Py_ssize_t,
    *const ffi::Py_ssize_t,
    *mut c_void,
    c_int,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;
pub(crate) type SetBaseObject =
    unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> c_int;

static API: crate::once::Cell<Api> = crate::once::Cell::new();

/// Slot `index` of NumPy's `PyArray_API` table.
///
/// # Safety
///
/// `table` is the pointer of NumPy's `_ARRAY_API` capsule, an array of more
/// than 282 pointers in every NumPy that publishes it.
unsafe fn slot(table: *const *const c_void, index: usize) -> *const c_void {
    // SAFETY: in bounds of the table, by the caller's contract.
    let entry = unsafe { table.add(index) };
    // SAFETY: as above; the table is initialised and never written again.
    unsafe { *entry }
}

/// The table, read once from `numpy._core.multiarray._ARRAY_API` (NumPy 2)
/// or `numpy.core.multiarray._ARRAY_API` (NumPy 1); imports NumPy.
pub(crate) fn api(py: Python<'_>) -> PyResult<&'static Api> {
    match API.get(py) {
        Some(api) => Ok(api),
        None => read(py),
    }
}

/// The table if it has been read, or can be read without importing NumPy
/// (NumPy is already in `sys.modules`); `None` otherwise. Failures are not
/// remembered: NumPy may be imported later.
pub(crate) fn api_if_imported(py: Python<'_>) -> Option<&'static Api> {
    if let Some(api) = API.get(py) {
        return Some(api);
    }
    crate::python::imported_module(py, pyo3::intern!(py, "numpy"))?;
    api(py).ok()
}

/// [`api`]'s first call: reads the table and keeps it (the table is built
/// in place in the cell, with no closure of its own around the read).
#[cold]
fn read(py: Python<'_>) -> PyResult<&'static Api> {
    let module = py
        .import("numpy._core.multiarray")
        .or_else(|_| py.import("numpy.core.multiarray"))?;
    let capsule = module.getattr("_ARRAY_API")?.cast_into::<PyCapsule>()?;
    let ndarray = module.getattr("ndarray")?;
    let table = capsule
        .pointer_checked(None)
        .map_err(|_| table_error("numpy's _ARRAY_API capsule holds no table"))?
        .as_ptr()
        .cast::<*const c_void>()
        .cast_const();
    let read = |index| {
        // SAFETY: `table` is the pointer of the `_ARRAY_API` capsule of
        // `numpy._core.multiarray`, NumPy's `PyArray_API` (what
        // `import_array` reads), of more than 282 entries; slot 2 is read
        // first and checked to name NumPy's `ndarray` before any other.
        let entry = unsafe { slot(table, index) };
        if entry.is_null() {
            return Err(table_error("numpy's C API table has a NULL entry"));
        }
        Ok(entry)
    };
    // The table is NumPy's only if its `PyArray_Type` is the module's
    // `ndarray`, a static type (no Python code can make one): a module put
    // in `sys.modules` by Python code, with another capsule, fails here,
    // before any slot past the second is read.
    let array_type = read(2)?;
    if array_type != ndarray.as_ptr().cast_const().cast() || !is_static_type(&ndarray) {
        return Err(table_error(
            "numpy's _ARRAY_API capsule does not name numpy's ndarray",
        ));
    }
    let (descr, new, base) = (read(45)?, read(94)?, read(282)?);
    // `numpy.generic` of the package: NumPy 1's `numpy.core.multiarray` has
    // no `generic` (its `__all__` leaves it out).
    let generic = read(10)?;
    let numpy_generic = py.import("numpy")?.getattr("generic")?;
    if generic != numpy_generic.as_ptr().cast_const().cast() {
        return Err(table_error(
            "numpy's C API table does not name numpy.generic",
        ));
    }
    let api = Api {
        array_type: array_type.cast_mut().cast(),
        generic_type: generic.cast_mut().cast(),
        // SAFETY: slot 45 is `PyArray_DescrFromType`, of this signature
        // (`__multiarray_api.h`); function and data pointers have one size here.
        descr_from_type: unsafe { std::mem::transmute::<*const c_void, DescrFromType>(descr) },
        // SAFETY: slot 94 is `PyArray_NewFromDescr`, of this signature.
        new_from_descr: unsafe { std::mem::transmute::<*const c_void, NewFromDescr>(new) },
        // SAFETY: slot 282 is `PyArray_SetBaseObject`, of this signature.
        set_base: unsafe { std::mem::transmute::<*const c_void, SetBaseObject>(base) },
    };
    Ok(API.get_or_set(py, api))
}

/// The `ImportError` of a table that is not NumPy's (one body for the
/// messages: cold).
#[cold]
#[inline(never)]
fn table_error(message: &str) -> PyErr {
    PythonKind::Import.new_err(message.to_owned())
}

/// The table, if it has been read already.
#[inline]
pub(crate) fn known(py: Python<'_>) -> Option<&'static Api> {
    API.get(py)
}

/// Whether `obj` is a type made by C code (not a heap type: no Python class
/// statement makes one).
fn is_static_type(obj: &Bound<'_, PyAny>) -> bool {
    let Ok(ty) = obj.cast::<pyo3::types::PyType>() else {
        return false;
    };
    // SAFETY: attached; a live type object.
    let flags = unsafe { ffi::PyType_GetFlags(ty.as_type_ptr()) };
    flags & ffi::Py_TPFLAGS_HEAPTYPE == 0
}
