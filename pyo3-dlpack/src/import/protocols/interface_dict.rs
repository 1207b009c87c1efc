//! The dict of `__array_interface__` and `__cuda_array_interface__`: the
//! fields both share, read and checked (what a field must be is named in the
//! error when it is not).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};

use super::format::from_typestr;
use super::owner::{Keeper, Layout};
use crate::DLPackError;
use crate::error::{Interface, InterfaceError};
use crate::python::int_in_range;

/// The fields of an interface dict that describe the layout.
pub(crate) struct InterfaceDict<'py> {
    interface: Interface,
    dict: Bound<'py, PyDict>,
}

impl<'py> InterfaceDict<'py> {
    /// `value` must be a dict.
    pub(crate) fn new(interface: Interface, value: Bound<'py, PyAny>) -> Result<Self, DLPackError> {
        match value.cast_into::<PyDict>() {
            Ok(dict) => Ok(Self { interface, dict }),
            Err(err) => Err(malformed(
                interface,
                "the interface",
                "a dict",
                err.into_inner().as_any(),
            )),
        }
    }

    /// What an import of a raw address keeps alive: the producer and this
    /// dict. NumPy's convention lets the dict alone own the memory (its
    /// `__ref` entry: a NumPy scalar's interface describes a temporary
    /// array only the dict holds), so the dict lives as long as the tensor.
    pub(crate) fn keeper(&self, producer: &Bound<'py, PyAny>) -> PyResult<Keeper> {
        let both = PyTuple::new(producer.py(), [producer.as_any(), self.dict.as_any()])?;
        Ok(Keeper::Object(Some(both.into_any().unbind())))
    }

    /// An optional field; `None` when absent (a present `None` is returned as such).
    pub(crate) fn get(&self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.dict.get_item(key)
    }

    /// `version`: one of `accepted`.
    pub(crate) fn version(
        &self,
        accepted: &[i64],
        expected: &'static str,
    ) -> Result<i64, DLPackError> {
        let found = self.get("version").ok().flatten();
        match found.as_ref().and_then(|v| v.extract::<i64>().ok()) {
            Some(version) if accepted.contains(&version) => Ok(version),
            _ => Err(InterfaceError::Version {
                interface: self.interface,
                expected,
                found: found.map_or_else(|| "none".to_owned(), |v| repr(&v)),
            }
            .into()),
        }
    }

    /// `shape`, `typestr`, `strides` (bytes; absent or `None`: row-major)
    /// and no `mask`; `read_only` comes from `data`, read by the caller.
    pub(crate) fn layout(&self, read_only: bool) -> Result<Layout, DLPackError> {
        if let Some(mask) = self.get("mask").ok().flatten() {
            if !mask.is_none() {
                return Err(InterfaceError::Mask {
                    interface: self.interface,
                }
                .into());
            }
        }
        let typestr = self.required("typestr")?;
        let typestr_str = typestr
            .extract::<String>()
            .map_err(|_| malformed(self.interface, "typestr", "a str", &typestr))?;
        let dtype = from_typestr(&typestr_str, self.interface)?;
        let shape = self.required("shape")?;
        let shape = int_tuple(&shape, self.interface, "shape")?
            .ok_or_else(|| malformed(self.interface, "shape", "a tuple of ints", &shape))?;
        let byte_strides = match self.get("strides").ok().flatten() {
            Some(strides) if !strides.is_none() => Some(
                int_tuple(&strides, self.interface, "strides")?
                    .filter(|s| s.len() == shape.len())
                    .ok_or_else(|| {
                        malformed(
                            self.interface,
                            "strides",
                            "None or a tuple of ints, one per dimension",
                            &strides,
                        )
                    })?,
            ),
            _ => None,
        };
        Ok(Layout {
            shape,
            byte_strides,
            dtype,
            read_only,
        })
    }

    /// `data` as `(address, read_only)`; the flag is read by its truth
    /// value, as NumPy reads it (`(ptr, 1)`, `(ptr, 0)`): a flag whose
    /// `__bool__` raises raises that exception.
    pub(crate) fn pointer(&self, data: &Bound<'py, PyAny>) -> Result<(usize, bool), DLPackError> {
        let wrong = || malformed(self.interface, "data", "an (int, bool) tuple", data);
        let (address, read_only) = data
            .extract::<(usize, Bound<'py, PyAny>)>()
            .map_err(|_| wrong())?;
        let read_only = read_only.is_truthy()?;
        Ok((address, read_only))
    }

    /// A required field.
    pub(crate) fn required(&self, key: &'static str) -> Result<Bound<'py, PyAny>, DLPackError> {
        match self.get(key).ok().flatten() {
            Some(value) => Ok(value),
            None => Err(InterfaceError::Malformed {
                interface: self.interface,
                field: key,
                expected: "present",
                found: "no such key".to_owned(),
            }
            .into()),
        }
    }

    #[cfg_attr(all(Py_LIMITED_API, not(Py_3_11)), allow(dead_code))] // used by the buffer protocol
    pub(crate) fn interface(&self) -> Interface {
        self.interface
    }
}

/// A tuple of Python ints as `i64`s (`Ok(None)` if it is not one); an int
/// outside `i64` is out of range (`OverflowError`), not "not an int".
fn int_tuple(
    value: &Bound<'_, PyAny>,
    interface: Interface,
    field: &'static str,
) -> Result<Option<Vec<i64>>, DLPackError> {
    let Ok(tuple) = value.cast::<PyTuple>() else {
        return Ok(None);
    };
    let mut ints = Vec::with_capacity(tuple.len());
    for item in tuple.iter() {
        if !item.is_instance_of::<PyInt>() {
            return Ok(None);
        }
        ints.push(int_in_range(&item, i64::MIN..=i64::MAX, || {
            format!("an entry of the {field} of {interface}")
        })?);
    }
    Ok(Some(ints))
}

pub(crate) fn malformed(
    interface: Interface,
    field: &'static str,
    expected: &'static str,
    found: &Bound<'_, PyAny>,
) -> DLPackError {
    InterfaceError::Malformed {
        interface,
        field,
        expected,
        found: repr(found),
    }
    .into()
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    value.repr().map_or_else(
        |_| "an object without a repr".to_owned(),
        |r| format!("{r}"),
    )
}
