//! The NumPy C API, for [`Native`](super::Native) NumPy results: an array
//! made directly over the exported memory, its base object owning the value.
//! No link-time NumPy dependency: the function table is the `_ARRAY_API`
//! capsule NumPy itself publishes (what `import_array()` reads), and only
//! four entries of it are used, whose slots NumPy keeps stable across 1.x
//! and 2.x (`__multiarray_api.h`: `PyArray_Type` 2, `PyArray_DescrFromType`
//! 45, `PyArray_NewFromDescr` 94, `PyArray_SetBaseObject` 282).

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyImportError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::error::ExportError;
use crate::export::IntoDLPack;
use crate::export::native::{CatchDrop, Framework, through_from_dlpack};
use crate::{DLPackError, DataType, DataTypeCode, DeviceType, TensorInfo};

/// The four functions of NumPy's C API this module calls, read once from
/// its table (whose functions live as long as NumPy, never unloaded).
struct Api {
    array_type: usize,
    descr_from_type: DescrFromType,
    new_from_descr: NewFromDescr,
    set_base: SetBaseObject,
}

type DescrFromType = unsafe extern "C" fn(c_int) -> *mut ffi::PyObject;
type NewFromDescr = unsafe extern "C" fn(
    *mut ffi::PyTypeObject,
    *mut ffi::PyObject,
    c_int,
    *const ffi::Py_ssize_t,
    *const ffi::Py_ssize_t,
    *mut c_void,
    c_int,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;
type SetBaseObject = unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> c_int;

/// `NPY_ARRAY_WRITEABLE`.
const WRITEABLE: c_int = 0x0400;

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

/// The functions, read once from `numpy._core.multiarray._ARRAY_API`
/// (NumPy 2) or `numpy.core.multiarray._ARRAY_API` (NumPy 1).
fn api(py: Python<'_>) -> PyResult<&'static Api> {
    static API: PyOnceLock<Api> = PyOnceLock::new();
    API.get_or_try_init(py, || {
        let module = py
            .import("numpy._core.multiarray")
            .or_else(|_| py.import("numpy.core.multiarray"))?;
        let capsule = module.getattr("_ARRAY_API")?.cast_into::<PyCapsule>()?;
        let table = capsule
            .pointer_checked(None)
            .map_err(|_| PyImportError::new_err("numpy's _ARRAY_API capsule holds no table"))?
            .as_ptr()
            .cast::<*const c_void>()
            .cast_const();
        let read = |index| {
            // SAFETY: `table` is NumPy's `PyArray_API` (the capsule `import_array` reads).
            let entry = unsafe { slot(table, index) };
            if entry.is_null() {
                return Err(PyImportError::new_err(
                    "numpy's C API table has a NULL entry",
                ));
            }
            Ok(entry)
        };
        let (array_type, descr, new, base) = (read(2)?, read(45)?, read(94)?, read(282)?);
        Ok(Api {
            array_type: array_type as usize,
            // SAFETY: slot 45 is `PyArray_DescrFromType`, of this signature
            // (`__multiarray_api.h`); function and data pointers have one size here.
            descr_from_type: unsafe { std::mem::transmute::<*const c_void, DescrFromType>(descr) },
            // SAFETY: slot 94 is `PyArray_NewFromDescr`, of this signature.
            new_from_descr: unsafe { std::mem::transmute::<*const c_void, NewFromDescr>(new) },
            // SAFETY: slot 282 is `PyArray_SetBaseObject`, of this signature.
            set_base: unsafe { std::mem::transmute::<*const c_void, SetBaseObject>(base) },
        })
    })
}

/// NumPy's type number for a dtype it has (`None` for bfloat16, float8,
/// sub-byte and multi-lane types, which go through `numpy.from_dlpack`).
fn type_number(dtype: DataType) -> Option<c_int> {
    if dtype.lanes != 1 {
        return None;
    }
    // NPY_LONG is 64 bits where C's long is (LP64), NPY_LONGLONG elsewhere.
    let (long, ulong) = if size_of::<std::ffi::c_long>() == 8 {
        (7, 8)
    } else {
        (9, 10)
    };
    Some(match (dtype.code, dtype.bits) {
        (DataTypeCode::BOOL, 8) => 0,
        (DataTypeCode::INT, 8) => 1,
        (DataTypeCode::UINT, 8) => 2,
        (DataTypeCode::INT, 16) => 3,
        (DataTypeCode::UINT, 16) => 4,
        (DataTypeCode::INT, 32) => 5,
        (DataTypeCode::UINT, 32) => 6,
        (DataTypeCode::INT, 64) => long,
        (DataTypeCode::UINT, 64) => ulong,
        (DataTypeCode::FLOAT, 16) => 23,
        (DataTypeCode::FLOAT, 32) => 11,
        (DataTypeCode::FLOAT, 64) => 12,
        (DataTypeCode::COMPLEX, 64) => 14,
        (DataTypeCode::COMPLEX, 128) => 15,
        _ => return None,
    })
}

/// `value` as a `numpy.ndarray` over its own memory: shape and strides from
/// its description, writable unless the description says otherwise (or
/// cannot say: unknown writability is read-only, as NumPy makes it), the
/// value dropped when the array (its base) is freed.
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    let described = value.tensor_info().map(TensorInfo::detach);
    let info = match described {
        Ok(ref info) => info,
        Err(err) => return Err(err.into()),
    };
    if info.device().device_type != DeviceType::CPU {
        return Err(DLPackError::from(ExportError::FrameworkDevice {
            array: "numpy.ndarray",
            device: info.device(),
        })
        .into());
    }
    let Some(number) = type_number(info.dtype()) else {
        return through_from_dlpack(py, value, Framework::NumPy);
    };
    let api = api(py)?;
    let itemsize = info.dtype().itemsize() as i64;
    let (shape, strides) = info.dims_slices();
    let ndim = shape.len();
    // Extents, then strides in bytes (within the checked reach of the tensor,
    // so within isize); on the stack for up to 8 dimensions.
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
        dims[ndim + i] = (stride * itemsize) as ffi::Py_ssize_t;
    }
    let (dims, byte_strides) = dims.split_at(ndim);
    let flags = if info.is_read_only() { 0 } else { WRITEABLE };
    let data = info.data_ptr();
    // The owner: the value, dropped (without unwinding into C) with the capsule.
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
            api.array_type as *mut ffi::PyTypeObject,
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
