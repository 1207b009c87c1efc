//! Taking ownership of a DLPack capsule, following the consumer rules of the
//! DLPack Python specification.

use std::ffi::CStr;
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::critical_section::with_critical_section;
use pyo3::types::PyCapsule;

use crate::DLPackError;
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
    /// object is borrowed, nothing to delete.
    Borrowed {
        tensor: crate::ffi::DLTensor,
        version: crate::ffi::DLPackVersion,
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
        }
    }
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
        let name = capsule_name(capsule);
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
            other => Err(DLPackError::InvalidCapsule(format!(
                "expected a capsule named \"dltensor\" or \"dltensor_versioned\", got {}",
                other.map_or("an unnamed capsule".into(), |n| format!(
                    "{:?}",
                    n.to_string_lossy()
                ))
            ))),
        }
    })
}

fn capsule_name<'a>(capsule: &'a Bound<'_, PyCapsule>) -> Option<&'a CStr> {
    // SAFETY: attached (the Bound proves it); `capsule` is a capsule.
    let name = unsafe { ffi::PyCapsule_GetName(capsule.as_ptr()) };
    if name.is_null() {
        // An unnamed capsule sets no error; a failure would have been a type
        // error, which the cast to PyCapsule already excluded.
        return None;
    }
    // SAFETY: CPython returns the capsule's name, a NUL-terminated string that
    // lives at least as long as the capsule keeps that name (we hold it).
    Some(unsafe { CStr::from_ptr(name) })
}

fn take(
    capsule: &Bound<'_, PyCapsule>,
    name: &'static CStr,
    used: &'static CStr,
) -> Result<NonNull<std::ffi::c_void>, DLPackError> {
    // SAFETY: attached; the capsule has exactly this name (checked by the caller
    // inside the same critical section).
    let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), name.as_ptr()) };
    let Some(pointer) = NonNull::new(pointer) else {
        let _ = PyErr::take(capsule.py());
        return Err(DLPackError::InvalidCapsule(
            "the DLPack capsule holds a NULL pointer".into(),
        ));
    };
    // SAFETY: attached; `used` is a `&'static CStr`, as CPython keeps the pointer.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), used.as_ptr()) } != 0 {
        let _ = PyErr::take(capsule.py());
        return Err(DLPackError::InvalidCapsule(
            "could not rename the DLPack capsule to mark it consumed".into(),
        ));
    }
    Ok(pointer)
}
