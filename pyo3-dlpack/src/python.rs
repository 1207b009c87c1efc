//! Generic Python helpers: integers into the protocol's fixed-width fields
//! (`stream`, `max_version`, device codes: one rule and one message for a
//! value that does not fit, in both directions), optional attributes,
//! modules already imported, type names for messages.

use std::ops::RangeInclusive;

use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::DLPackError;
use crate::error::ArgumentError;

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
    if let Ok(wide) = value.extract::<i64>()
        && (min..=max).contains(&wide)
        && let Ok(fits) = T::try_from(wide)
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
        found: value
            .str()
            .map_or_else(|_| "<unprintable>".into(), |s| s.to_string()),
    }
    .into()
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
        .map_or_else(|_| "object".into(), |n| n.to_string())
}

/// `module.QualName` of `obj`'s type (`numpy.ndarray`, `torch.Tensor`), for
/// messages; the bare name where the module is not a string.
pub(crate) fn qualified_type_name(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type();
    let qualname = ty
        .qualname()
        .map_or_else(|_| type_name(obj), |name| name.to_string());
    match ty.module() {
        Ok(module) => format!("{module}.{qualname}"),
        Err(_) => qualname,
    }
}
