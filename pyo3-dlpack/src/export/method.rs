//! `DLPackTensor.__dlpack__` as a method of CPython's own fast calling
//! convention (`METH_FASTCALL | METH_KEYWORDS`), its keywords read here.
//!
//! Every consumer calls `__dlpack__` with keywords only (NumPy sends
//! `dl_device`, `copy` and `max_version`, torch and JAX `max_version` and
//! `stream`), so recognising their names is most of the cost of the call:
//! PyO3's general parser compares each against every parameter as UTF-8
//! (measured: half of the method's instructions). Here a name is recognised
//! by identity with the interned parameter names (the keywords of calls
//! written in Python are interned), else by its characters. The values go
//! through the same parse ([`ExportRequest::from_python`]) as before, and
//! a call that is not of this shape raises PyO3's own `TypeError` messages.
//!
//! Not in builds for the limited API of Python 3.9, which lacks
//! `METH_FASTCALL`: there the method is PyO3's (see `tensor.rs`).

use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyString, PyTuple, PyType};

use crate::DLPackTensor;
use crate::export::plan::ExportRequest;

/// `PyMethodDef` holds raw pointers, to `'static` strings and a function.
struct MethodDef(ffi::PyMethodDef);

// SAFETY: the definition is immutable and its pointers are to `'static`
// data and code; CPython only reads it.
unsafe impl Sync for MethodDef {}

/// `__text_signature__` then the docstring, in CPython's format.
const DOC: &std::ffi::CStr = c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\nExports the tensor as a DLPack capsule (see the type's documentation).";

static DEFINITION: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__dlpack__".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords: dlpack,
    },
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    ml_doc: DOC.as_ptr() as *const c_char,
});

/// The method descriptor of `__dlpack__` for `class` (`DLPackTensor`): what
/// CPython makes of a method defined in C, bound to instances of `class`
/// and its subclasses, called without a bound-method object.
pub(crate) fn descriptor<'py>(class: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
    let definition = std::ptr::from_ref(&DEFINITION.0).cast_mut();
    // SAFETY: attached; `class` is a live type; the definition is 'static
    // and never written (CPython only reads it despite the `*mut`).
    let descriptor = unsafe { ffi::PyDescr_NewMethod(class.as_type_ptr(), definition) };
    // SAFETY: a new reference, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(class.py(), descriptor) }
}

/// The method: `slf` is a `DLPackTensor` (the descriptor checks), `args`
/// holds the positional arguments then the values of `kwnames`.
unsafe extern "C" fn dlpack(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached to the interpreter.
    let py = unsafe { Python::assume_attached() };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the calling convention's contract: `slf` is live,
        // `args` holds `nargs + len(kwnames)` live objects, `kwnames` is
        // NULL or a tuple of strings.
        unsafe { call(py, slf, args, nargsf, kwnames) }
    }));
    // A panic of user code (`synchronize`, a `Drop`) is PyO3's
    // `PanicException` with its message, as PyO3's own methods raise it.
    let result = result.unwrap_or_else(|payload| Err(crate::error::panic_error(payload)));
    match result {
        Ok(capsule) => capsule.into_ptr(),
        Err(err) => {
            err.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// The parameters, in the order of [`Keywords`]'s fields.
use super::args::{NAMES, keyword_index, positional, unexpected};

/// The keyword values of one call, borrowed from its arguments.
#[derive(Default)]
struct Keywords<'a, 'py> {
    values: [Option<Borrowed<'a, 'py, PyAny>>; 4],
}

/// # Safety
///
/// As for [`dlpack`]: attached, `slf` live, `args` holding
/// `nargs + len(kwnames)` live objects, `kwnames` NULL or a tuple of `str`.
unsafe fn call<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Bound<'py, PyCapsule>> {
    // SAFETY: `slf` is live for the call.
    let slf = unsafe { Borrowed::from_ptr(py, slf) };
    let tensor = slf.cast::<DLPackTensor>()?;
    let nargs = positional_count(nargsf);
    if nargs > 0 {
        return Err(positional(nargs));
    }
    let mut keywords = Keywords::default();
    if !kwnames.is_null() {
        // SAFETY: a live tuple for the call.
        let names = unsafe { Borrowed::from_ptr(py, kwnames) };
        // SAFETY: CPython passes a tuple of `str` as `kwnames`.
        let names = unsafe { names.cast_unchecked::<PyTuple>() };
        // SAFETY: `args` holds `nargs` (0) positional values, then one per
        // name, live for the call.
        let values = unsafe { std::slice::from_raw_parts(args, names.len()) };
        let interned = interned(py);
        for (name, &value) in names.iter_borrowed().zip(values) {
            // SAFETY: a live object for the call (above).
            let value = unsafe { Borrowed::from_ptr(py, value) };
            keywords.set(interned, &name, value)?;
        }
    }
    let [stream, max_version, dl_device, copy] = keywords.values;
    let request = ExportRequest::from_python(
        stream.as_deref(),
        max_version.as_deref(),
        dl_device.as_deref(),
        copy.as_deref(),
    )?;
    tensor.get().export(py, &request)
}

impl<'a, 'py> Keywords<'a, 'py> {
    /// Records `value` for the parameter `name`.
    fn set(
        &mut self,
        interned: &[Py<PyString>; 4],
        name: &Bound<'py, PyAny>,
        value: Borrowed<'a, 'py, PyAny>,
    ) -> PyResult<()> {
        let index = parameter(interned, name).ok_or_else(|| unexpected(name))?;
        let slot = &mut self.values[index];
        if slot.is_some() {
            return Err(PyTypeError::new_err(format!(
                "DLPackTensor.__dlpack__() got multiple values for argument '{}'",
                NAMES[index]
            )));
        }
        *slot = Some(value);
        Ok(())
    }
}

/// The parameter names as interned strings, made once.
fn interned(py: Python<'_>) -> &[Py<PyString>; 4] {
    static INTERNED: PyOnceLock<[Py<PyString>; 4]> = PyOnceLock::new();
    INTERNED.get_or_init(py, || NAMES.map(|name| PyString::intern(py, name).unbind()))
}

/// The index of the parameter `name` is, by identity with the interned
/// names first, else by its characters.
fn parameter(interned: &[Py<PyString>; 4], name: &Bound<'_, PyAny>) -> Option<usize> {
    if let Some(index) = interned
        .iter()
        .position(|known| known.as_ptr() == name.as_ptr())
    {
        return Some(index);
    }
    keyword_index(name)
}

/// `PyVectorcall_NARGS`, which the limited API has only from 3.12: the
/// count without the `PY_VECTORCALL_ARGUMENTS_OFFSET` bit (the top bit).
fn positional_count(nargsf: ffi::Py_ssize_t) -> usize {
    const ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);
    nargsf as usize & !ARGUMENTS_OFFSET
}
