//! Asking a producer for a capsule: `__dlpack_device__`, then
//! `__dlpack__(max_version=…, stream=…, dl_device=…, copy=…)`, and a legacy
//! retry only when the producer rejected the keywords themselves.

use pyo3::exceptions::{PyAttributeError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
#[cfg(not(any(Py_3_12, not(any(Py_LIMITED_API, PyPy)))))]
use pyo3::types::PyDict;
use pyo3::types::{PyBool, PyCapsule, PyInt, PySequence, PyString, PyTuple};

use crate::error::CapsuleError;
use crate::import::options::ImportOptions;
use crate::import::state::LegacyWrites;
use crate::python::{int_in_range, optional_attr, type_name};
use crate::{DLPackError, Device, DeviceType, protocol};

/// Gets a capsule from `obj`: `obj` itself if it is one, else its
/// `__dlpack__`'s; `None` if it has no `__dlpack__`.
pub(crate) fn request_capsule<'py>(
    obj: &Bound<'py, PyAny>,
    options: &ImportOptions,
) -> PyResult<Option<Bound<'py, PyCapsule>>> {
    if let Ok(capsule) = obj.cast::<PyCapsule>() {
        return Ok(Some(capsule.clone()));
    }
    let py = obj.py();
    // NumPy has no device arrays: its `__dlpack_device__` (a Python call)
    // is skipped.
    let device = if crate::frameworks::numpy::is_exact_ndarray(obj) {
        None
    } else {
        producer_device(obj)?
    };
    // The stream belongs to the device the consumer receives the data on.
    let stream = options.stream_for(options.dl_device.or(device));
    let mut keywords = Keywords::new(py);
    keywords.push(
        intern!(py, "max_version"),
        max_version_object(py, options.max_version)?,
    );
    if let Some(stream) = stream {
        keywords.push(intern!(py, "stream"), stream.into_pyobject(py)?.into_any());
    }
    if let Some(device) = options.dl_device {
        let pair = (device.device_type.code(), device.device_id).into_pyobject(py)?;
        keywords.push(intern!(py, "dl_device"), pair.into_any());
    }
    if let Some(copy) = options.copy {
        keywords.push(
            intern!(py, "copy"),
            PyBool::new(py, copy).to_owned().into_any(),
        );
    }
    let retry_allowed = options.dl_device.is_none() && options.copy.is_none();
    let result = match keywords.call_dlpack(obj) {
        Ok(None) => return Ok(None),
        Err(err) if retry_allowed && rejected_max_version(py, &err) => {
            retry_legacy(obj, stream, err)?
        }
        Ok(Some(result)) => result,
        Err(err) => return Err(err),
    };
    capsule_of(obj, result).map(Some)
}

/// An older producer (`__dlpack__(self, stream=None)`) rejected
/// `max_version` (`err`): asks again with only what it understands.
#[cold]
#[inline(never)]
fn retry_legacy<'py>(
    obj: &Bound<'py, PyAny>,
    stream: Option<i64>,
    err: PyErr,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let mut legacy = Keywords::new(py);
    if let Some(stream) = stream {
        legacy.push(intern!(py, "stream"), stream.into_pyobject(py)?.into_any());
    }
    legacy
        .call_dlpack(obj)
        .inspect_err(|retry_err| retry_err.set_cause(py, Some(err)))?
        .ok_or_else(|| not_dlpack(obj))
}

/// What `obj.__dlpack__` returned, which must be a capsule.
fn capsule_of<'py>(
    obj: &Bound<'py, PyAny>,
    result: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyCapsule>> {
    result.cast_into::<PyCapsule>().map_err(|err| {
        DLPackError::NotACapsule {
            producer: type_name(obj),
            found: type_name(err.into_inner().as_any()),
        }
        .into()
    })
}

/// The error of an argument's import (`PyTensor::from_argument`): `err`,
/// or for a NumPy array of a dtype DLPack cannot carry the `TypeError`
/// saying so. Here, out of line, beside the negotiation whose errors it
/// replaces: holding `err` across a call that may unwind needs `PyErr`'s
/// drop code (some 300 bytes), which this module's codegen unit holds for
/// the negotiation anyway, and the caller's then need not.
#[cold]
#[inline(never)]
pub(crate) fn argument_error(obj: &Bound<'_, PyAny>, err: PyErr) -> PyErr {
    crate::frameworks::numpy::dtype_without_dlpack(obj).unwrap_or(err)
}

fn not_dlpack(obj: &Bound<'_, PyAny>) -> PyErr {
    DLPackError::NotDLPack {
        type_name: type_name(obj),
    }
    .into()
}

/// Calls `obj.__dlpack__(max_version=(1, 3))` for its error: a producer
/// whose C exchange export failed (torch: meta, sparse and quantized
/// tensors) raises its own error there, without the `__dlpack_device__`
/// call first (torch's fails with a `ValueError` for meta tensors, where
/// its `__dlpack__` raises `BufferError`, as NumPy's import does). When it
/// exports after all, its capsule (asked for no stream).
#[cfg(feature = "exchange-api")]
pub(crate) fn probe_dlpack<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
    let py = obj.py();
    let mut keywords = Keywords::new(py);
    keywords.push(
        intern!(py, "max_version"),
        max_version_object(py, protocol::MAX_VERSION)?,
    );
    let Some(result) = keywords.call_dlpack(obj)? else {
        return Err(not_dlpack(obj));
    };
    capsule_of(obj, result)
}

/// `(1, 3)` as a Python tuple, made once; other versions on the fly.
fn max_version_object(py: Python<'_>, (major, minor): (u32, u32)) -> PyResult<Bound<'_, PyAny>> {
    static DEFAULT: crate::once::Cell<Py<PyTuple>> = crate::once::Cell::new();
    if (major, minor) == protocol::MAX_VERSION {
        let default = DEFAULT.get_or_try_init(py, || {
            // As a pair, as other versions are made below (one conversion).
            protocol::MAX_VERSION.into_pyobject(py).map(Bound::unbind)
        })?;
        return Ok(default.bind(py).clone().into_any());
    }
    Ok((major, minor).into_pyobject(py)?.into_any())
}

/// Keyword arguments for `__dlpack__` (at most four), passed by vectorcall
/// (no dict, no bound method) where the C API allows it. Nothing is
/// allocated for the common call, `__dlpack__(max_version=(1, 3))`.
struct Keywords<'py> {
    py: Python<'py>,
    /// Interned names (`intern!`), borrowed: no reference counting.
    names: [Option<&'py Bound<'py, PyString>>; 4],
    values: [Option<Bound<'py, PyAny>>; 4],
    len: usize,
}

impl<'py> Keywords<'py> {
    fn new(py: Python<'py>) -> Self {
        Self {
            py,
            names: Default::default(),
            values: Default::default(),
            len: 0,
        }
    }

    fn push(&mut self, name: &'py Bound<'py, PyString>, value: Bound<'py, PyAny>) {
        self.names[self.len] = Some(name);
        self.values[self.len] = Some(value);
        self.len += 1;
    }

    /// `obj.__dlpack__(**self)`; `None` if `obj` has no `__dlpack__`.
    fn call_dlpack(&self, obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let result = self.call_method(obj, intern!(self.py, "__dlpack__"));
        match result {
            Err(err) if err.is_instance_of::<PyAttributeError>(self.py) => {
                if optional_attr(obj, intern!(self.py, "__dlpack__"))?.is_some() {
                    return Err(err); // raised inside the producer
                }
                Ok(None)
            }
            other => other.map(Some),
        }
    }

    fn names(&self) -> impl Iterator<Item = &Bound<'py, PyString>> {
        self.names[..self.len].iter().flatten().copied()
    }

    /// The keyword names as a tuple; `("max_version",)` is made once.
    #[cfg(any(Py_3_12, not(any(Py_LIMITED_API, PyPy))))]
    fn kwnames(&self) -> PyResult<Bound<'py, PyTuple>> {
        static MAX_VERSION_ONLY: crate::once::Cell<Py<PyTuple>> = crate::once::Cell::new();
        let max_version = intern!(self.py, "max_version");
        if self.len == 1 && self.names[0].as_ref().is_some_and(|n| n.is(max_version)) {
            let cached = MAX_VERSION_ONLY.get_or_try_init(self.py, || {
                PyTuple::new(self.py, [max_version]).map(Bound::unbind)
            })?;
            return Ok(cached.bind(self.py).clone());
        }
        PyTuple::new(self.py, self.names().collect::<Vec<_>>())
    }

    #[cfg(any(Py_3_12, not(any(Py_LIMITED_API, PyPy))))]
    fn call_method(
        &self,
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwnames = self.kwnames()?;
        let mut args = [std::ptr::null_mut(); 5];
        args[0] = obj.as_ptr();
        for (slot, value) in args[1..]
            .iter_mut()
            .zip(self.values[..self.len].iter().flatten())
        {
            *slot = value.as_ptr();
        }
        // SAFETY: attached; `args` holds `self` then one value per name in
        // `kwnames` (`len` ≤ 4), all borrowed references that outlive the
        // call; nargsf 1 counts `self` only.
        let result = unsafe {
            pyo3::ffi::PyObject_VectorcallMethod(name.as_ptr(), args.as_ptr(), 1, kwnames.as_ptr())
        };
        // SAFETY: a new reference, or NULL with an exception set.
        unsafe { Bound::from_owned_ptr_or_err(self.py, result) }
    }

    #[cfg(not(any(Py_3_12, not(any(Py_LIMITED_API, PyPy)))))]
    fn call_method(
        &self,
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = PyDict::new(self.py);
        for (name, value) in self.names().zip(self.values[..self.len].iter().flatten()) {
            kwargs.set_item(name, value)?;
        }
        obj.call_method(name, (), Some(&kwargs))
    }
}

/// What the producer of a legacy capsule says about writes through its own
/// API or what it is, asked of the framework homes (NumPy's array flags;
/// torch, which has no read-only tensors; JAX, whose arrays are immutable,
/// by jaxlib's array type); any other producer cannot say.
pub(crate) fn legacy_writability(obj: &Bound<'_, PyAny>) -> PyResult<LegacyWrites> {
    let writable = crate::frameworks::numpy::legacy_writable(obj)?
        || crate::frameworks::torch::legacy_writable(obj);
    Ok(if writable {
        LegacyWrites::Writable
    } else if crate::frameworks::jax::is_jax_array(obj) {
        LegacyWrites::JaxImmutable
    } else {
        LegacyWrites::Unknown
    })
}

/// `__dlpack_device__()` as a `Device`, or `None` if the producer has none.
pub(crate) fn producer_device(obj: &Bound<'_, PyAny>) -> PyResult<Option<Device>> {
    let Some(method) = optional_attr(obj, intern!(obj.py(), "__dlpack_device__"))? else {
        return Ok(None);
    };
    let result = method.call0()?;
    let Ok(pair) = result.cast::<PySequence>() else {
        return Err(invalid_device(obj, &result));
    };
    if pair.len()? != 2 {
        return Err(invalid_device(obj, &result));
    }
    let device_type = DeviceType::from_code(device_field(obj, &result, pair, 0)?);
    // The CPU has one device, and `None` for its index is read as 0, as
    // NumPy reads it: paddle 3.3 reports `(kDLCPU, None)`. Any other device's
    // index must be an int.
    if device_type == DeviceType::CPU && pair.get_item(1)?.is_none() {
        return Ok(Some(Device::cpu()));
    }
    Ok(Some(Device::new(
        device_type,
        device_field(obj, &result, pair, 1)?,
    )))
}

/// Entry `index` (0: the device type, 1: the device id) of the pair
/// `result`, which `obj.__dlpack_device__()` returned: an int within `i32`.
fn device_field(
    obj: &Bound<'_, PyAny>,
    result: &Bound<'_, PyAny>,
    pair: &Bound<'_, PySequence>,
    index: usize,
) -> PyResult<i32> {
    let item = pair.get_item(index)?;
    if !item.is_instance_of::<PyInt>() {
        return Err(invalid_device(obj, result));
    }
    let field = if index == 0 {
        "device_type"
    } else {
        "device_id"
    };
    Ok(int_in_range(&item, i32::MIN..=i32::MAX, || {
        format!("the {field} of {}.__dlpack_device__()", type_name(obj))
    })?)
}

/// The error for a `__dlpack_device__()` of `obj` that returned `result`,
/// not a pair of ints.
#[cold]
#[inline(never)]
fn invalid_device(obj: &Bound<'_, PyAny>, result: &Bound<'_, PyAny>) -> PyErr {
    DLPackError::from(CapsuleError::DeviceTuple {
        type_name: type_name(obj),
        found: result
            .repr()
            .map_or_else(|_| "?".into(), |r| format!("{r}")),
    })
    .into()
}

/// Whether `__dlpack__` failed because it does not take `max_version` (the
/// only new keyword sent when a retry is allowed): a `TypeError` (signature
/// mismatch, also through decorators or pybind11's "incompatible function
/// arguments"), a `NotImplementedError` or a `ValueError` (array-api-strict)
/// whose message names `max_version`. Any other failure is the producer's
/// own and reaches the caller unchanged. Out of line: a failed call only.
#[cold]
#[inline(never)]
fn rejected_max_version(py: Python<'_>, err: &PyErr) -> bool {
    let kind_fits = err.is_instance_of::<PyTypeError>(py)
        || err.is_instance_of::<PyNotImplementedError>(py)
        || err.is_instance_of::<PyValueError>(py);
    // A plain scan of the bytes: `str::contains` was inlined here with its
    // vectorised search (some 600 bytes for a failed call's message).
    kind_fits
        && crate::python::text_of(err.value(py).as_any())
            .as_bytes()
            .windows(b"max_version".len())
            .any(|word| word == b"max_version")
}
