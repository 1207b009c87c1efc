//! The dict of `__array_interface__` and `__cuda_array_interface__`: the
//! fields both share, read and checked (what a field must be is named in the
//! error when it is not).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};

use super::format::from_typestr;
use super::owner::{self, Keeper, Layout, Memory};
use crate::error::{Interface, InterfaceError};
use crate::import::tensor::PyTensor;
use crate::python::int_in_range;
use crate::{DLPackError, Device};

/// The fields of an interface dict that describe the layout.
pub(crate) struct InterfaceDict<'py> {
    interface: Interface,
    dict: Bound<'py, PyDict>,
}

impl<'py> InterfaceDict<'py> {
    /// `value` must be a dict.
    pub(crate) fn new(interface: Interface, value: Bound<'py, PyAny>) -> PyResult<Self> {
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

    /// Imports the elements `layout` describes from `address` (the first
    /// element's) on `device`, kept alive by the producer and this dict.
    /// NumPy's convention lets the dict alone own the memory (its `__ref`
    /// entry: a NumPy scalar's interface describes a temporary array only
    /// the dict holds), so the dict lives as long as the tensor.
    ///
    /// # Safety
    ///
    /// The interface's promise: the memory at `address` lives as long as
    /// the producer or this dict, writable unless `layout.read_only`.
    pub(crate) unsafe fn import_address(
        &self,
        producer: &Bound<'py, PyAny>,
        address: usize,
        layout: Layout,
        device: Device,
    ) -> PyResult<PyTensor> {
        let both = PyTuple::new(producer.py(), [producer.as_any(), self.dict.as_any()])?;
        let keeper = Keeper::Object(Some(both.into_any().unbind()));
        // SAFETY: the caller's promise, for as long as `keeper` holds both.
        unsafe {
            owner::import(
                Memory::FirstElement(address),
                layout,
                device,
                self.interface,
                keeper,
            )
        }
    }

    /// An optional field; `None` when absent (a present `None` is returned as such).
    pub(crate) fn get(&self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.dict.get_item(key)
    }

    /// An optional field that has a value: `None` when absent, when `None`,
    /// or when the lookup raises (one out-of-line copy for every such field).
    #[inline(never)]
    pub(crate) fn optional(&self, key: &str) -> Option<Bound<'py, PyAny>> {
        crate::python::ok(self.get(key))
            .flatten()
            .filter(|value| !value.is_none())
    }

    /// `version`: one of `accepted`.
    pub(crate) fn version(&self, accepted: &[i64], expected: &'static str) -> PyResult<i64> {
        let found = crate::python::ok(self.get("version")).flatten();
        match found
            .as_ref()
            .and_then(|v| crate::python::ok(v.extract::<i64>()))
        {
            Some(version) if accepted.contains(&version) => Ok(version),
            _ => Err(wrong_version(self.interface, expected, found)),
        }
    }

    /// `shape`, `typestr`, `strides` (bytes; absent or `None`: row-major)
    /// and no `mask`; `read_only` comes from `data`, read by the caller.
    pub(crate) fn layout(&self, read_only: bool) -> PyResult<Layout> {
        if self.optional("mask").is_some() {
            return Err(DLPackError::from(InterfaceError::Mask {
                interface: self.interface,
            })
            .into());
        }
        let typestr = self.required("typestr")?;
        let typestr_str = crate::python::ok(typestr.extract::<String>())
            .ok_or_else(|| malformed(self.interface, "typestr", "a str", &typestr))?;
        let dtype = from_typestr(&typestr_str, self.interface).map_err(DLPackError::from)?;
        let shape = self.required("shape")?;
        let shape = int_tuple(&shape, self.interface, "shape")?
            .ok_or_else(|| malformed(self.interface, "shape", "a tuple of ints", &shape))?;
        let byte_strides = match self.optional("strides") {
            Some(strides) => Some(
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
            None => None,
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
    pub(crate) fn pointer(&self, data: &Bound<'py, PyAny>) -> PyResult<(usize, bool)> {
        let (address, read_only) = crate::python::ok(data.extract::<(usize, Bound<'py, PyAny>)>())
            .ok_or_else(|| malformed(self.interface, "data", "an (int, bool) tuple", data))?;
        let read_only = read_only.is_truthy()?;
        Ok((address, read_only))
    }

    /// A required field (out of line: read by both interfaces and for
    /// several fields).
    #[inline(never)]
    pub(crate) fn required(&self, key: &'static str) -> PyResult<Bound<'py, PyAny>> {
        match crate::python::ok(self.get(key)).flatten() {
            Some(value) => Ok(value),
            None => Err(missing(self.interface, key)),
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
) -> PyResult<Option<Vec<i64>>> {
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

/// The error for a `version` that is absent (`found` is `None`) or not one of `expected`.
#[cold]
#[inline(never)]
fn wrong_version(
    interface: Interface,
    expected: &'static str,
    found: Option<Bound<'_, PyAny>>,
) -> PyErr {
    DLPackError::from(InterfaceError::Version {
        interface,
        expected,
        found: found.map_or_else(|| "none".to_owned(), |v| repr(&v)),
    })
    .into()
}

/// The error for a required field `field` that is absent.
#[cold]
#[inline(never)]
fn missing(interface: Interface, field: &'static str) -> PyErr {
    DLPackError::from(InterfaceError::Malformed {
        interface,
        field,
        expected: "present",
        found: "no such key".to_owned(),
    })
    .into()
}

/// The error for a field that is not what it must be: `found` is shown by its repr.
#[cold]
#[inline(never)]
pub(crate) fn malformed(
    interface: Interface,
    field: &'static str,
    expected: &'static str,
    found: &Bound<'_, PyAny>,
) -> PyErr {
    DLPackError::from(InterfaceError::Malformed {
        interface,
        field,
        expected,
        found: repr(found),
    })
    .into()
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    crate::python::ok(value.repr())
        .map_or_else(|| "an object without a repr".to_owned(), |r| format!("{r}"))
}
