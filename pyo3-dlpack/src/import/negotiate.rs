//! Asking a producer for a capsule: `__dlpack_device__`, then
//! `__dlpack__(max_version=…, stream=…, dl_device=…, copy=…)`, and a legacy
//! retry only when the producer rejected the keywords themselves.

use pyo3::exceptions::{PyAttributeError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
#[cfg(not(any(Py_3_12, not(any(Py_LIMITED_API, PyPy)))))]
use pyo3::types::PyDict;
use pyo3::types::{PyBool, PyCapsule, PyInt, PySequence, PyString, PyTuple};

use crate::error::CapsuleError;
use crate::import::protocols::Protocols;
use crate::pyint::int_in_range;
use crate::{DLPackError, Device, DeviceType, Writability, protocol};

/// How to ask a producer for its tensor: the keywords of `__dlpack__`.
///
/// The default asks for a versioned DLPack 1.3 capsule, on the tensor's own
/// device, with no copy preference and the default stream.
///
/// ```
/// use pyo3_dlpack::{Device, ImportOptions};
///
/// let options = ImportOptions::new().copy(true).dl_device(Device::cpu());
/// assert_eq!(options.max_version(), (1, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    max_version: (u32, u32),
    stream: Option<i64>,
    dl_device: Option<Device>,
    copy: Option<bool>,
    protocols: Protocols,
    stream_mode: StreamMode,
}

/// How an import of memory on a device with streams (CUDA, ROCm) is ordered
/// after the producer's work ([`ImportOptions::stream_mode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamMode {
    /// The default, and the safe one: the data is ready on the consumer's
    /// stream when the import returns. `__dlpack__(stream=…)` makes the
    /// producer order it (CUDA's legacy default stream, 1, unless
    /// [`ImportOptions::stream`] names another); through a producer's C
    /// exchange table (torch), an event recorded on the producer's current
    /// stream makes the legacy default stream wait (through the CUDA driver,
    /// loaded at run time; without it, and on ROCm, `__dlpack__` is used).
    #[default]
    Synchronize,
    /// No synchronisation: the tensor carries the producer's current work
    /// stream ([`PyTensor::stream`](crate::PyTensor::stream)), on which the
    /// caller launches its work, which is then ordered after the producer's
    /// (tvm-ffi's model; nothing blocks, so it is safe under CUDA graph
    /// capture). Work on any other stream must wait for that one first.
    /// Applies to producers with a C exchange table; others are synchronised.
    StreamOrdered,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            max_version: protocol::MAX_VERSION,
            stream: None,
            dl_device: None,
            copy: None,
            protocols: Protocols::ALL,
            stream_mode: StreamMode::Synchronize,
        }
    }
}

impl ImportOptions {
    /// The defaults: `max_version=(1, 3)`, default stream, no device or copy request.
    pub fn new() -> Self {
        Self::default()
    }

    /// The highest DLPack version to ask for. A major below 1 asks for the
    /// legacy capsule, which carries no flags, so the import is read-only
    /// (see [`PyTensor::is_read_only`](crate::PyTensor::is_read_only)).
    pub fn with_max_version(mut self, major: u32, minor: u32) -> Self {
        self.max_version = (major, minor);
        self
    }

    /// The consumer stream passed to CUDA and ROCm producers (a `cudaStream_t`
    /// as an integer, or 1/2 for CUDA's legacy/per-thread default streams; -1
    /// for no synchronisation). Without it, CUDA producers (device memory or
    /// managed memory) get 1 and ROCm
    /// producers 0: the legacy default stream. CPU producers never get a stream.
    pub fn stream(mut self, stream: i64) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Asks the producer for the tensor on this device (for example `Device::cpu()`).
    pub fn dl_device(mut self, device: Device) -> Self {
        self.dl_device = Some(device);
        self
    }

    /// `true`: the producer must copy; `false`: it must not.
    pub fn copy(mut self, copy: bool) -> Self {
        self.copy = Some(copy);
        self
    }

    /// Which protocols besides DLPack are accepted, for objects without
    /// `__dlpack__` (all by default): `__cuda_array_interface__`,
    /// `__array_interface__`, the buffer protocol, tried in that order.
    pub fn protocols(mut self, protocols: Protocols) -> Self {
        self.protocols = protocols;
        self
    }

    /// The protocols besides DLPack that are accepted.
    pub fn accepted_protocols(&self) -> Protocols {
        self.protocols
    }

    /// How imports of memory with streams are ordered (see [`StreamMode`]).
    pub fn stream_mode(mut self, mode: StreamMode) -> Self {
        self.stream_mode = mode;
        self
    }

    /// The stream mode imports use.
    pub fn selected_stream_mode(&self) -> StreamMode {
        self.stream_mode
    }

    /// The consumer stream given with [`stream`](Self::stream), if any.
    pub(crate) fn consumer_stream(&self) -> Option<i64> {
        self.stream
    }

    /// The `max_version` that will be sent.
    pub fn max_version(&self) -> (u32, u32) {
        self.max_version
    }

    /// Whether these are the defaults in all that matters to a producer
    /// (a versioned capsule, no device, copy or stream request).
    pub(crate) fn is_plain(&self) -> bool {
        self.max_version.0 >= 1
            && self.stream.is_none()
            && self.dl_device.is_none()
            && self.copy.is_none()
    }

    /// The stream `__dlpack__` gets for a tensor on `device`, if any.
    pub(crate) fn stream_for(&self, device: Option<Device>) -> Option<i64> {
        protocol::stream_to_request(self.stream, device)
    }
}

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
    let device = if is_host_only_type(obj) {
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
            // An older producer (`__dlpack__(self, stream=None)`): ask again
            // with only what it understands.
            let mut legacy = Keywords::new(py);
            if let Some(stream) = stream {
                legacy.push(intern!(py, "stream"), stream.into_pyobject(py)?.into_any());
            }
            legacy
                .call_dlpack(obj)
                .inspect_err(|retry_err| retry_err.set_cause(py, Some(err)))?
                .ok_or_else(|| not_dlpack(obj))?
        }
        Ok(Some(result)) => result,
        Err(err) => return Err(err),
    };
    result.cast_into::<PyCapsule>().map(Some).map_err(|err| {
        DLPackError::NotACapsule {
            producer: type_name(obj),
            found: type_name(err.into_inner().as_any()),
        }
        .into()
    })
}

fn not_dlpack(obj: &Bound<'_, PyAny>) -> PyErr {
    DLPackError::NotDLPack {
        type_name: type_name(obj),
    }
    .into()
}

/// Calls `obj.__dlpack__(max_version=(1, 3))` and drops what it returns,
/// for its error: a producer whose C exchange export failed (torch: meta,
/// sparse and quantized tensors) raises its own error there, without the
/// `__dlpack_device__` call first (torch's fails with a `ValueError` for
/// meta tensors, where its `__dlpack__` raises `BufferError`, as NumPy's
/// import does). `Ok` when it exports after all: then import it as usual.
pub(crate) fn probe_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = obj.py();
    let mut keywords = Keywords::new(py);
    keywords.push(
        intern!(py, "max_version"),
        max_version_object(py, protocol::MAX_VERSION)?,
    );
    match keywords.call_dlpack(obj)? {
        Some(_) => Ok(()),
        None => Err(not_dlpack(obj)),
    }
}

/// `(1, 3)` as a Python tuple, made once; other versions on the fly.
fn max_version_object(py: Python<'_>, (major, minor): (u32, u32)) -> PyResult<Bound<'_, PyAny>> {
    static DEFAULT: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();
    if (major, minor) == protocol::MAX_VERSION {
        let default =
            DEFAULT.get_or_try_init(py, || PyTuple::new(py, [1u32, 3]).map(Bound::unbind))?;
        return Ok(default.bind(py).clone().into_any());
    }
    Ok((major, minor).into_pyobject(py)?.into_any())
}

/// Keyword arguments for `__dlpack__` (at most four), passed by vectorcall
/// (no dict, no bound method) where the C API allows it. Nothing is
/// allocated for the common call, `__dlpack__(max_version=(1, 3))`.
struct Keywords<'py> {
    py: Python<'py>,
    names: [Option<Bound<'py, PyString>>; 4],
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

    fn push(&mut self, name: &Bound<'py, PyString>, value: Bound<'py, PyAny>) {
        self.names[self.len] = Some(name.clone());
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
        self.names[..self.len].iter().flatten()
    }

    /// The keyword names as a tuple; `("max_version",)` is made once.
    #[cfg(any(Py_3_12, not(any(Py_LIMITED_API, PyPy))))]
    fn kwnames(&self) -> PyResult<Bound<'py, PyTuple>> {
        static MAX_VERSION_ONLY: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();
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

/// Types whose tensors always live in host memory, so `__dlpack_device__`
/// (a Python call) can be skipped: NumPy has no device arrays. Compared by
/// the type's C name, so NumPy need not be imported.
pub(crate) fn is_host_only_type(obj: &Bound<'_, PyAny>) -> bool {
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    {
        // SAFETY: a live type object (`obj` holds a reference to it).
        let tp_name = unsafe { (*obj.get_type_ptr()).tp_name };
        // Byte by byte up to the first difference, so a long name is not
        // measured first (this runs on every import of a non-NumPy tensor
        // until a NumPy array has been seen).
        let mut name = tp_name;
        for &expected in c"numpy.ndarray".to_bytes_with_nul() {
            // SAFETY: `tp_name` is a NUL-terminated string owned by the live
            // type; `name` moves past a byte only when it matched a non-NUL
            // byte, so it stays within the string.
            if unsafe { *name } as u8 != expected {
                return false;
            }
            // SAFETY: as above: at most one past the NUL, which stays in
            // bounds of the string's allocation as `add` requires.
            name = unsafe { name.add(1) };
        }
        true
    }
    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
    {
        // No `tp_name` here: compare with `numpy.ndarray` itself, cached once
        // NumPy is imported (never importing it ourselves).
        static NDARRAY: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();
        let py = obj.py();
        let ndarray = match NDARRAY.get(py) {
            Some(ndarray) => ndarray,
            None => match imported_ndarray(py) {
                Some(ndarray) => NDARRAY.get_or_init(py, || ndarray),
                None => return false,
            },
        };
        obj.get_type().is(ndarray.bind(py))
    }
}

/// `numpy.ndarray` if NumPy is already imported.
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
fn imported_ndarray(py: Python<'_>) -> Option<Py<pyo3::types::PyType>> {
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let numpy = modules.get_item("numpy").ok()?;
    let ndarray = numpy.getattr("ndarray").ok()?;
    Some(ndarray.cast_into::<pyo3::types::PyType>().ok()?.unbind())
}

/// What the producer of a legacy capsule says about writes through its own
/// API. NumPy before 2.1 exports only legacy capsules, and only of writable
/// arrays (read-only ones raise `BufferError`), so an exact `numpy.ndarray`
/// whose `flags.writeable` is true is writable; any other producer cannot say.
pub(crate) fn legacy_writability(obj: &Bound<'_, PyAny>) -> PyResult<Writability> {
    let py = obj.py();
    let ty = obj.get_type();
    // `to_cow`: `to_str` is not in the limited API before 3.10.
    let is_ndarray = ty.name()?.to_cow()? == "ndarray" && ty.module()?.to_cow()? == "numpy";
    if is_ndarray {
        let flags = obj.getattr(intern!(py, "flags"))?;
        if flags.getattr(intern!(py, "writeable"))?.is_truthy()? {
            return Ok(Writability::Writable);
        }
    }
    Ok(Writability::Unknown)
}

/// `obj.name`, `None` if it has no such attribute; other errors propagate.
pub(crate) fn optional_attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj.getattr(name) {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.is_instance_of::<PyAttributeError>(obj.py()) => Ok(None),
        Err(err) => Err(err),
    }
}

/// `__dlpack_device__()` as a `Device`, or `None` if the producer has none.
fn producer_device(obj: &Bound<'_, PyAny>) -> PyResult<Option<Device>> {
    let Some(method) = optional_attr(obj, intern!(obj.py(), "__dlpack_device__"))? else {
        return Ok(None);
    };
    let result = method.call0()?;
    let invalid = || {
        DLPackError::from(CapsuleError::DeviceTuple {
            type_name: type_name(obj),
            found: result.repr().map_or_else(|_| "?".into(), |r| r.to_string()),
        })
    };
    let pair = result.cast::<PySequence>().map_err(|_| invalid())?;
    if pair.len()? != 2 {
        return Err(invalid().into());
    }
    let int = |i: usize, field: &str| -> PyResult<i32> {
        let item = pair.get_item(i)?;
        if !item.is_instance_of::<PyInt>() {
            return Err(invalid().into());
        }
        Ok(int_in_range(&item, i32::MIN..=i32::MAX, || {
            format!("the {field} of {}.__dlpack_device__()", type_name(obj))
        })?)
    };
    let device_type = int(0, "device_type")?;
    Ok(Some(Device::new(
        DeviceType::from_code(device_type),
        int(1, "device_id")?,
    )))
}

/// Whether `__dlpack__` failed because it does not take `max_version` (the
/// only new keyword sent when a retry is allowed): a `TypeError` (signature
/// mismatch, also through decorators or pybind11's "incompatible function
/// arguments"), a `NotImplementedError` or a `ValueError` (array-api-strict)
/// whose message names `max_version`. Any other failure is the producer's
/// own and reaches the caller unchanged.
fn rejected_max_version(py: Python<'_>, err: &PyErr) -> bool {
    let kind_fits = err.is_instance_of::<PyTypeError>(py)
        || err.is_instance_of::<PyNotImplementedError>(py)
        || err.is_instance_of::<PyValueError>(py);
    kind_fits && err.value(py).to_string().contains("max_version")
}

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".into(), |n| n.to_string())
}
