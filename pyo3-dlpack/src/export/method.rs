//! `DLPackTensor.__dlpack__`: the call, and its keyword arguments parsed
//! into an [`ExportRequest`].
//!
//! Malformed values raise `ValueError` ([`ArgumentError`]), and integers
//! outside their field's range `OverflowError` (as NumPy's `__dlpack__`
//! does), never `TypeError` (see `plan.rs`).
//!
//! The method is one of CPython's fast calling convention
//! (`METH_FASTCALL | METH_KEYWORDS`, [`fastcall`]). Every consumer calls
//! `__dlpack__` with keywords only (NumPy sends `dl_device`, `copy` and
//! `max_version`, torch and JAX `max_version` and `stream`), so recognising
//! their names is most of the cost of the call: PyO3's general parser
//! compares each against every parameter as UTF-8 (measured: half of the
//! method's instructions). There a name is recognised by identity with the
//! interned parameter names (the keywords of calls written in Python are
//! interned), else by its characters, and a call that is not of this shape
//! raises PyO3's own `TypeError` messages. Builds for the limited API of
//! Python 3.9 lack `METH_FASTCALL`: there the method takes a tuple and a
//! dict (`METH_VARARGS | METH_KEYWORDS`), parsed by `request_of_call` with
//! the same errors. Either is the one `__dlpack__` of the type, a class
//! attribute (`tensor.rs`).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyInt, PyString, PyTuple};

use crate::error::ArgumentError;
use crate::error::PythonKind;
use crate::export::plan::ExportRequest;
use crate::python::int_in_range;
use crate::{DLPackError, DLPackTensor, Device, DeviceType};

/// `__dlpack__`'s keyword parameters, in the order of [`ExportRequest::from_python`].
pub(crate) const NAMES: [&str; 4] = ["stream", "max_version", "dl_device", "copy"];

/// The parameter a keyword names, by its characters (a `str` subclass's own
/// methods are not called).
pub(crate) fn keyword_index(name: &Bound<'_, PyAny>) -> Option<usize> {
    let text = crate::python::ok(name.cast::<PyString>().ok()?.to_cow())?;
    NAMES.iter().position(|known| *known == text)
}

/// The error for an unknown keyword, naming it by its characters (a `str`
/// subclass's own `__str__` is not called: it could raise, and the error
/// would go to stderr as unraisable).
pub(crate) fn unexpected(name: &Bound<'_, PyAny>) -> PyErr {
    let name = name
        .cast::<PyString>()
        .map_or_else(|_| "?".into(), |name| name.to_string_lossy().into_owned());
    PythonKind::Type.new_err(format!(
        "DLPackTensor.__dlpack__() got an unexpected keyword argument '{name}'"
    ))
}

/// The error for positional arguments (every parameter is keyword-only).
pub(crate) fn positional(nargs: usize) -> PyErr {
    let was = if nargs == 1 { "was" } else { "were" };
    PythonKind::Type.new_err(format!(
        "DLPackTensor.__dlpack__() takes 0 positional arguments but {nargs} {was} given"
    ))
}

/// The request of a `__dlpack__(*args, **kwargs)` call, for builds without
/// the fast calling convention (the limited API before 3.10),
/// with the same errors (PyO3's own parsing would call an unknown keyword's
/// `__str__`).
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
pub(crate) fn request_of_call(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<ExportRequest> {
    if !args.is_empty() {
        return Err(positional(args.len()));
    }
    let mut values: [Option<Bound<'_, PyAny>>; 4] = Default::default();
    for (name, value) in kwargs.into_iter().flat_map(|kwargs| kwargs.iter()) {
        let index = keyword_index(&name).ok_or_else(|| unexpected(&name))?;
        values[index] = Some(value);
    }
    let [stream, max_version, dl_device, copy] = &values;
    Ok(ExportRequest::from_python(
        stream.as_ref(),
        max_version.as_ref(),
        dl_device.as_ref(),
        copy.as_ref(),
    )?)
}

impl ExportRequest {
    /// Parses the keyword values of `__dlpack__`. Inlined: a request
    /// returned through memory is read back with wide loads that stall on
    /// store forwarding (measured on `np.from_dlpack`).
    #[inline(always)]
    pub(crate) fn from_python(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> Result<Self, DLPackError> {
        Ok(Self {
            max_version: not_none(max_version)
                .map(|v| {
                    if let Some(pair) = exact_version(v) {
                        return Ok(pair);
                    }
                    let [major, minor] = int_pair(v, "max_version", "(major, minor)")?;
                    let version = 0..=u32::MAX;
                    Ok::<_, DLPackError>((
                        int_in_range(&major, version.clone(), || {
                            "the major of max_version".into()
                        })?,
                        int_in_range(&minor, version, || "the minor of max_version".into())?,
                    ))
                })
                .transpose()?,
            stream: not_none(stream)
                .map(|v| {
                    int(v, "stream")?;
                    int_in_range(v, i64::MIN..=i64::MAX, || "stream".into())
                })
                .transpose()?,
            dl_device: not_none(dl_device)
                .map(|v| {
                    let [device_type, id] = int_pair(v, "dl_device", "(device_type, device_id)")?;
                    let device_type = int_in_range(&device_type, i32::MIN..=i32::MAX, || {
                        "the device_type of dl_device".into()
                    })?;
                    let id = int_in_range(&id, i32::MIN..=i32::MAX, || {
                        "the device_id of dl_device".into()
                    })?;
                    Ok::<_, DLPackError>(Device::new(DeviceType::from_code(device_type), id))
                })
                .transpose()?,
            copy: not_none(copy).map(boolean).transpose()?,
        })
    }
}

fn not_none<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.filter(|v| !v.is_none())
}

/// `Ok` for any `int` (or subclass, such as torch's and JAX's `IntEnum`
/// device types), but not `bool`.
fn int(value: &Bound<'_, PyAny>, name: &'static str) -> Result<(), DLPackError> {
    if !is_int(value) {
        return Err(ArgumentError::NotInteger {
            name,
            found: describe(value)?,
        }
        .into());
    }
    Ok(())
}

/// Whether `value` is an `int` (not a `bool`).
fn is_int(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>()
}

/// The two integers of a 2-sequence (not yet checked for range).
fn int_pair<'py>(
    value: &Bound<'py, PyAny>,
    name: &'static str,
    form: &'static str,
) -> Result<[Bound<'py, PyAny>; 2], DLPackError> {
    // Fast path: the exact 2-tuple of exact ints every consumer sends.
    if let Ok(tuple) = value.cast_exact::<PyTuple>() {
        if tuple.len() == 2 {
            let first = crate::python::ok(tuple.get_borrowed_item(0)).filter(is_exact_int);
            let second = crate::python::ok(tuple.get_borrowed_item(1)).filter(is_exact_int);
            if let (Some(first), Some(second)) = (first, second) {
                return Ok([first.to_owned(), second.to_owned()]);
            }
        }
    }
    let wrong = || -> DLPackError {
        match describe(value) {
            Ok(found) => ArgumentError::NotPair { name, form, found }.into(),
            Err(interruption) => interruption,
        }
    };
    // A tuple (subclasses too), as NumPy requires: not bytes, a range or a list.
    let tuple = value.cast::<PyTuple>().map_err(|_| wrong())?;
    if tuple.len() != 2 {
        return Err(wrong());
    }
    let item = |i| {
        let item = crate::python::ok(tuple.get_item(i)).ok_or_else(wrong)?;
        if !is_int(&item) {
            return Err(wrong());
        }
        Ok::<_, DLPackError>(item)
    };
    Ok([item(0)?, item(1)?])
}

/// `max_version` as every consumer sends it, an exact tuple of two exact
/// `int`s that fit a `u32`, read without copies; `None` sends anything else
/// (and every error) through the general parse.
fn exact_version(value: &Bound<'_, PyAny>) -> Option<(u32, u32)> {
    if let Some(pair) = seen::version(value) {
        return Some(pair);
    }
    let tuple = value.cast_exact::<PyTuple>().ok()?;
    if tuple.len() != 2 {
        return None;
    }
    let part = |index| {
        let item = crate::python::ok(tuple.get_borrowed_item(index)).filter(is_exact_int)?;
        crate::python::ok(item.extract::<u32>())
    };
    let pair = (part(0)?, part(1)?);
    seen::remember(tuple, pair);
    Some(pair)
}

/// `max_version` tuples already read, recognised by identity: a consumer
/// passes the same constant tuple on every call (NumPy's C code, the
/// constants of Python code). Each is held forever (a reference never
/// released), so its address names that one tuple, and an exact tuple of
/// exact `int`s never changes: what was read of it stays true. A few slots,
/// each published once and never changed or freed, read with atomics only.
mod seen {
    use std::sync::atomic::{AtomicPtr, Ordering};

    use pyo3::prelude::*;
    use pyo3::types::PyTuple;

    struct Seen {
        address: usize,
        pair: (u32, u32),
    }

    static SLOTS: [AtomicPtr<Seen>; 4] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 4];

    /// The pair read before from this very tuple, if it is one of them.
    pub(super) fn version(value: &Bound<'_, PyAny>) -> Option<(u32, u32)> {
        let address = value.as_ptr() as usize;
        for slot in &SLOTS {
            let seen = slot.load(Ordering::Acquire);
            if seen.is_null() {
                return None;
            }
            // SAFETY: published slots point to leaked, never-changed `Seen`s.
            let seen = unsafe { &*seen };
            if seen.address == address {
                return Some(seen.pair);
            }
        }
        None
    }

    /// Remembers `tuple` (an exact tuple of two exact `int`s) read as `pair`,
    /// in a free slot; with none free, nothing.
    pub(super) fn remember(tuple: &Bound<'_, PyTuple>, pair: (u32, u32)) {
        if !SLOTS[SLOTS.len() - 1].load(Ordering::Acquire).is_null() {
            return; // Full (filled in order, never emptied).
        }
        let seen = Box::into_raw(Box::new(Seen {
            address: tuple.as_ptr() as usize,
            pair,
        }));
        for slot in &SLOTS {
            let published = slot.compare_exchange(
                std::ptr::null_mut(),
                seen,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if published.is_ok() {
                // Held forever: the address is never another object's.
                let _ = tuple.clone().unbind().into_ptr();
                return;
            }
        }
        // SAFETY: `seen` was never published, so this is its only owner.
        drop(unsafe { Box::from_raw(seen) });
    }
}

/// An exact `int` (not a subclass).
fn is_exact_int(value: &Borrowed<'_, '_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyInt>()
}

fn boolean(value: &Bound<'_, PyAny>) -> Result<bool, DLPackError> {
    match value.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(ArgumentError::NotBool {
            name: "copy",
            found: describe(value)?,
        }
        .into()),
    }
}

/// `repr(value) (type)` for a message, the type named with its module
/// unless it is a builtin (`np.True_ (numpy.bool)`, not `(bool)`); an
/// interruption while the `repr` is made is raised instead (see
/// [`crate::python::shown`]).
fn describe(value: &Bound<'_, PyAny>) -> Result<String, DLPackError> {
    let repr = crate::python::shown(value, value.repr())?;
    let ty = value.get_type();
    let name = crate::python::ok(ty.name()).map_or_else(|| "?".into(), |n| format!("{n}"));
    let type_name = match crate::python::ok(ty.module()) {
        Some(module) if crate::python::ok(module.to_cow()).is_some_and(|m| m != "builtins") => {
            format!("{module}.{name}")
        }
        _ => name,
    };
    Ok(format!("{repr} ({type_name})"))
}

/// `PyMethodDef` holds raw pointers, to `'static` strings and a function.
struct MethodDef(ffi::PyMethodDef);

// SAFETY: the definition is immutable and its pointers are to `'static`
// data and code; CPython only reads it.
unsafe impl Sync for MethodDef {}

/// `__text_signature__` then the docstring, in CPython's format.
const DOC: &std::ffi::CStr = c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\nExports the tensor as a DLPack capsule (see the type's documentation).";

/// The method: of the fast calling convention where the build has it, else
/// taking a tuple and a dict (the limited API of Python 3.9).
static DEFINITION: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__dlpack__".as_ptr(),
    #[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords: fastcall::dlpack,
    },
    #[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    #[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunctionWithKeywords: varargs::dlpack,
    },
    #[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
    ml_flags: ffi::METH_VARARGS | ffi::METH_KEYWORDS,
    ml_doc: DOC.as_ptr(),
});

/// The method descriptor of `__dlpack__` for `DLPackTensor` (and only it:
/// [`receiver`] relies on it): what CPython makes of a method defined in C,
/// bound to instances of the class and its subclasses, called without a
/// bound-method object. Every build has this one definition, so the type
/// and its stub have one `__dlpack__`.
pub(crate) fn descriptor(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let class = py.get_type::<DLPackTensor>();
    let definition = std::ptr::from_ref(&DEFINITION.0).cast_mut();
    // SAFETY: attached; `class` is a live type; the definition is 'static
    // and never written (CPython only reads it despite the `*mut`).
    let descriptor = unsafe { ffi::PyDescr_NewMethod(class.as_type_ptr(), definition) };
    // SAFETY: a new reference, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(class.py(), descriptor) }
}

/// The `DLPackTensor` a call of the method was made on.
///
/// On CPython the method descriptor ([`descriptor`], made for
/// `DLPackTensor` only) has checked it already: every way to call a method
/// defined in C goes through the descriptor's `descr_check`
/// (`PyObject_TypeCheck` against the class it was made for), when it is
/// called with its instance and when it is bound to one, and a bound
/// method's instance cannot be replaced. The check is not made twice (a
/// look-up of the class object and a type walk, about 25 instructions of a
/// `__dlpack__` call). Elsewhere (PyPy, GraalPy) it is made here.
#[cfg_attr(all(Py_LIMITED_API, not(Py_3_10)), allow(dead_code))]
fn receiver<'a, 'py>(slf: Borrowed<'a, 'py, PyAny>) -> PyResult<Borrowed<'a, 'py, DLPackTensor>> {
    #[cfg(not(any(PyPy, GraalPy)))]
    {
        // SAFETY: an instance of `DLPackTensor` or a subclass, checked by
        // CPython before the call (above).
        Ok(unsafe { slf.cast_unchecked::<DLPackTensor>() })
    }
    #[cfg(any(PyPy, GraalPy))]
    {
        Ok(slf.cast::<DLPackTensor>()?)
    }
}

/// What the C function returns for the call's `result`: the capsule, or
/// NULL with the error set. A panic of user code (`synchronize`, a `Drop`)
/// is PyO3's `PanicException` with its message, as PyO3's own methods raise
/// it.
fn returned(
    py: Python<'_>,
    result: std::thread::Result<PyResult<Bound<'_, PyCapsule>>>,
) -> *mut ffi::PyObject {
    let result = result.unwrap_or_else(|payload| Err(crate::error::panic_error(payload)));
    match result {
        Ok(capsule) => capsule.into_ptr(),
        Err(err) => {
            err.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// The method of the limited API before 3.10: positional arguments as a
/// tuple, keywords as a dict, parsed by [`request_of_call`].
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
mod varargs {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use pyo3::ffi;
    use pyo3::prelude::*;
    use pyo3::types::{PyCapsule, PyDict, PyTuple};

    use crate::DLPackTensor;

    /// The method: `slf` is a `DLPackTensor` (the descriptor checks), `args`
    /// a tuple, `kwargs` a dict or NULL.
    pub(super) unsafe extern "C" fn dlpack(
        slf: *mut ffi::PyObject,
        args: *mut ffi::PyObject,
        kwargs: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject {
        // SAFETY: CPython calls methods attached to the interpreter.
        let py = unsafe { Python::assume_attached() };
        // SAFETY: the calling convention's contract: `slf` and `args` are
        // live for the call, `kwargs` is NULL or live.
        let result = catch_unwind(AssertUnwindSafe(|| unsafe { call(py, slf, args, kwargs) }));
        super::returned(py, result)
    }

    /// # Safety
    ///
    /// As for [`dlpack`]: attached, `slf` and `args` live, `kwargs` NULL or
    /// live.
    unsafe fn call<'py>(
        py: Python<'py>,
        slf: *mut ffi::PyObject,
        args: *mut ffi::PyObject,
        kwargs: *mut ffi::PyObject,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // SAFETY: `slf` is live for the call.
        let slf = unsafe { Borrowed::from_ptr(py, slf) };
        let tensor = slf.cast::<DLPackTensor>()?;
        // SAFETY: `args` is live for the call.
        let args = unsafe { Borrowed::from_ptr(py, args) };
        let args = args.cast::<PyTuple>()?;
        // SAFETY: NULL (no keywords) or live for the call.
        let kwargs = unsafe { Borrowed::from_ptr_or_opt(py, kwargs) };
        let kwargs = kwargs.map(|kwargs| kwargs.cast::<PyDict>()).transpose()?;
        let request = super::request_of_call(&args, kwargs.as_deref())?;
        tensor.get().export(py, &request)
    }
}

/// The method of CPython's fast calling convention (see the module docs).
#[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
mod fastcall {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use pyo3::ffi;
    use pyo3::prelude::*;
    use pyo3::types::{PyCapsule, PyString, PyTuple};

    use crate::error::PythonKind;
    use crate::export::plan::ExportRequest;

    /// The method: `slf` is a `DLPackTensor` (the descriptor checks), `args`
    /// holds the positional arguments then the values of `kwnames`.
    pub(super) unsafe extern "C" fn dlpack(
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
        super::returned(py, result)
    }

    use super::{NAMES, keyword_index, positional, unexpected};

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
        let tensor = super::receiver(slf)?;
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
            // Without values `args` may be NULL (the calling convention allows
            // an empty `kwnames` beside it), which no slice may be made of.
            let values = match names.len() {
                0 => &[],
                // SAFETY: with names, `args` is non-NULL and holds `nargs` (0)
                // positional values, then one per name, live for the call.
                len => unsafe { std::slice::from_raw_parts(args, len) },
            };
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
                return Err(PythonKind::Type.new_err(format!(
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
        static INTERNED: crate::once::Cell<[Py<PyString>; 4]> = crate::once::Cell::new();
        if let Some(names) = INTERNED.get(py) {
            return names;
        }
        let names = NAMES.map(|name| PyString::intern(py, name).unbind());
        INTERNED.get_or_set(py, names)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_values_parse_or_raise_value_errors() {
        Python::attach(|py| {
            let eval = |code: &str| {
                py.eval(&std::ffi::CString::new(code).unwrap(), None, None)
                    .unwrap()
            };
            let req = ExportRequest::from_python(
                Some(&eval("-1")),
                Some(&eval("(1, 3)")),
                Some(&eval("(2, 1)")),
                Some(&eval("False")),
            )
            .unwrap();
            assert_eq!(req.stream, Some(-1));
            assert_eq!(req.max_version, Some((1, 3)));
            assert_eq!(req.dl_device, Some(Device::cuda(1)));
            assert_eq!(req.copy, Some(false));
            let none = eval("None");
            let req =
                ExportRequest::from_python(Some(&none), Some(&none), Some(&none), Some(&none))
                    .unwrap();
            assert_eq!(
                (req.stream, req.max_version, req.dl_device, req.copy),
                (None, None, None, None)
            );
            let bad = |stream: &str, max_version: &str, dl_device: &str, copy: &str| {
                ExportRequest::from_python(
                    Some(&eval(stream)),
                    Some(&eval(max_version)),
                    Some(&eval(dl_device)),
                    Some(&eval(copy)),
                )
                .unwrap_err()
                .to_string()
            };
            assert_eq!(
                bad("'x'", "None", "None", "None"),
                "stream must be an integer or None, got 'x' (str)"
            );
            assert_eq!(
                bad("None", "(1,)", "None", "None"),
                "max_version must be a (major, minor) tuple of integers, got (1,) (tuple)"
            );
            assert_eq!(
                bad("None", "None", "'cpu'", "None"),
                "dl_device must be a (device_type, device_id) tuple of integers, got 'cpu' (str)"
            );
            assert_eq!(
                bad("None", "None", "None", "1"),
                "copy must be True, False or None, got 1 (int)"
            );
            // Integers that do not fit their field: one message, an OverflowError.
            let out_of_range = |stream: &str, max_version: &str, dl_device: &str| {
                let err = ExportRequest::from_python(
                    Some(&eval(stream)),
                    Some(&eval(max_version)),
                    Some(&eval(dl_device)),
                    None,
                )
                .unwrap_err();
                assert!(matches!(
                    err,
                    DLPackError::InvalidArgument(ArgumentError::OutOfRange { .. })
                ));
                assert!(
                    PyErr::from(err.clone())
                        .is_instance_of::<pyo3::exceptions::PyOverflowError>(py)
                );
                err.to_string()
            };
            assert_eq!(
                out_of_range("2**70", "None", "None"),
                "stream must be an integer in range [-9223372036854775808, 9223372036854775807], got 1180591620717411303424"
            );
            assert_eq!(
                out_of_range("None", "(2**40, 0)", "None"),
                "the major of max_version must be an integer in range [0, 4294967295], got 1099511627776"
            );
            assert_eq!(
                out_of_range("None", "None", "(1, -2**31 - 1)"),
                "the device_id of dl_device must be an integer in range [-2147483648, 2147483647], got -2147483649"
            );
            let edge = ExportRequest::from_python(
                Some(&eval("2**63 - 1")),
                Some(&eval("(2**32 - 1, 0)")),
                Some(&eval("(-2**31, 2**31 - 1)")),
                None,
            )
            .unwrap();
            assert_eq!(edge.stream, Some(i64::MAX));
            assert_eq!(edge.max_version, Some((u32::MAX, 0)));
            assert_eq!(
                edge.dl_device,
                Some(Device::new(DeviceType::from_code(i32::MIN), i32::MAX))
            );
        });
    }
}
