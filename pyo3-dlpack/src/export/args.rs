//! The keyword arguments of `__dlpack__`, parsed into an [`ExportRequest`].
//!
//! Malformed values raise `ValueError` ([`ArgumentError`]), never
//! `TypeError` (see `plan.rs`).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PySequence, PyTuple};

use crate::error::ArgumentError;
use crate::export::plan::ExportRequest;
use crate::{DLPackError, Device, DeviceType};

impl ExportRequest {
    /// Parses the keyword values of `__dlpack__`.
    pub(crate) fn from_python(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> Result<Self, DLPackError> {
        Ok(Self {
            max_version: not_none(max_version)
                .map(|v| {
                    let (major, minor) = int_pair(v, "max_version", "(major, minor)")?;
                    let major =
                        u32::try_from(major).unwrap_or(if major < 0 { 0 } else { u32::MAX });
                    let minor =
                        u32::try_from(minor).unwrap_or(if minor < 0 { 0 } else { u32::MAX });
                    Ok::<_, DLPackError>((major, minor))
                })
                .transpose()?,
            stream: not_none(stream).map(|v| int(v, "stream")).transpose()?,
            dl_device: not_none(dl_device)
                .map(|v| {
                    let (device_type, id) = int_pair(v, "dl_device", "(device_type, device_id)")?;
                    let out_of_range = || ArgumentError::DeviceRange {
                        device_type,
                        device_id: id,
                    };
                    let device_type = i32::try_from(device_type).map_err(|_| out_of_range())?;
                    let id = i32::try_from(id).map_err(|_| out_of_range())?;
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

/// Any `int` (or subclass, such as torch's and JAX's `IntEnum` device types).
fn int(value: &Bound<'_, PyAny>, name: &'static str) -> Result<i64, DLPackError> {
    let found = || ArgumentError::NotInteger {
        name,
        found: describe(value),
    };
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(found().into());
    }
    value.extract::<i64>().map_err(|_| found().into())
}

fn int_pair(
    value: &Bound<'_, PyAny>,
    name: &'static str,
    form: &'static str,
) -> Result<(i64, i64), DLPackError> {
    // Fast path: the exact 2-tuple of exact ints every consumer sends.
    if let Ok(tuple) = value.cast_exact::<PyTuple>() {
        if tuple.len() == 2 {
            let first = tuple.get_borrowed_item(0).ok().and_then(|i| exact_int(&i));
            let second = tuple.get_borrowed_item(1).ok().and_then(|i| exact_int(&i));
            if let (Some(first), Some(second)) = (first, second) {
                return Ok((first, second));
            }
        }
    }
    let wrong = || ArgumentError::NotPair {
        name,
        form,
        found: describe(value),
    };
    let sequence = value.cast::<PySequence>().map_err(|_| wrong())?;
    if sequence.len().map_err(|_| wrong())? != 2 {
        return Err(wrong().into());
    }
    let item = |i| sequence.get_item(i).map_err(|_| wrong());
    let first = int(&item(0)?, name).map_err(|_| wrong())?;
    let second = int(&item(1)?, name).map_err(|_| wrong())?;
    Ok((first, second))
}

/// An exact `int` (not a subclass) that fits an `i64`.
fn exact_int(value: &Bound<'_, PyAny>) -> Option<i64> {
    value.cast_exact::<PyInt>().ok()?.extract::<i64>().ok()
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
        });
    }
}
