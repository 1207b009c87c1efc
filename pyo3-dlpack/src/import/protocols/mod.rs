//! Producers that speak no DLPack: `__cuda_array_interface__`,
//! `__array_interface__` and the buffer protocol, tried in that order after
//! `__dlpack__` and capsules.
//!
//! The order: DLPack first, because it is the one protocol that carries
//! devices, read-only flags and ownership; then the CUDA array interface,
//! because an object with both interfaces (a device array with a host
//! mirror) is a device array; then NumPy's array interface, which carries
//! dtype and layout; the buffer protocol last, whose struct formats are the
//! least precise.

mod array_interface;
#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
pub(crate) mod buffer;
pub(crate) mod cuda_array_interface;
mod format;
mod interface_dict;
mod owner;

use std::fmt;
use std::ops::BitOr;

use pyo3::intern;
use pyo3::prelude::*;

use crate::DLPackError;
use crate::import::negotiate::{ImportOptions, optional_attr, type_name};
use crate::import::tensor::PyTensor;

/// Which protocols besides DLPack an import accepts (DLPack producers and
/// capsules always are). The default accepts all three.
///
/// ```
/// use pyo3_dlpack::{ImportOptions, Protocols};
///
/// // Host memory from NumPy-like objects and buffers, but not CUDA arrays:
/// let options = ImportOptions::new().protocols(Protocols::ARRAY_INTERFACE | Protocols::BUFFER);
/// // DLPack only:
/// let strict = ImportOptions::new().protocols(Protocols::NONE);
/// # let _ = (options, strict);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Protocols(u8);

impl Protocols {
    /// None besides DLPack.
    pub const NONE: Self = Self(0);
    /// `__cuda_array_interface__`, versions 2 and 3.
    pub const CUDA_ARRAY_INTERFACE: Self = Self(1);
    /// `__array_interface__`, version 3.
    pub const ARRAY_INTERFACE: Self = Self(2);
    /// The buffer protocol (not in the limited API before CPython 3.11:
    /// abi3 builds for older versions skip it).
    pub const BUFFER: Self = Self(4);
    /// All three.
    pub const ALL: Self = Self(7);

    /// Whether every protocol of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The protocols of both.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl BitOr for Protocols {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}

impl Default for Protocols {
    fn default() -> Self {
        Self::ALL
    }
}

impl fmt::Debug for Protocols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Self::CUDA_ARRAY_INTERFACE, "CUDA_ARRAY_INTERFACE"),
            (Self::ARRAY_INTERFACE, "ARRAY_INTERFACE"),
            (Self::BUFFER, "BUFFER"),
        ];
        let set: Vec<_> = names
            .iter()
            .filter(|(p, _)| self.contains(*p) && *p != Self::NONE)
            .map(|(_, name)| *name)
            .collect();
        if set.is_empty() {
            f.write_str("NONE")
        } else {
            f.write_str(&set.join(" | "))
        }
    }
}

/// Imports `obj`, which has no `__dlpack__` and is no capsule, through the
/// first protocol it speaks that `options` accept.
pub(crate) fn import(obj: &Bound<'_, PyAny>, options: &ImportOptions) -> PyResult<PyTensor> {
    let py = obj.py();
    let accepted = options.accepted_protocols();
    if accepted.contains(Protocols::CUDA_ARRAY_INTERFACE) {
        if let Some(value) = optional_attr(obj, intern!(py, "__cuda_array_interface__"))? {
            return cuda_array_interface::import(obj, value, options.consumer_stream());
        }
    }
    if accepted.contains(Protocols::ARRAY_INTERFACE) {
        if let Some(value) = optional_attr(obj, intern!(py, "__array_interface__"))? {
            return array_interface::import(obj, value);
        }
    }
    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    if accepted.contains(Protocols::BUFFER)
        // SAFETY: attached; `obj` is a live object.
        && unsafe { pyo3::ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 1
    {
        return buffer::import(obj);
    }
    Err(DLPackError::NotATensor {
        type_name: type_name(obj),
        accepted: accepted.names(),
    }
    .into())
}

impl Protocols {
    /// The accepted ways in, for the error when an object speaks none:
    /// `"__dlpack__, __array_interface__ or the buffer protocol"`.
    fn names(self) -> String {
        let mut names = vec!["__dlpack__"];
        if self.contains(Self::CUDA_ARRAY_INTERFACE) {
            names.push("__cuda_array_interface__");
        }
        if self.contains(Self::ARRAY_INTERFACE) {
            names.push("__array_interface__");
        }
        if self.contains(Self::BUFFER) && cfg!(any(not(Py_LIMITED_API), Py_3_11)) {
            names.push("the buffer protocol");
        }
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}
