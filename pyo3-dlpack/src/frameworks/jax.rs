//! JAX: imports of `jax.Array`s without JAX's Python `__dlpack__`
//! ([`export_capsule`]), and `Native::jax` results through JAX's public
//! `jax.dlpack.from_dlpack` (which `jax.numpy.from_dlpack` calls).
//!
//! JAX (up to 0.12 at least) asks `__dlpack__(stream=None)` for a legacy
//! capsule, which cannot say "read-only", so a read-only value is refused to
//! every other legacy consumer (NumPy's rule: it might write). JAX arrays
//! are immutable, so a read-only value goes to JAX with its writability
//! unknown, the state a legacy capsule may carry.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyType};

use super::framework::Framework;
use crate::export::IntoDLPack;
use crate::{DLPackError, TensorInfo};

/// jaxlib's array type, its C++ DLPack export and the sharding of arrays on
/// one device, as found in one module.
struct Jaxlib {
    array_type: Py<PyType>,
    export: Py<PyAny>,
    single_device: Py<PyType>,
}

/// The jaxlib of this process, found from the first array of jaxlib's
/// array type that arrives.
static JAXLIB: PyOnceLock<Jaxlib> = PyOnceLock::new();

/// A legacy DLPack capsule of `obj` if it is a `jax.Array` of jaxlib's own
/// array type (`ArrayImpl`, exactly), made by the C++ function JAX's
/// `__dlpack__` ends in (`buffer_to_dlpack_managed_tensor`, in `jaxlib._jax`
/// and, before JAX 0.5, `jaxlib.xla_extension`), with no stream: what
/// `obj.__dlpack__()` returns, without its two Python frames, and without
/// the `__dlpack_device__` call that would choose a stream. `None` for
/// anything else, and for arrays whose sharding is not `SingleDeviceSharding`
/// (the function exports the first shard of an array sharded over several
/// devices: `__dlpack__` refuses those). Deleted and donated arrays raise
/// jaxlib's error.
///
/// The caller keeps the capsule only for memory without streams: with no
/// stream, JAX orders GPU memory for no consumer stream of ours.
///
/// Identity: the type of `obj` must be the `ArrayImpl` of the module its
/// `__module__` names in `sys.modules`, and, once one was found, that very
/// type. A class that fakes the name and the module gets no more than its
/// `__dlpack__` would: what the function returns is a capsule checked as
/// any other (and at worst, real arrays arriving after it take the
/// `__dlpack__` path).
pub(crate) fn export_capsule<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyCapsule>>> {
    let py = obj.py();
    let jaxlib = match JAXLIB.get(py) {
        Some(jaxlib) if obj.get_type().is(jaxlib.array_type.bind(py)) => jaxlib,
        Some(_) => return Ok(None),
        None => match find_jaxlib(obj) {
            Some(found) => JAXLIB.get_or_init(py, || found),
            None => return Ok(None),
        },
    };
    let sharding = obj.getattr(pyo3::intern!(py, "sharding"))?;
    if !sharding.get_type().is(jaxlib.single_device.bind(py)) {
        return Ok(None);
    }
    let capsule = jaxlib.export.bind(py).call1((obj,))?;
    // Not a capsule: not jaxlib's function after all; `__dlpack__` decides.
    Ok(capsule.cast_into::<PyCapsule>().ok())
}

/// jaxlib's array type and export, if `obj` is of the array type of the
/// `jaxlib` module its type names (imported: `obj` is of one of its types).
fn find_jaxlib(obj: &Bound<'_, PyAny>) -> Option<Jaxlib> {
    let py = obj.py();
    let class = obj.get_type();
    let name = class.module().ok()?;
    // `to_cow`, not `to_str`: the latter is not in the limited API before 3.10.
    if !name.to_cow().ok()?.starts_with("jaxlib.") {
        return None;
    }
    let module = crate::python::imported_module(py, &name)?;
    let array_type = module
        .getattr("ArrayImpl")
        .ok()?
        .cast_into::<PyType>()
        .ok()?;
    let export = module.getattr("buffer_to_dlpack_managed_tensor").ok()?;
    let single_device = module.getattr("SingleDeviceSharding").ok()?;
    let single_device = single_device.cast_into::<PyType>().ok()?;
    (class.is(&array_type) && export.is_callable()).then(|| Jaxlib {
        array_type: array_type.unbind(),
        export: export.unbind(),
        single_device: single_device.unbind(),
    })
}

/// `value` as a `jax.Array` (imports JAX).
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    Framework::Jax.through_from_dlpack(py, ForImmutableConsumer(value))
}

/// A `DLPackTensor`'s shared value as a `jax.Array` (`DLPackTensor.__jax_array__`,
/// which `jnp.asarray(t)` and every `jax.numpy` function call): zero-copy, as
/// [`array_of`]. JAX never writes, so a value the tensor exports read-only
/// (its own flag, or a shared `Arc`) is handed over with its writability
/// unknown, as `Native::jax` does.
pub(crate) fn array_of_shared<'py>(
    py: Python<'py>,
    value: &Arc<dyn IntoDLPack>,
) -> PyResult<Bound<'py, PyAny>> {
    array_of(py, Shared(Arc::clone(value)))
}

/// A value shared with a `DLPackTensor`, exported again.
struct Shared(Arc<dyn IntoDLPack>);

impl IntoDLPack for Shared {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.0.tensor_info()
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.0.synchronize(consumer_stream)
    }
}

/// A value exported to a consumer that never writes (see the module docs).
struct ForImmutableConsumer<T>(T);

impl<T: IntoDLPack> IntoDLPack for ForImmutableConsumer<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let mut info = self.0.tensor_info()?;
        info.for_immutable_consumer();
        Ok(info)
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.0.synchronize(consumer_stream)
    }
}
