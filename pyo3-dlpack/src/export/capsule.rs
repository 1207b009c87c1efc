//! DLPack capsules: created with the raw CPython call, destroyed by a
//! destructor that respects a consumer's rename and a pending exception.
//!
//! PyO3's safe `PyCapsule::new_with_destructor` is not used: its destructor
//! frees the contents even after a consumer renamed the capsule to `used_…`
//! and took ownership, which would free the tensor twice.

use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::export::managed::{ManagedTensor, call_deleter};

/// Wraps a finished managed struct in a capsule named `M::NAME`.
///
/// On failure the struct's deleter runs (the export is undone) and the
/// Python error is returned.
pub(crate) fn new_capsule<'py, M: ManagedTensor>(
    py: Python<'py>,
    managed: NonNull<M>,
) -> PyResult<Bound<'py, PyCapsule>> {
    // SAFETY: `managed` is a live struct that the capsule will own; the name
    // is a `&'static CStr` (CPython stores the pointer, so it must outlive the
    // capsule); the destructor matches the struct type. We are attached (`py`).
    let capsule = unsafe {
        ffi::PyCapsule_New(
            managed.as_ptr().cast(),
            M::NAME.as_ptr(),
            Some(capsule_destructor::<M>),
        )
    };
    if capsule.is_null() {
        call_deleter(managed);
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `PyCapsule_New` returned a new (owned) reference.
    let capsule = unsafe { Bound::from_owned_ptr(py, capsule) };
    // SAFETY: that reference is to a capsule.
    Ok(unsafe { capsule.cast_into_unchecked() })
}

/// The capsule's destructor, run by CPython (attached to the interpreter)
/// when the capsule is freed.
///
/// It calls the deleter only if the capsule still has its unconsumed name: a
/// consumer that took the tensor renamed it (`used_dltensor…`) and calls the
/// deleter itself. A Python exception may be pending when it runs (NumPy drops
/// capsules on its error paths); it is saved and restored around our work so
/// that the consumer's exception reaches the caller unchanged.
///
/// # Safety
///
/// Called by CPython with a capsule created by [`new_capsule::<M>`].
unsafe extern "C" fn capsule_destructor<M: ManagedTensor>(capsule: *mut ffi::PyObject) {
    let pending = SavedException::take();
    // SAFETY: `capsule` is the live capsule being destroyed, a capsule (we
    // made it); `GetName` sets no exception. A consumer that took the tensor
    // renamed it to its own `used_…` string, so our name's address is gone.
    let unconsumed = unsafe { ffi::PyCapsule_GetName(capsule) } == M::NAME.as_ptr();
    if unconsumed {
        // SAFETY: the capsule is valid under this name, so this cannot fail.
        let managed = unsafe { ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr()) };
        if let Some(managed) = NonNull::new(managed.cast::<M>()) {
            call_deleter(managed);
        }
    }
    pending.restore();
}

/// The exception pending on this thread, held aside while a destructor works.
struct SavedException {
    #[cfg(Py_3_12)]
    exception: *mut ffi::PyObject,
    #[cfg(not(Py_3_12))]
    parts: [*mut ffi::PyObject; 3],
}

impl SavedException {
    /// Takes the pending exception (if any), leaving none set.
    fn take() -> Self {
        #[cfg(Py_3_12)]
        {
            // SAFETY: called attached to the interpreter (from a capsule destructor).
            let exception = unsafe { ffi::PyErr_GetRaisedException() };
            Self { exception }
        }
        #[cfg(not(Py_3_12))]
        {
            let mut parts = [std::ptr::null_mut(); 3];
            let [kind, value, traceback] = &mut parts;
            // SAFETY: called attached; the three out-pointers are valid.
            unsafe { ffi::PyErr_Fetch(kind, value, traceback) };
            Self { parts }
        }
    }

    /// Sets the saved exception again (dropping any raised meanwhile).
    fn restore(self) {
        #[cfg(Py_3_12)]
        {
            if !self.exception.is_null() {
                // SAFETY: attached; hands back the reference `take` received.
                unsafe { ffi::PyErr_SetRaisedException(self.exception) };
            }
        }
        #[cfg(not(Py_3_12))]
        {
            let [kind, value, traceback] = self.parts;
            if !kind.is_null() {
                // SAFETY: attached; hands back the references `take` received.
                unsafe { ffi::PyErr_Restore(kind, value, traceback) };
            }
        }
    }
}
