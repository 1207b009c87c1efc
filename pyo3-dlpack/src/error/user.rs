//! Errors of the user's own code, carried through every entry point to
//! Python with their type and message.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use pyo3::panic::PanicException;
use pyo3::prelude::*;

/// A failure of your own code inside an export or import (an
/// [`IntoDLPack`](crate::IntoDLPack)'s `tensor_info` or `synchronize`, a
/// [`FromDLPack`](crate::FromDLPack)), carried in
/// [`DLPackError::User`](crate::DLPackError::User).
///
/// A Python exception (`?` on a `PyResult`, through `From<PyErr>`) reaches
/// Python as itself, type, message and traceback; any other error
/// ([`DLPackError::user`](crate::DLPackError::user)) as a `ValueError` with
/// its message, its own sources kept as the `DLPackError`'s.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3::exceptions::PyRuntimeError;
/// use pyo3_dlpack::{AlignedBuffer, DLPackError, IntoDLPack, TensorInfo};
///
/// struct Frame {
///     pixels: AlignedBuffer<u8>,
///     ready: bool,
/// }
///
/// impl IntoDLPack for Frame {
///     fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
///         TensorInfo::new(&self.pixels, [self.pixels.len()])
///     }
///
///     fn synchronize(&self, _stream: i64) -> Result<(), DLPackError> {
///         if !self.ready {
///             // Raised by the consumer's `from_dlpack` as this RuntimeError.
///             return Err(PyRuntimeError::new_err("the camera has not delivered the frame").into());
///         }
///         Ok(())
///     }
/// }
/// # Python::attach(|py| {
/// #     let err = Frame { pixels: AlignedBuffer::zeroed(4), ready: false }.synchronize(0).unwrap_err();
/// #     let err = PyErr::from(err);
/// #     assert!(err.is_instance_of::<PyRuntimeError>(py));
/// #     assert_eq!(err.value(py).to_string(), "the camera has not delivered the frame");
/// # });
/// ```
#[derive(Clone)]
pub struct UserError(Arc<Inner>);

enum Inner {
    Python(PyErr),
    Rust(Box<dyn Error + Send + Sync + 'static>),
}

impl UserError {
    pub(crate) fn python(err: PyErr) -> Self {
        Self(Arc::new(Inner::Python(err)))
    }

    pub(crate) fn rust(err: Box<dyn Error + Send + Sync + 'static>) -> Self {
        Self(Arc::new(Inner::Rust(err)))
    }

    /// The Python exception this error is: the user's own, or a
    /// `ValueError` with the message of a Rust error.
    pub(crate) fn to_pyerr(&self) -> PyErr {
        match &*self.0 {
            Inner::Python(err) => Python::attach(|py| err.clone_ref(py)),
            Inner::Rust(err) => super::PythonKind::Value.new_err(format!("{err}")),
        }
    }

    /// The source of the Rust error, if this is one (its message is this
    /// error's own, so it is not repeated as a source).
    pub(crate) fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &*self.0 {
            Inner::Python(_) => None,
            Inner::Rust(err) => err.source(),
        }
    }
}

/// Two user errors are equal when they are the same error (clones of one).
impl PartialEq for UserError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for UserError {}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Inner::Python(err) => fmt::Display::fmt(err, f),
            Inner::Rust(err) => fmt::Display::fmt(err, f),
        }
    }
}

impl fmt::Debug for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Inner::Python(err) => f.debug_tuple("UserError").field(err).finish(),
            Inner::Rust(err) => f.debug_tuple("UserError").field(err).finish(),
        }
    }
}

/// The exception a caught panic becomes: PyO3's `PanicException` with the
/// panic's message, as PyO3's own functions raise it.
#[cold]
pub(crate) fn panic_error(payload: Box<dyn std::any::Any + Send + 'static>) -> PyErr {
    let message = if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else {
        "panic from Rust code".to_owned()
    };
    // Dropped inside a guard: a payload whose drop panics again is leaked,
    // never unwound into C (as `export::managed::drop_owner` does).
    let payload = std::panic::AssertUnwindSafe(payload);
    if let Err(again) = std::panic::catch_unwind(move || drop(payload)) {
        std::mem::forget(again);
    }
    PanicException::new_err((message,))
}
