//! Taking ownership of a DLPack capsule, following the consumer rules of the
//! DLPack Python specification.

use std::ffi::CStr;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
use crate::python::{clear_error, ok};

/// A producer's managed struct this process owns, whose deleter must run
/// exactly once (through [`Managed::delete`] or [`delete_versioned`]). Made only by
/// [`adopt`](Self::adopt), an `unsafe fn`: the promise about the pointer is
/// made there, once, and every later use (reading it, deleting it) is safe.
#[derive(Debug)]
pub(crate) struct Owned<T>(NonNull<T>);

impl<T> Owned<T> {
    /// Owns `ptr` from now on.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live `T` (a producer's `DLManagedTensor` or
    /// `DLManagedTensorVersioned`) that nobody else owns or deletes, alive
    /// until its deleter runs (through [`Managed::delete`], or by the caller
    /// after giving it back with `PyTensor::release`); where its major
    /// version is this crate's, its `dl_tensor`'s non-NULL shape and strides
    /// point to `ndim` readable entries each, alive as long (the DLPack
    /// header's promise).
    pub(crate) unsafe fn adopt(ptr: NonNull<T>) -> Self {
        Self(ptr)
    }

    /// The struct (of a versioned struct, only `version` and `deleter` may
    /// be relied on before its major version is checked).
    pub(crate) fn get(&self) -> &T {
        // SAFETY: live while owned (`adopt`'s contract); deleting it
        // consumes the `Managed` that holds this, so no borrow outlives it.
        unsafe { self.0.as_ref() }
    }

    fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }
}

/// A managed tensor this process now owns: its deleter must run exactly once.
#[derive(Debug)]
pub(crate) enum Managed {
    /// A producer's struct from a capsule or an exchange table; the lender
    /// is the capsule's while a derived argument's `from_dlpack` holds it
    /// (see [`Lease`]).
    Legacy(Owned<DLManagedTensor>, Lender),
    Versioned(Owned<DLManagedTensorVersioned>, Lender),
    /// A non-owning view from a producer's exchange API: valid while its
    /// object is borrowed, nothing to delete. (The `PyTensor` keeps its
    /// description, so that this stays small: it is moved by value.)
    #[cfg(feature = "exchange-api")]
    Borrowed {
        version: crate::ffi::DLPackVersion,
    },
    /// A NumPy array read directly (`import::numpy`): a reference to the
    /// array, which keeps the memory alive (the `PyTensor` keeps its
    /// description, as for `Borrowed`). Made by feature `fast-paths` only.
    #[cfg_attr(not(feature = "fast-paths"), allow(dead_code))]
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
            Self::Legacy(managed, Some(lent)) => Lent::settle(lent, Self::Legacy(managed, None)),
            Self::Versioned(managed, Some(lent)) => {
                Lent::settle(lent, Self::Versioned(managed, None));
            }
            Self::Legacy(managed, None) => {
                if let Some(deleter) = managed.get().deleter {
                    // SAFETY: the producer's own deleter, called once (this
                    // consumes the only owner) with its live struct.
                    unsafe { deleter(managed.as_ptr()) };
                }
            }
            Self::Versioned(managed, None) => delete_versioned(managed),
            #[cfg(feature = "exchange-api")]
            Self::Borrowed { .. } => {}
            Self::Array { owner, .. } => release_now(owner),
        }
    }
}

/// Calls the deleter of a versioned tensor on no lease (if it gave one):
/// C code only, which does not unwind, so a caller may hold values with drop
/// code (an error to return) across it without a cleanup path for them.
#[inline]
pub(crate) fn delete_versioned(managed: Owned<DLManagedTensorVersioned>) {
    // Only `deleter`, which precedes `flags`, is read: the header allows
    // reading it whatever the major version.
    if let Some(deleter) = managed.get().deleter {
        // SAFETY: the producer's own deleter, called once (this consumes the
        // only owner) with its live struct.
        unsafe { deleter(managed.as_ptr()) };
    }
}

/// Releases a reference to a Python object now, attaching to the interpreter
/// if needed: a drop reached from a deleter called by C (NumPy's, torch's)
/// runs outside any PyO3 scope, where dropping a `Py` would only queue the
/// decref until PyO3 next runs. If the interpreter cannot be attached to (it
/// is finalizing), the reference is leaked, never dropped detached: PyO3
/// built with `pyo3_disable_reference_pool` aborts on such a drop.
pub(crate) fn release_now(object: pyo3::Py<pyo3::PyAny>) {
    let mut object = Some(object);
    let released = pyo3::Python::try_attach(|_| drop(object.take()));
    if released.is_none() {
        std::mem::forget(object);
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
        // CPython refuses to read a capsule whose pointer is NULL at all
        // (`PyCapsule_GetName` fails with "invalid PyCapsule object"): that is
        // the only state in which a capsule object is invalid.
        let Some(name) = ok(capsule.name()) else {
            return Err(CapsuleError::NullPointer.into());
        };
        // SAFETY: attached, inside the capsule's critical section, and no
        // Python code runs before the comparison below is done, so nobody can
        // rename the capsule (and free its name) meanwhile.
        let name = name.map(|name| unsafe { name.as_cstr() });
        match name {
            Some(name) if name == DLTENSOR => {
                let taken = take(capsule, DLTENSOR, USED_DLTENSOR)?;
                // SAFETY: a capsule of this name holds the producer's
                // `DLManagedTensor`, alive until its deleter runs (the DLPack
                // Python specification; a forged capsule cannot be detected,
                // as by every consumer); renaming it made it ours alone.
                Ok(Managed::Legacy(unsafe { Owned::adopt(taken.cast()) }, None))
            }
            Some(name) if name == DLTENSOR_VERSIONED => {
                let taken = take(capsule, DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED)?;
                // SAFETY: as above, of a `DLManagedTensorVersioned`.
                Ok(Managed::Versioned(
                    unsafe { Owned::adopt(taken.cast()) },
                    None,
                ))
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
    let Some(pointer) = ok(capsule.pointer_checked(Some(name))) else {
        return Err(CapsuleError::NullPointer.into());
    };
    // PyO3 has no rename. SAFETY: attached; the capsule is valid (its pointer
    // was just read under this name); `used` is a `&'static CStr`, as
    // CPython keeps the name pointer for the capsule's life.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), used.as_ptr()) } != 0 {
        clear_error(capsule.py());
        return Err(CapsuleError::Rename.into());
    }
    Ok(pointer)
}

/// Gives a tensor [`take_from_capsule`] took back to its capsule, which is
/// renamed `dltensor` or `dltensor_versioned` again: the capsule owns it once
/// more (its destructor, or the next consumer, deletes it). `Err` hands
/// `managed` back when the capsule no longer holds it under the used name
/// (renamed meanwhile by code outside this crate, or another tensor's): the
/// caller still owns it.
pub(crate) fn give_back(capsule: &Bound<'_, PyCapsule>, managed: Managed) -> Result<(), Managed> {
    let (pointer, name, used) = match &managed {
        Managed::Legacy(owned, _) => (owned.as_ptr().cast(), DLTENSOR, USED_DLTENSOR),
        Managed::Versioned(owned, _) => (
            owned.as_ptr().cast(),
            DLTENSOR_VERSIONED,
            USED_DLTENSOR_VERSIONED,
        ),
        #[cfg(feature = "exchange-api")]
        Managed::Borrowed { .. } | Managed::Array { .. } => return Err(managed),
        #[cfg(not(feature = "exchange-api"))]
        Managed::Array { .. } => return Err(managed),
    };
    with_critical_section(capsule.as_any(), || {
        let holds_it =
            ok(capsule.pointer_checked(Some(used))).is_some_and(|held| held.as_ptr() == pointer);
        if !holds_it {
            return Err(managed);
        }
        // SAFETY: attached; the capsule is valid (its pointer was just read
        // under the used name, inside its critical section, so nobody renamed
        // it meanwhile); `name` is a `&'static CStr`, as CPython keeps the
        // name pointer for the capsule's life. From the rename on, the
        // capsule owns the struct again: `managed` is forgotten, not deleted.
        if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), name.as_ptr()) } != 0 {
            clear_error(capsule.py());
            return Err(managed);
        }
        std::mem::forget(managed);
        Ok(())
    })
}

/// A capsule's tensor lent to a derived argument's `from_dlpack`: while the
/// lease is open, dropping the tensor gives it back to the capsule (a
/// refusal leaves the capsule as it was, for the next variant of an enum to
/// take); once closed, the tensor is owned as any import.
#[derive(Debug)]
pub(crate) struct Lease(Arc<Lent>);

/// The capsule a lent tensor goes back to, when it has one: a reference
/// counted [`Lent`] made by [`Lease::new`], held as a pointer (no drop glue
/// in `Managed`, which every import moves and drops) and turned back into
/// its `Arc` once, by [`Managed::delete`] (which consumes the `Managed`).
pub(crate) type Lender = Option<NonNull<Lent>>;

#[derive(Debug)]
pub(crate) struct Lent {
    capsule: Py<PyCapsule>,
    open: AtomicBool,
}

impl Lease {
    /// A lease of the tensor taken from `capsule`, and the tensor's
    /// [`Lender`].
    pub(crate) fn new(capsule: &Bound<'_, PyCapsule>) -> (Self, NonNull<Lent>) {
        let lent = Arc::new(Lent {
            capsule: capsule.clone().unbind(),
            open: AtomicBool::new(true),
        });
        let lender = NonNull::new(Arc::into_raw(Arc::clone(&lent)).cast_mut())
            .expect("an Arc's pointer is never NULL");
        (Self(lent), lender)
    }

    /// From now on the tensor is deleted when dropped, as any import.
    pub(crate) fn close(self) {
        self.0.open.store(false, Ordering::Release);
        Lent::release(self.0);
    }
}

impl Lent {
    /// What a dropped tensor on lease does with `managed`: gives it back to
    /// the capsule while the lease is open, deletes it otherwise (or when
    /// the capsule cannot take it back, or the interpreter is gone).
    fn settle(lender: NonNull<Self>, managed: Managed) {
        // SAFETY: a `Lender` is made once from `Arc::into_raw` (`Lease::new`)
        // and turned back here once: `Managed::delete` consumes its holder.
        let this = unsafe { Arc::from_raw(lender.as_ptr().cast_const()) };
        let mut managed = Some(managed);
        if this.open.swap(false, Ordering::AcqRel) {
            let _ = Python::try_attach(|py| {
                let taken = managed.take().expect("present until given back");
                managed = give_back(this.capsule.bind(py), taken).err();
            });
        }
        if let Some(managed) = managed {
            managed.delete();
        }
        Self::release(this);
    }

    /// Drops one holder; the last one releases the capsule (attaching to the
    /// interpreter: a tensor may drop on any thread).
    fn release(this: Arc<Self>) {
        if let Some(lent) = Arc::into_inner(this) {
            release_now(lent.capsule.into_any());
        }
    }
}
