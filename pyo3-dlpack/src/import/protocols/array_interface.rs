//! Producers of NumPy's `__array_interface__` (version 3): host memory
//! given as an `(address, read_only)` pair, or as an object with the buffer
//! protocol (or, with `data` absent or `None`, the producer's own buffer)
//! and an `offset` into it.

use pyo3::prelude::*;

use super::interface_dict::{InterfaceDict, malformed};
#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
use super::owner::{self, Memory};
use crate::error::{Interface, InterfaceError};
use crate::import::tensor::PyTensor;
use crate::{DLPackError, Device};

/// Imports `obj`, whose `__array_interface__` is `value`.
pub(crate) fn import(obj: &Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let dict = InterfaceDict::new(Interface::ArrayInterface, value)?;
    dict.version(&[3], "3")?;
    let data = dict.get("data")?.filter(|data| !data.is_none());
    let offset = offset(&dict)?;
    match data {
        Some(data) if data.is_instance_of::<pyo3::types::PyTuple>() => {
            let (address, read_only) = dict.pointer(&data)?;
            if offset != 0 {
                return Err(offset_with_address(offset));
            }
            let layout = dict.layout(read_only)?;
            // SAFETY: the interface's promise: host memory at `address` that
            // lives as long as the producer object or its interface dict,
            // writable unless `read_only`.
            unsafe { dict.import_address(obj, address, layout, Device::cpu()) }
        }
        data => import_buffer(&dict, data.as_ref().unwrap_or(obj), offset),
    }
}

/// The error for an `offset` given with an `(address, read_only)` pair.
#[cold]
#[inline(never)]
fn offset_with_address(offset: usize) -> PyErr {
    DLPackError::from(InterfaceError::Malformed {
        interface: Interface::ArrayInterface,
        field: "offset",
        expected: "0 when data is an (address, read_only) tuple",
        found: format!("{offset}"),
    })
    .into()
}

/// `offset`: a non-negative int, 0 when absent.
fn offset(dict: &InterfaceDict<'_>) -> PyResult<usize> {
    match dict.optional("offset") {
        None => Ok(0),
        Some(value) => crate::python::ok(value.extract::<usize>()).ok_or_else(|| {
            malformed(
                Interface::ArrayInterface,
                "offset",
                "a non-negative int",
                &value,
            )
        }),
    }
}

/// `data` is an object with the buffer protocol: its buffer, held by the
/// tensor, is the region the layout must stay inside.
#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
fn import_buffer(
    dict: &InterfaceDict<'_>,
    data: &Bound<'_, PyAny>,
    offset: usize,
) -> PyResult<PyTensor> {
    let (start, len, read_only, view) = super::buffer::region(data)?;
    let layout = dict.layout(read_only)?;
    // SAFETY: the buffer stays valid and unchanged in size while its view is
    // held (the keeper); writable only if the exporter said so; the layout
    // is checked to stay inside its `len` bytes.
    unsafe {
        owner::import(
            Memory::Region { start, len, offset },
            layout,
            Device::cpu(),
            dict.interface(),
            owner::Keeper::View(view),
        )
    }
}

#[cfg(not(any(not(Py_LIMITED_API), Py_3_11)))]
fn import_buffer(_: &InterfaceDict<'_>, _: &Bound<'_, PyAny>, _: usize) -> PyResult<PyTensor> {
    Err(DLPackError::from(InterfaceError::BufferUnavailable).into())
}
