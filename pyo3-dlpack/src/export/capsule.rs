//! DLPack capsules: created around a raw pointer with a `'static` name
//! (`PyCapsule_New`), destroyed by our own destructor that respects a
//! consumer's rename and a pending exception.
//!
//! The raw `PyCapsule_New`, not PyO3's equivalent
//! `PyCapsule::new_with_pointer_and_destructor`: that one hands its capsule
//! back through a 72-byte `PyResult` written in its own frame, whose copy
//! into ours was a measurable share of a `__dlpack__` export (criterion
//! `export/shared_versioned`; BENCHMARKS.md).
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
#[inline]
pub(crate) fn new_capsule<'py, M: ManagedTensor>(
    py: Python<'py>,
    managed: NonNull<M>,
) -> PyResult<Bound<'py, PyCapsule>> {
    // SAFETY: attached; `managed` is a live struct that the capsule owns
    // from here on and that the destructor frees (unless a consumer renamed
    // the capsule and took it); the name is `'static` (CPython keeps the
    // pointer); the destructor is for this `M`, never unwinds, and is called
    // by CPython attached to the interpreter.
    let capsule = unsafe {
        ffi::PyCapsule_New(
            managed.as_ptr().cast(),
            M::NAME.as_ptr(),
            Some(capsule_destructor::<M>),
        )
    };
    if capsule.is_null() {
        // SAFETY: no capsule was made, so we still own the struct; its single
        // deleter call undoes the export.
        unsafe { call_deleter(managed) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference to the capsule just made.
    let capsule = unsafe { Bound::from_owned_ptr(py, capsule) };
    // SAFETY: `PyCapsule_New` made a capsule.
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
    // SAFETY: `capsule` is the live capsule being destroyed, made by
    // `new_capsule` with a non-NULL pointer, so `PyCapsule_GetName` cannot
    // fail or set an exception (CPython fails it only for non-capsules and
    // NULL pointers). A consumer that took the tensor renamed the capsule to
    // its own `used_…` string (the DLPack Python specification), so then our
    // name's address is gone.
    let unconsumed = unsafe { ffi::PyCapsule_GetName(capsule) } == M::NAME.as_ptr();
    if unconsumed {
        // SAFETY: as above, and the name is the one we gave, so this returns
        // our pointer without setting an exception.
        let managed = unsafe { ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr()) };
        if let Some(managed) = NonNull::new(managed.cast::<M>()) {
            // SAFETY: unconsumed, so the capsule still owns the struct; the
            // capsule is being destroyed, so this is the single deleter call.
            unsafe { call_deleter(managed) };
        }
    }
    pending.restore();
}

/// The exception pending on this thread, held aside while a destructor works.
///
/// Not `PyErr::take`: that normalises the exception (creating its value
/// object, which can run Python code and fail inside a destructor) and, for
/// a `PanicException`, resumes the panic, which must not unwind out of an
/// `extern "C"` destructor. The raw fetch and restore hand the very same
/// references back, untouched, as CPython's docs for `PyErr_Fetch` /
/// `PyErr_GetRaisedException` recommend for code that must preserve an
/// exception around a call.
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
