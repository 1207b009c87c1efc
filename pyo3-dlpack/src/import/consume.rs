//! Taking ownership of a DLPack capsule, following the consumer rules of the
//! DLPack Python specification.

use std::ffi::CStr;
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::critical_section::with_critical_section;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::DLPackError;
use crate::error::CapsuleError;
use crate::ffi::{
    DLManagedTensor, DLManagedTensorVersioned, DLTENSOR, DLTENSOR_VERSIONED, USED_DLTENSOR,
    USED_DLTENSOR_VERSIONED,
};

/// A managed tensor this process now owns: its deleter must run exactly once.
#[derive(Debug)]
pub(crate) enum Managed {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
    /// A non-owning view from a producer's exchange API: valid while its
    /// object is borrowed, nothing to delete. (The `PyTensor` keeps its
    /// description, so that this stays small: it is moved by value.)
    Borrowed {
        version: crate::ffi::DLPackVersion,
    },
    /// A NumPy array read directly (`import::numpy`): a reference to the
    /// array, which keeps the memory alive (the `PyTensor` keeps its
    /// description, as for `Borrowed`).
    Array {
        version: crate::ffi::DLPackVersion,
        writable: bool,
        owner: pyo3::Py<pyo3::PyAny>,
    },
}

impl Managed {
    /// Calls the producer's deleter (if it gave one). Consumes `self`, so at most once.
    pub(crate) fn delete(self) {
        match self {
            Self::Legacy(managed) => {
                // SAFETY: we own the struct (taken from a capsule we renamed) and
                // it is alive until its deleter runs, which is now.
                if let Some(deleter) = unsafe { managed.as_ref() }.deleter {
                    // SAFETY: the producer's own deleter, called once with its struct.
                    unsafe { deleter(managed.as_ptr()) };
                }
            }
            Self::Versioned(managed) => {
                // SAFETY: as above. Only `deleter`, which precedes `flags`, is read:
                // the header allows reading it whatever the major version.
                if let Some(deleter) = unsafe { managed.as_ref() }.deleter {
                    // SAFETY: as above.
                    unsafe { deleter(managed.as_ptr()) };
                }
            }
            Self::Borrowed { .. } => {}
            Self::Array { owner, .. } => release_now(owner),
        }
    }
}

/// Releases a reference to a Python object now, attaching to the interpreter
/// if needed: a drop reached from a deleter called by C (NumPy's, torch's)
/// runs outside any PyO3 scope, where dropping a `Py` would only queue the
/// decref until PyO3 next runs. If the interpreter is gone, so is the object.
pub(crate) fn release_now(object: pyo3::Py<pyo3::PyAny>) {
    let _ = pyo3::Python::try_attach(|_| drop(object));
}

/// Takes the tensor out of a capsule named `dltensor` or `dltensor_versioned`
/// and renames the capsule `used_…`, so its destructor leaves the tensor to us.
///
/// The name check and the rename happen together under the capsule's
/// critical section, so two threads of a free-threaded interpreter cannot both
/// take the same tensor. Nothing fallible runs after the rename here: from the
/// rename on, the returned [`Managed`] is the only owner.
pub(crate) fn take_from_capsule(capsule: &Bound<'_, PyCapsule>) -> Result<Managed, DLPackError> {
    with_critical_section(capsule.as_any(), || {
        // CPython refuses to read a capsule whose pointer is NULL at all
        // (`PyCapsule_GetName` fails with "invalid PyCapsule object"): that is
        // the only state in which a capsule object is invalid.
        let name = capsule
            .name()
            .map_err(|_| DLPackError::from(CapsuleError::NullPointer))?;
        // SAFETY: attached, inside the capsule's critical section, and no
        // Python code runs before the comparison below is done, so nobody can
        // rename the capsule (and free its name) meanwhile.
        let name = name.map(|name| unsafe { name.as_cstr() });
        match name {
            Some(name) if name == DLTENSOR => {
                take(capsule, DLTENSOR, USED_DLTENSOR).map(|p| Managed::Legacy(p.cast()))
            }
            Some(name) if name == DLTENSOR_VERSIONED => {
                take(capsule, DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED)
                    .map(|p| Managed::Versioned(p.cast()))
            }
            Some(name) if name == USED_DLTENSOR || name == USED_DLTENSOR_VERSIONED => {
                Err(DLPackError::AlreadyConsumed)
            }
            other => Err(CapsuleError::Name {
                found: other.map(|n| n.to_string_lossy().into_owned()),
            }
            .into()),
        }
    })
}

/// The pointer of a capsule named `name`, renamed `used` (the consumer's
/// mark, DLPack Python specification).
fn take(
    capsule: &Bound<'_, PyCapsule>,
    name: &'static CStr,
    used: &'static CStr,
) -> Result<NonNull<std::ffi::c_void>, DLPackError> {
    let pointer = capsule
        .pointer_checked(Some(name))
        .map_err(|_| DLPackError::from(CapsuleError::NullPointer))?;
    // PyO3 has no rename. SAFETY: attached; the capsule is valid (its pointer
    // was just read under this name); `used` is a `&'static CStr`, as
    // CPython keeps the name pointer for the capsule's life.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), used.as_ptr()) } != 0 {
        let _ = PyErr::take(capsule.py());
        return Err(CapsuleError::Rename.into());
    }
    Ok(pointer)
}
