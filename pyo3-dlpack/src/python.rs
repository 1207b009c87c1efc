//! Generic Python helpers: integers into the protocol's fixed-width fields
//! (`stream`, `max_version`, device codes: one rule and one message for a
//! value that does not fit, in both directions), optional attributes,
//! modules already imported, type names for messages.

use std::ops::RangeInclusive;

use pyo3::exceptions::{PyAttributeError, PyException, PyMemoryError, PyRecursionError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::DLPackError;
use crate::error::ArgumentError;
use crate::error::PythonKind;

/// `result`'s value, or `None` with its error dropped: out of line, by
/// [`discard`], so that a unit ignoring errors this way carries no copy of
/// `PyErr`'s drop code of its own (some 300 bytes each).
#[inline]
pub(crate) fn ok<T>(result: PyResult<T>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(err) => {
            discard(err);
            None
        }
    }
}

/// Drops an error that is not raised: the crate's one copy of the drop code
/// for the callers of [`ok`].
#[cold]
#[inline(never)]
pub(crate) fn discard(err: PyErr) {
    drop(err);
}

/// Clears the exception a failed C API call set, which the caller replaces
/// with its own answer: its `PyErr` dropped by [`discard`], so that the
/// units of its callers carry no copy of `PyErr`'s drop code.
#[cold]
#[inline(never)]
pub(crate) fn clear_error(py: Python<'_>) {
    if let Some(err) = PyErr::take(py) {
        discard(err);
    }
}

/// `err` where it is an interruption ([`is_interruption`]), to be raised
/// as it is; otherwise `None`, `err` dropped here (its callers, which make
/// another error of it, carry no copy of `PyErr`'s drop code: see [`ok`]).
#[cfg(feature = "pickle")]
#[cold]
#[inline(never)]
pub(crate) fn interruption(py: Python<'_>, err: PyErr) -> Option<PyErr> {
    is_interruption(py, &err).then_some(err)
}

/// `err` as `{err}` shows it (`TypeError: message`), for the message of
/// another error, `err` dropped here; or `err` itself where it is an
/// interruption ([`interruption`]).
#[cfg(feature = "pickle")]
#[cold]
#[inline(never)]
pub(crate) fn error_text(py: Python<'_>, err: PyErr) -> PyResult<String> {
    if is_interruption(py, &err) {
        return Err(err);
    }
    Ok(format!("{err}"))
}

/// `value`, a Python `int` (checked by the caller), as a `T` within `range`;
/// otherwise [`ArgumentError::OutOfRange`] naming `what` (an `OverflowError`,
/// as NumPy raises for `max_version=(2**70, 0)`). A thin generic shell: the
/// error is built by one shared, out-of-line function.
#[inline]
pub(crate) fn int_in_range<T>(
    value: &Bound<'_, PyAny>,
    range: RangeInclusive<T>,
    what: impl FnOnce() -> String,
) -> Result<T, DLPackError>
where
    T: TryFrom<i64> + Into<i64> + Copy,
{
    let (min, max) = ((*range.start()).into(), (*range.end()).into());
    let wide = value.extract::<i64>().ok();
    if let Some(Ok(fits)) = wide
        .filter(|wide| (min..=max).contains(wide))
        .map(T::try_from)
    {
        return Ok(fits);
    }
    Err(out_of_range(value, what(), min, max))
}

/// The error of [`int_in_range`].
#[cold]
#[inline(never)]
fn out_of_range(value: &Bound<'_, PyAny>, what: String, min: i64, max: i64) -> DLPackError {
    ArgumentError::OutOfRange {
        what,
        min,
        max,
        found: match shown(value, value.str()) {
            Ok(text) => text,
            Err(interruption) => return interruption.into(),
        },
    }
    .into()
}

/// Whether `err` is about the program rather than the value at hand: a
/// `KeyboardInterrupt` or `SystemExit` (no `Exception`), a `MemoryError`, a
/// `RecursionError`. Such an error is raised as it is, never made the error
/// of an argument.
pub(crate) fn is_interruption(py: Python<'_>, err: &PyErr) -> bool {
    !err.is_instance_of::<PyException>(py)
        || err.is_instance_of::<PyMemoryError>(py)
        || err.is_instance_of::<PyRecursionError>(py)
}

/// `text` (what `obj.str()` or `obj.repr()` returned) for a message: where
/// it raised, `<unprintable T object>`, the failure dropped (PyO3's
/// `Display` would report it on stderr as unraisable), unless the failure
/// is an interruption ([`is_interruption`]), returned to be raised instead.
pub(crate) fn shown(
    obj: &Bound<'_, PyAny>,
    text: PyResult<Bound<'_, PyString>>,
) -> PyResult<String> {
    match text {
        Ok(text) => Ok(text.to_string_lossy().into_owned()),
        Err(err) if is_interruption(obj.py(), &err) => Err(err),
        Err(_) => {
            let type_name = obj
                .get_type()
                .name()
                .map_or_else(|_| "?".into(), |name| name.to_string_lossy().into_owned());
            Ok(format!("<unprintable {type_name} object>"))
        }
    }
}

/// `str(obj)` for the message of another error (see [`shown`]; an
/// interruption while it is made is dropped for that error).
pub(crate) fn text_of(obj: &Bound<'_, PyAny>) -> String {
    shown(obj, obj.str()).unwrap_or_else(|_| "<unprintable object>".into())
}

/// `obj.name`, `None` if it has no such attribute; other errors propagate.
pub(crate) fn optional_attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj.getattr(name) {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.is_instance_of::<PyAttributeError>(obj.py()) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The module `name` if it is imported (in `sys.modules`), without
/// importing it: one dictionary lookup, no call of the import machinery
/// (`py.import("sys")` and a lookup cost about 1.5 µs, per import of every
/// tensor that asks whether torch is there).
pub(crate) fn imported_module<'py>(
    py: Python<'py>,
    name: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyAny>> {
    // SAFETY: attached; a borrowed reference to the interpreter's module
    // dictionary (never NULL once the interpreter runs), which lives as long
    // as the interpreter.
    let modules = unsafe { pyo3::ffi::PyImport_GetModuleDict() };
    // SAFETY: `modules` is a live object (above), borrowed for this call.
    let modules = unsafe { Borrowed::from_ptr_or_opt(py, modules) }?;
    modules.cast::<PyDict>().ok()?.get_item(name).ok().flatten()
}

/// The name of `obj`'s type, for messages (`object` if it has none).
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".into(), |n| format!("{n}"))
}

/// `module.QualName` of `obj`'s type (`numpy.ndarray`, `torch.Tensor`), for
/// messages; the bare name where the module is not a string.
pub(crate) fn qualified_type_name(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type();
    let qualname = ty
        .qualname()
        .map_or_else(|_| type_name(obj), |name| format!("{name}"));
    match ty.module() {
        Ok(module) => format!("{module}.{qualname}"),
        Err(_) => qualname,
    }
}

/// Imports nested in one another on one thread, at most: a producer whose
/// `__dlpack__` imports a tensor (a wrapper of another producer) nests one;
/// no real chain nests more than a few. Each level costs the stack about
/// 11 KB unoptimised (measured: frames of this crate, PyO3 and CPython's
/// call of the method), so 32 levels fit a 512 KiB thread stack.
const MAX_NESTED_IMPORTS: u32 = 32;

thread_local! {
    static NESTED_IMPORTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// One level of recursion, held while an import runs a producer's Python
/// code (`__dlpack__`, `__dlpack_device__`, the other protocols'
/// attributes), which may import again (a `__dlpack__` that imports itself).
/// The interpreter counts Python frames, not the Rust frames of each level:
/// unbounded, such recursion overflowed the C stack (a crash) before
/// Python's `RecursionError` on CPython 3.12 and 3.13, and on 3.11 in
/// unoptimised builds. So a level counts once in the interpreter's own
/// count (`Py_EnterRecursiveCall`: the recursion limit on 3.11, the
/// separate C recursion count on 3.12 and 3.13, the real stack on 3.14)
/// and in [`MAX_NESTED_IMPORTS`]: either raises `RecursionError`.
/// Dropped where it was made, still attached.
pub(crate) struct RecursionLevel<'py>(std::marker::PhantomData<Python<'py>>);

impl<'py> RecursionLevel<'py> {
    /// Enters a level, or `RecursionError`.
    pub(crate) fn enter(py: Python<'py>) -> PyResult<Self> {
        let depth = NESTED_IMPORTS.with(|depth| depth.get());
        if depth >= MAX_NESTED_IMPORTS {
            return Err(PythonKind::Recursion.new_err(format!(
                "maximum recursion depth exceeded while importing a tensor: \
                 {MAX_NESTED_IMPORTS} imports nested in one another (a __dlpack__ that imports itself?)"
            )));
        }
        // SAFETY: attached (`py`); the message is a static NUL-terminated string.
        let refused =
            unsafe { pyo3::ffi::Py_EnterRecursiveCall(c" while importing a tensor".as_ptr()) };
        if refused != 0 {
            return Err(PyErr::fetch(py));
        }
        NESTED_IMPORTS.with(|nested| nested.set(depth + 1));
        Ok(Self(std::marker::PhantomData))
    }
}

impl Drop for RecursionLevel<'_> {
    fn drop(&mut self) {
        NESTED_IMPORTS.with(|depth| depth.set(depth.get() - 1));
        // SAFETY: pairs with the successful `Py_EnterRecursiveCall` of
        // `enter`, on the same thread (the level holds a `Python<'py>`, so
        // it is neither `Send` nor outlives the attachment).
        unsafe { pyo3::ffi::Py_LeaveRecursiveCall() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_keeps_the_value_and_drops_the_error() {
        assert_eq!(ok(Ok::<_, PyErr>(7)), Some(7));
        assert_eq!(ok(Err::<i32, _>(PyAttributeError::new_err("gone"))), None);
    }
}
