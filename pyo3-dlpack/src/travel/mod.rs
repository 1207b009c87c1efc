//! Tensors that travel: pickling and copying `DLPackTensor`s, so that they
//! cross process boundaries (multiprocessing, `DataLoader` workers, Ray,
//! Dask) as NumPy arrays do.
//!
//! The bytes are the tensor: a pickle carries the dtype, shape, device and
//! read-only flag ([`payload`]) and the row-major bytes (protocol 5: a
//! `PickleBuffer` over the tensor's own memory, out of band when the
//! pickler asks; older protocols: `bytes`), never the Rust value that owned
//! them. Unpickling ([`restore`]) keeps an out-of-band buffer as the new
//! tensor's memory when it is aligned for the dtype, and the `bytes` of
//! older protocols as NumPy keeps them (writable, when no one else holds
//! them), else copies once;
//! device tensors pickle as host copies and are uploaded again. How a
//! pickle finds this crate's code in another process: [`reconstructor`].

mod bytes;
#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
mod chain;
mod payload;
mod reconstructor;
mod restore;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::error::PythonKind;
use crate::export::DLPackTensor;
use bytes::TensorBytes;
use payload::Header;

/// The tensor a pickled state describes, as a Python object (what every
/// reconstructor returns).
pub(crate) fn restore_pickled(py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let tensor = restore::restore(py, state)?;
    Ok(Bound::new(py, tensor)?.into_any().unbind())
}

/// `DLPackTensor.__reduce_ex__(protocol)`: `(reconstructor, (state,))`.
pub(crate) fn reduce<'py>(
    tensor: &Bound<'py, DLPackTensor>,
    protocol: i32,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = tensor.py();
    refuse_subclass(tensor, "pickle")?;
    let header = Header::of(tensor.get().info());
    if !restore::restorable(header.device) {
        // A pickle that no process could load: refused now.
        let message = format!("cannot pickle: {}", restore::unrestorable(header.device));
        let class = pyo3::intern!(py, "PicklingError");
        return Err(restore::pickle_error(py, class, message));
    }
    let data = TensorBytes::of(tensor, header.nbytes)?.into_pickle_data(py, protocol)?;
    let state = header.to_state(py, data)?;
    (reconstructor::restorer(py)?, (state,)).into_pyobject(py)
}

/// `DLPackTensor.__reduce_ex__(protocol)`: a subclass's own `__reduce__`
/// when it has one (as `object.__reduce_ex__` prefers an overriding
/// `__reduce__`), else [`reduce`]. (A subclass's own `__reduce_ex__`,
/// `__copy__` and `__deepcopy__` are found before this class's by Python.)
pub(crate) fn reduce_ex<'py>(
    tensor: &Bound<'py, DLPackTensor>,
    protocol: i32,
) -> PyResult<Bound<'py, PyAny>> {
    if !tensor.is_exact_instance_of::<DLPackTensor>() && overrides(tensor, "__reduce__")? {
        return tensor.call_method0(pyo3::intern!(tensor.py(), "__reduce__"));
    }
    Ok(reduce(tensor, protocol)?.into_any())
}

/// `copy.copy(t)` (`memo` None) and `copy.deepcopy(t, memo)`: an
/// independent copy, as NumPy's. A subclass with a reduction of its own
/// (`__reduce__` or `__reduce_ex__`) is copied through it, as the `copy`
/// module copies an object without `__copy__`; other subclasses are refused.
pub(crate) fn copy<'py>(
    tensor: &Bound<'py, DLPackTensor>,
    memo: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = tensor.py();
    if !tensor.is_exact_instance_of::<DLPackTensor>()
        && (overrides(tensor, "__reduce__")? || overrides(tensor, "__reduce_ex__")?)
    {
        let reduced = tensor.call_method1(pyo3::intern!(py, "__reduce_ex__"), (4,))?;
        let Ok(reduced) = reduced.cast_into::<PyTuple>() else {
            // A global's name: the object itself, as `copy` answers.
            return Ok(tensor.clone().into_any());
        };
        // `copy._reconstruct(tensor, memo, *reduced)`.
        let memo = memo.map_or_else(|| py.None().into_bound(py), Bound::clone);
        let head = PyTuple::new(py, [tensor.as_any(), &memo])?;
        let args = head.as_sequence().concat(reduced.as_sequence())?;
        let reconstruct = py
            .import(pyo3::intern!(py, "copy"))?
            .getattr(pyo3::intern!(py, "_reconstruct"))?;
        return reconstruct.call1(args.cast_into::<PyTuple>()?);
    }
    refuse_subclass(tensor, "copy")?;
    Ok(Bound::new(py, restore::copy_of(tensor)?)?.into_any())
}

/// Whether `tensor`'s class (a subclass) has a method `name` of its own
/// (not this class's).
fn overrides(tensor: &Bound<'_, DLPackTensor>, name: &str) -> PyResult<bool> {
    let base = tensor.py().get_type::<DLPackTensor>();
    Ok(!tensor.get_type().getattr(name)?.is(&base.getattr(name)?))
}

/// A subclass (a user's `#[pyclass(extends = DLPackTensor)]`) has state of
/// its own that a `DLPackTensor` would drop: it pickles only with a
/// `__reduce__` of its own.
fn refuse_subclass(tensor: &Bound<'_, DLPackTensor>, what: &str) -> PyResult<()> {
    let class = tensor.get_type();
    if class.is(tensor.py().get_type::<DLPackTensor>()) {
        return Ok(());
    }
    Err(PythonKind::Type.new_err(format!(
        "cannot {what} '{}' object: it extends DLPackTensor with state of its own; \
         define __reduce__ (pickling) or __copy__/__deepcopy__ (copies) on it",
        class.name()?
    )))
}
