//! JAX: imports of `jax.Array`s without JAX's Python `__dlpack__`
//! ([`export_capsule`]), and `Native::jax` results ([`array_of`]): host
//! values of the dtypes JAX keeps straight through jaxlib's capsule import
//! on the jaxlib proven, everything else through JAX's public
//! `jax.dlpack.from_dlpack` (which `jax.numpy.from_dlpack` calls).
//!
//! JAX (up to 0.12 at least) asks `__dlpack__(stream=None)` for a legacy
//! capsule, which cannot say "read-only", so a read-only value is refused to
//! every other legacy consumer (NumPy's rule: it might write). JAX arrays
//! are immutable, so a read-only value goes to JAX with its writability
//! unknown, the state a legacy capsule may carry.

use std::sync::Arc;
#[cfg(feature = "fast-paths")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "fast-paths")]
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
#[cfg(feature = "fast-paths")]
use pyo3::types::{PyCapsule, PyDict, PyString};

use super::framework::Framework;
#[cfg(feature = "fast-paths")]
use crate::DeviceType;
use crate::error::ExportError;
#[cfg(feature = "fast-paths")]
use crate::export::CapsuleFormat;
use crate::export::{DLPackTensor, IntoDLPack};
use crate::{DLPackError, DataType, DataTypeCode, TensorInfo};

/// jaxlib's array type, its C++ DLPack export and the sharding of arrays on
/// one device, as found in one module.
struct Jaxlib {
    array_type: Py<PyType>,
    // Read by the fast path only (feature `fast-paths`).
    #[cfg_attr(not(feature = "fast-paths"), allow(dead_code))]
    export: Py<PyAny>,
    #[cfg_attr(not(feature = "fast-paths"), allow(dead_code))]
    single_device: Py<PyType>,
}

/// The jaxlib of this process, found from the first array of jaxlib's
/// array type that arrives.
static JAXLIB: crate::once::Cell<Jaxlib> = crate::once::Cell::new();

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
#[cfg(feature = "fast-paths")]
pub(crate) fn export_capsule<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyCapsule>>> {
    let py = obj.py();
    let jaxlib = match JAXLIB.get(py) {
        Some(jaxlib) if obj.get_type().is(jaxlib.array_type.bind(py)) => jaxlib,
        Some(_) => return Ok(None),
        None => match find_jaxlib(obj) {
            Some(found) => found,
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

/// Whether `obj` is a `jax.Array` of jaxlib's own array type, whose
/// sub-byte elements (float4_e2m1fn) JAX stores a byte each (XLA's buffer):
/// JAX exports them as `(17, 4, 1)`, one byte per element, without the flag
/// that says so (a legacy capsule cannot carry it). Read packed, the bytes
/// were misread (tested on JAX 0.10.2). A capsule that sets the flag is
/// read by it anyway. Decided by the object imported, never its capsule:
/// JAX's capsule handed on by another object (a wrapper's `__dlpack__`,
/// `PyTensor::from_capsule`) is read as it says, packed. Identity as in
/// [`export_capsule`].
#[cold]
#[inline(never)]
pub(crate) fn stores_subbyte_padded(obj: &Bound<'_, PyAny>) -> bool {
    is_jax_array(obj)
}

/// Whether `obj` is a `jax.Array` of jaxlib's own array type (identity, as
/// in [`export_capsule`]): an immutable array. Asked of legacy capsules'
/// producers only, off the common import paths.
#[cold]
#[inline(never)]
pub(crate) fn is_jax_array(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    match JAXLIB.get(py) {
        Some(jaxlib) => obj.get_type().is(jaxlib.array_type.bind(py)),
        None => find_jaxlib(obj).is_some(),
    }
}

/// jaxlib's array type and export, if `obj` is of the array type of the
/// `jaxlib` module its type names (imported: `obj` is of one of its types),
/// kept in [`JAXLIB`] (or the one kept there first).
fn find_jaxlib(obj: &Bound<'_, PyAny>) -> Option<&'static Jaxlib> {
    let py = obj.py();
    // The type's `__module__` may be answered by Python code that imports
    // again: a level of the import's limit (past it, not jaxlib's; the
    // import's next level raises the `RecursionError`).
    let _level = crate::python::RecursionLevel::enter(py).ok()?;
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
    if !(class.is(&array_type) && export.is_callable()) {
        return None;
    }
    let found = Jaxlib {
        array_type: array_type.unbind(),
        export: export.unbind(),
        single_device: single_device.unbind(),
    };
    Some(JAXLIB.get_or_set(py, found))
}

/// `value` as a `jax.Array` (imports JAX): the very array
/// `jax.dlpack.from_dlpack` returns for it.
///
/// A host value whose dtype JAX keeps as it is goes straight to jaxlib's
/// capsule import ([`CapsuleImport`]): `from_dlpack` adds, for such a value,
/// only Python work whose outcome is known (`__dlpack_device__`, a stream
/// lookup that raises on CPU, and a `jnp.asarray` that returns the array it
/// is given), most of its time. Device values (their streams) and the
/// 64-bit dtypes (which JAX narrows unless x64 is on) take `from_dlpack`
/// itself. A patched `jax.dlpack.from_dlpack` is therefore not called for
/// the values the route takes.
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    array_of_tensor(py, DLPackTensor::new(ForImmutableConsumer(value))?)
}

/// [`array_of`] past the wrapping of its value: one body for every value
/// type, and for [`array_of_shared`].
fn array_of_tensor(py: Python<'_>, tensor: DLPackTensor) -> PyResult<Bound<'_, PyAny>> {
    refuse_what_jax_lacks(tensor.info())?;
    #[cfg(feature = "fast-paths")]
    if is_taken_as_it_is(tensor.info()) {
        if let Some(import) = CapsuleImport::of_this_jax(py) {
            if let Some(array) = import.array(py, &tensor)? {
                return Ok(array);
            }
        }
    }
    Framework::Jax.call_from_dlpack(py, tensor)
}

/// Whether jaxlib's DLPack import has a type for `dtype`: bool, the
/// integers and IEEE floats of 8 to 64 bits, bfloat16, complex64 and
/// complex128, and the float8 codes, one lane each. jaxlib refuses the
/// rest with a `JaxRuntimeError` (UNIMPLEMENTED): complex32 ("unsupported
/// DLPack complex width"), bcomplex32 and float6 ("unknown or invalid DLPack
/// type code"), float4 (a layout its CPU buffers lack) and vector types.
fn jax_imports(dtype: DataType) -> bool {
    let code = dtype.code;
    if dtype.lanes != 1 {
        return false;
    }
    match code {
        DataTypeCode::INT | DataTypeCode::UINT => matches!(dtype.bits, 8 | 16 | 32 | 64),
        DataTypeCode::FLOAT => matches!(dtype.bits, 16 | 32 | 64),
        DataTypeCode::COMPLEX => matches!(dtype.bits, 64 | 128),
        _ => {
            dtype == DataType::BOOL
                || dtype == DataType::BF16
                || (DataTypeCode::FLOAT8_E3M4..=DataTypeCode::FLOAT8_E8M0FNU).contains(&code)
        }
    }
}

/// What JAX has no dtype for, refused as torch's refusals are (a
/// `BufferError` naming the array type, the dtype and the device) before
/// JAX is handed the value, where jaxlib would raise its
/// `JaxRuntimeError`.
fn refuse_what_jax_lacks(info: &TensorInfo<'_>) -> Result<(), DLPackError> {
    if jax_imports(info.dtype()) {
        return Ok(());
    }
    Err(ExportError::FrameworkRefused {
        array: "jax.Array".into(),
        dtype: info.dtype(),
        device: Some(info.device()),
        reason: "JAX has no such dtype (complex32, bcomplex32, float6, float4 and \
                 multi-lane types); return it as a DLPackTensor"
            .into(),
    }
    .into())
}

/// Whether JAX's `from_dlpack` makes an array of a value so described
/// without a step after jaxlib's capsule import: host memory, and a dtype
/// that `jnp.asarray` keeps (int64, uint64, float64 and complex128 become
/// 32-bit types unless x64 is enabled).
#[cfg(feature = "fast-paths")]
fn is_taken_as_it_is(info: &TensorInfo<'_>) -> bool {
    let narrowed = [DataType::I64, DataType::U64, DataType::F64, DataType::C128];
    info.device().device_type == DeviceType::CPU && !narrowed.contains(&info.dtype())
}

/// jaxlib's import of a DLPack capsule (`dlpack_managed_tensor_to_buffer`
/// of `jax._src.lib._jax`, what `jax.dlpack.from_dlpack` calls) and the
/// function that finds its CPU device, for the jaxlib extension versions
/// the test matrix proves ([`PROVEN`](Self::PROVEN): JAX 0.10.2's 467, whose
/// import takes `dlpack`, `device`, `stream`, `copy` and `dl_device_type`).
/// Other jaxlibs (JAX 0.4's has no `jaxlib_extension_version`), a JAX
/// whose private modules moved, and one whose import raises a `TypeError`
/// for our keywords get `from_dlpack`. Widen `PROVEN` only with a matrix
/// run of the newer JAX.
#[cfg(feature = "fast-paths")]
struct CapsuleImport {
    to_buffer: Py<PyAny>,
    get_backend: Py<PyAny>,
}

/// This process's [`CapsuleImport`], looked up once; `None` where the
/// jaxlib is not a proven one or a module or name is missing.
#[cfg(feature = "fast-paths")]
static CAPSULE_IMPORT: crate::once::Cell<Option<CapsuleImport>> = crate::once::Cell::new();

/// Set once a capsule import raised a `TypeError`: from then on every
/// value takes `from_dlpack`.
#[cfg(feature = "fast-paths")]
static CAPSULE_IMPORT_REFUSED: AtomicBool = AtomicBool::new(false);

#[cfg(feature = "fast-paths")]
impl CapsuleImport {
    /// The jaxlib extension versions whose capsule import, and whose
    /// `from_dlpack` around it, the test matrix has proven.
    const PROVEN: std::ops::RangeInclusive<u32> = 467..=467;

    fn of_this_jax(py: Python<'_>) -> Option<&'static Self> {
        if CAPSULE_IMPORT_REFUSED.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(known) = CAPSULE_IMPORT.get(py) {
            return known.as_ref();
        }
        CAPSULE_IMPORT.get_or_set(py, Self::look_up(py)).as_ref()
    }

    /// The functions, from JAX's own modules (importing JAX, as
    /// `from_dlpack` would); `None` where a module or name is missing or
    /// the version is not a proven one (`from_dlpack` then raises what
    /// there is to raise, such as JAX's absence).
    fn look_up(py: Python<'_>) -> Option<Self> {
        let lib = py.import("jax._src.lib").ok()?;
        let version = lib.getattr("jaxlib_extension_version").ok()?;
        if !Self::PROVEN.contains(&version.extract::<u32>().ok()?) {
            return None;
        }
        let to_buffer = lib
            .getattr("_jax")
            .and_then(|jax| jax.getattr("dlpack_managed_tensor_to_buffer"))
            .ok()?;
        let get_backend = py
            .import("jax._src.xla_bridge")
            .and_then(|bridge| bridge.getattr("get_backend"))
            .ok()?;
        Some(Self {
            to_buffer: to_buffer.unbind(),
            get_backend: get_backend.unbind(),
        })
    }

    /// `tensor` (host memory) as a `jax.Array` on JAX's CPU device, through
    /// a legacy capsule as `from_dlpack` asks for one, with no stream and
    /// `copy=None` (jaxlib copies memory it cannot alias, as there).
    /// `Ok(None)` where the import refuses our keywords with a `TypeError`
    /// (a signature we do not know): the route is then off for good.
    fn array<'py>(
        &self,
        py: Python<'py>,
        tensor: &DLPackTensor,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let backend = self.get_backend.bind(py).call1(("cpu",))?;
        let device = backend.call_method1(
            pyo3::intern!(py, "device_from_local_hardware_id"),
            (tensor.info().device().device_id,),
        )?;
        let capsule = tensor.to_capsule(py, CapsuleFormat::Legacy)?;
        let cpu = DeviceType::CPU.code().into_pyobject(py)?;
        // Every argument as `&PyAny`: one instance of the generic `set_item`
        // for the five (each argument type would be code of its own).
        let arguments = PyDict::new(py);
        let none = py.None().into_bound(py);
        let set = |name: &Bound<'py, PyString>, value: &Bound<'py, PyAny>| {
            arguments.set_item(name, value)
        };
        set(pyo3::intern!(py, "dlpack"), capsule.as_any())?;
        set(pyo3::intern!(py, "device"), &device)?;
        set(pyo3::intern!(py, "stream"), &none)?;
        set(pyo3::intern!(py, "copy"), &none)?;
        set(pyo3::intern!(py, "dl_device_type"), cpu.as_any())?;
        match self.to_buffer.bind(py).call((), Some(&arguments)) {
            Err(err) if err.is_instance_of::<PyTypeError>(py) => {
                CAPSULE_IMPORT_REFUSED.store(true, Ordering::Relaxed);
                Ok(None)
            }
            result => result.map(Some),
        }
    }
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
    array_of_tensor(py, DLPackTensor::new(Shared(Arc::clone(value)))?)
}

/// A value shared with a `DLPackTensor`, exported again to JAX (as
/// [`ForImmutableConsumer`] does, without a second wrapper).
struct Shared(Arc<dyn IntoDLPack>);

impl IntoDLPack for Shared {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let mut info = self.0.tensor_info()?;
        // The memory of the `DLPackTensor`'s own value, described again
        // inside the `Arc`, not inside this wrapper; JAX never writes it
        // (see `ForImmutableConsumer`), so no writability is at stake.
        info.vouch_unshared();
        info.for_immutable_consumer();
        Ok(info)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jax_imports_what_jaxlib_has_a_type_for() {
        for taken in [
            DataType::BOOL,
            DataType::U16,
            DataType::I64,
            DataType::F16,
            DataType::BF16,
            DataType::C64,
            DataType::C128,
            DataType::F8_E3M4,
            DataType::F8_E8M0FNU,
        ] {
            assert!(jax_imports(taken), "{taken}");
        }
        for lacked in [
            DataType::BC32,
            DataType::C32,
            DataType::F6_E2M3FN,
            DataType::F6_E3M2FN,
            DataType::F4_E2M1FN,
            DataType::F4_E2M1FN_X2,
            DataType::new(DataTypeCode::FLOAT, 32, 4),
            DataType::new(DataTypeCode::INT, 4, 1),
        ] {
            assert!(!jax_imports(lacked), "{lacked}");
        }
    }
}
