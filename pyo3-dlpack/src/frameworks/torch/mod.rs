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
#[cfg(feature = "exchange-api")]
mod python_path;

use pyo3::prelude::*;
use pyo3::types::PyType;

pub(crate) use native::tensor_of;
#[cfg(feature = "exchange-api")]
pub(crate) use python_path::defers_to_python;

/// The name of torch's module.
pub(crate) const MODULE: &str = "torch";

/// `torch.Tensor`, once found.
static TENSOR: crate::once::Cell<Py<PyType>> = crate::once::Cell::new();

/// `torch.Tensor`, if torch is imported (this never imports it); `None`
/// otherwise (not remembered: torch may be imported later).
///
/// The `Tensor` of the module `sys.modules["torch"]`, taken only if it is
/// built on torch's C tensor type: its `requires_grad` is a C getter of a
/// static type it derives from (a module put in `sys.modules` by Python
/// code cannot make one), so a fake module cannot decide, for the rest of
/// the process, what `torch.Tensor` is.
pub(crate) fn tensor_type(py: Python<'_>) -> Option<Bound<'_, PyType>> {
    if let Some(ty) = TENSOR.get(py) {
        return Some(ty.bind(py).clone());
    }
    let torch = crate::python::imported_module(py, pyo3::intern!(py, MODULE))?;
    let ty = torch.getattr("Tensor").ok()?.cast_into::<PyType>().ok()?;
    if !is_built_on_torchs_c_type(&ty) {
        return None;
    }
    Some(TENSOR.get_or_set(py, ty.unbind()).bind(py).clone())
}

/// Whether `ty`'s `requires_grad` is a C getter defined by a static type
/// `ty` derives from (torch's `TensorBase`).
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
fn is_built_on_torchs_c_type(ty: &Bound<'_, PyType>) -> bool {
    use pyo3::ffi;
    let Ok(descriptor) = ty.getattr(pyo3::intern!(ty.py(), "requires_grad")) else {
        return false;
    };
    if descriptor.get_type_ptr() != &raw mut ffi::PyGetSetDescr_Type {
        return false;
    }
    // SAFETY: an object of type `PyGetSetDescr_Type` is a
    // `PyGetSetDescrObject`, which begins with a `PyDescrObject`; its
    // `d_type` is a live type the descriptor holds.
    let owner = unsafe { (*descriptor.as_ptr().cast::<ffi::PyDescrObject>()).d_type };
    // SAFETY: attached; `owner` and `ty` are live types.
    let static_owner = unsafe { ffi::PyType_GetFlags(owner) } & ffi::Py_TPFLAGS_HEAPTYPE == 0;
    // SAFETY: as above.
    static_owner && unsafe { ffi::PyType_IsSubtype(ty.as_type_ptr(), owner) } != 0
}

/// The same question through Python, where the descriptor's struct cannot
/// be read (the limited API): `requires_grad` is of the type of a C getter
/// (`int.real`'s, `getset_descriptor`), and its `__objclass__` is a static
/// type that `ty` derives from.
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
fn is_built_on_torchs_c_type(ty: &Bound<'_, PyType>) -> bool {
    let py = ty.py();
    let Ok(descriptor) = ty.getattr(pyo3::intern!(py, "requires_grad")) else {
        return false;
    };
    let c_getter = py
        .get_type::<pyo3::types::PyInt>()
        .getattr(pyo3::intern!(py, "real"))
        .map(|real| real.get_type());
    if !c_getter.is_ok_and(|getter| descriptor.get_type().is(&getter)) {
        return false;
    }
    let Ok(owner) = descriptor
        .getattr(pyo3::intern!(py, "__objclass__"))
        .and_then(|owner| owner.cast_into::<PyType>().map_err(Into::into))
    else {
        return false;
    };
    // SAFETY: attached; `owner` is a live type (`PyType_GetFlags` is in the
    // limited API).
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(owner.as_type_ptr()) };
    flags & pyo3::ffi::Py_TPFLAGS_HEAPTYPE == 0 && ty.is_subclass(&owner).unwrap_or(false)
}

/// `torch.Tensor`, importing torch if it is not imported yet (once found,
/// no import is asked for: `py.import` costs about half a microsecond even
/// for a module already imported, which was a third of `Native::torch`).
#[cfg(feature = "exchange-api")]
pub(crate) fn import_tensor_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    if let Some(tensor) = tensor_type(py) {
        return Ok(tensor);
    }
    py.import(MODULE)?;
    tensor_type(py)
        .ok_or_else(|| crate::error::PythonKind::Import.new_err("torch has no Tensor type".into()))
}

/// Whether `obj` is exactly a `torch.Tensor` (by identity; a subclass may
/// be a wrapper with rules of its own).
pub(crate) fn is_exact_tensor(obj: &Bound<'_, PyAny>) -> bool {
    tensor_type(obj.py()).is_some_and(|tensor| obj.get_type().is(&tensor))
}

/// Whether `obj`, which exported a legacy capsule, may be written: torch has
/// no read-only tensors (before 2.9 its `__dlpack__` takes no `max_version`,
/// so every capsule is legacy), so an exact `torch.Tensor`'s memory is
/// writable through its own API as through ours.
pub(crate) fn legacy_writable(obj: &Bound<'_, PyAny>) -> bool {
    is_exact_tensor(obj)
}

/// For a tensor imported through torch's `__dlpack__` (torch before 2.10,
/// or options its C table cannot honour): the checks of its C path
/// ([`checks::TorchChecks::check`]), which torch's `__dlpack__` makes only in
/// part (it refuses tensors that require gradient and the conjugate bit, not
/// the negative bit). Others (not exactly a `torch.Tensor`) pass.
pub(crate) fn check_dlpack_import(obj: &Bound<'_, PyAny>, dtype: crate::DataType) -> PyResult<()> {
    let Some(tensor) = tensor_type(obj.py()) else {
        return Ok(());
    };
    if !obj.get_type().is(&tensor) {
        return Ok(());
    }
    checks::TorchChecks::of_torch_tensor(&tensor)?.check(obj, dtype)
}

/// Whether `ty` is `torch.Tensor` itself (identity; not a subclass).
#[cfg(feature = "exchange-api")]
pub(crate) fn is_tensor_type(ty: &Bound<'_, PyType>) -> bool {
    tensor_type(ty.py()).is_some_and(|tensor| ty.is(&tensor))
}
