//! torch: everything this crate does specially for torch, in both
//! directions. What torch's tensor type is ([`tensor_type`]), the
//! per-tensor checks its C exchange path skips ([`checks`]), and
//! `Native::torch` results through its exchange table ([`native`]).
//!
//! **Identity, never names.** `torch.Tensor` is the `Tensor` attribute of
//! the imported `torch` module, a type object compared by identity; a class
//! that calls itself `torch.Tensor` is not it. torch's C functions are
//! called only on objects of the type whose C descriptors they were found
//! in (checked per object, see [`checks`]).

pub(crate) mod checks;
mod native;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

pub(crate) use native::tensor_of;

/// `torch.Tensor`, once found.
static TENSOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `torch.Tensor`, if torch is imported (this never imports it); `None`
/// otherwise (not remembered: torch may be imported later).
pub(crate) fn tensor_type(py: Python<'_>) -> Option<Bound<'_, PyType>> {
    if let Some(ty) = TENSOR.get(py) {
        return Some(ty.bind(py).clone());
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let torch = modules.get_item("torch").ok()?;
    let ty = torch.getattr("Tensor").ok()?.cast_into::<PyType>().ok()?;
    Some(TENSOR.get_or_init(py, || ty.unbind()).bind(py).clone())
}

/// `torch.Tensor`, importing torch.
pub(crate) fn import_tensor_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    py.import("torch")?;
    tensor_type(py)
        .ok_or_else(|| pyo3::exceptions::PyImportError::new_err("torch has no Tensor type"))
}

/// Whether `ty` is `torch.Tensor` itself (identity; not a subclass).
pub(crate) fn is_tensor_type(ty: &Bound<'_, PyType>) -> bool {
    tensor_type(ty.py()).is_some_and(|tensor| ty.is(&tensor))
}
