//! The keyword arguments of `__dlpack__`, parsed into an [`ExportRequest`].
//!
//! Malformed values raise `ValueError` ([`ArgumentError`]), and integers
//! outside their field's range `OverflowError` (as NumPy's `__dlpack__`
//! does), never `TypeError` (see `plan.rs`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString, PyTuple};

use crate::error::ArgumentError;
use crate::export::plan::ExportRequest;
use crate::python::int_in_range;
use crate::{DLPackError, Device, DeviceType};

/// `__dlpack__`'s keyword parameters, in the order of [`ExportRequest::from_python`].
pub(crate) const NAMES: [&str; 4] = ["stream", "max_version", "dl_device", "copy"];

/// The parameter a keyword names, by its characters (a `str` subclass's own
/// methods are not called).
pub(crate) fn keyword_index(name: &Bound<'_, PyAny>) -> Option<usize> {
    let text = name.cast::<PyString>().ok()?.to_cow().ok()?;
    NAMES.iter().position(|known| *known == text)
}

/// The error for an unknown keyword, naming it by its characters (a `str`
/// subclass's own `__str__` is not called: it could raise, and the error
/// would go to stderr as unraisable).
pub(crate) fn unexpected(name: &Bound<'_, PyAny>) -> PyErr {
    let name = name
        .cast::<PyString>()
        .map_or_else(|_| "?".into(), |name| name.to_string_lossy().into_owned());
    PyTypeError::new_err(format!(
        "DLPackTensor.__dlpack__() got an unexpected keyword argument '{name}'"
    ))
}

/// The error for positional arguments (every parameter is keyword-only).
pub(crate) fn positional(nargs: usize) -> PyErr {
    let was = if nargs == 1 { "was" } else { "were" };
    PyTypeError::new_err(format!(
        "DLPackTensor.__dlpack__() takes 0 positional arguments but {nargs} {was} given"
    ))
}

/// The request of a `__dlpack__(*args, **kwargs)` call, for builds without
/// the fast calling convention (`method.rs`: the limited API before 3.10),
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
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(ArgumentError::NotInteger {
            name,
            found: describe(value),
        }
        .into());
    }
    Ok(())
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
            let first = tuple.get_borrowed_item(0).ok().filter(is_exact_int);
            let second = tuple.get_borrowed_item(1).ok().filter(is_exact_int);
            if let (Some(first), Some(second)) = (first, second) {
                return Ok([first.to_owned(), second.to_owned()]);
            }
        }
    }
    let wrong = || ArgumentError::NotPair {
        name,
        form,
        found: describe(value),
    };
    // A tuple (subclasses too), as NumPy requires: not bytes, a range or a list.
    let tuple = value.cast::<PyTuple>().map_err(|_| wrong())?;
    if tuple.len() != 2 {
        return Err(wrong().into());
    }
    let item = |i| {
        let item = tuple.get_item(i).map_err(|_| wrong())?;
        int(&item, name).map_err(|_| wrong())?;
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
        let item = tuple.get_borrowed_item(index).ok().filter(is_exact_int)?;
        item.extract::<u32>().ok()
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
            found: describe(value),
        }
        .into()),
    }
}

fn describe(value: &Bound<'_, PyAny>) -> String {
    let repr = value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into());
    let type_name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{repr} ({type_name})")
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
