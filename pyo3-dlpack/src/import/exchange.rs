//! The DLPack C exchange API (DLPack 1.3, DLPACK.md §5): producers such as
//! torch ≥ 2.10 advertise a static table of C functions as
//! `type(x).__dlpack_c_exchange_api__`, so a consumer can take a tensor
//! without a Python call.
//!
//! The table is looked up once per type and cached (misses too: NumPy arrays
//! pay no failed attribute lookup per call). Types in the cache are kept
//! alive, so a cached address can never be reused by another type.

use std::ptr::{self, NonNull};
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

use crate::ffi::{DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLTensor};

/// Most types remembered; beyond that, lookups are simply not cached.
const CACHE_LIMIT: usize = 64;

/// A producer type's table, checked: major version 1 and the functions we call present.
#[derive(Clone, Copy)]
pub(crate) struct ExchangeApi(&'static DLPackExchangeAPI);

// SAFETY: the table is immutable and lives for the whole process (DLPack:
// "The struct must live for the whole process"); its functions are called
// only while attached to the interpreter, from whichever thread that is.
unsafe impl Send for ExchangeApi {}
// SAFETY: as above; `&ExchangeApi` only reads the immutable table.
unsafe impl Sync for ExchangeApi {}

struct Entry {
    ty: Py<PyType>,
    api: Option<ExchangeApi>,
    /// Keeps the capsule holding the table alive with the type.
    _capsule: Option<Py<PyAny>>,
}

static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The exchange API of `obj`'s type, if it has a usable one.
pub(crate) fn lookup(obj: &Bound<'_, PyAny>) -> Option<ExchangeApi> {
    let ty = obj.get_type();
    {
        let cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = cache.iter().find(|e| e.ty.as_ptr() == ty.as_ptr()) {
            return entry.api;
        }
    }
    let (api, capsule) = find(&ty);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() < CACHE_LIMIT && !cache.iter().any(|e| e.ty.as_ptr() == ty.as_ptr()) {
        cache.push(Entry {
            ty: ty.unbind(),
            api,
            _capsule: capsule,
        });
    }
    api
}

/// Reads and checks `ty.__dlpack_c_exchange_api__`; any problem means "none".
fn find(ty: &Bound<'_, PyType>) -> (Option<ExchangeApi>, Option<Py<PyAny>>) {
    let Ok(attr) = ty.getattr(pyo3::intern!(ty.py(), "__dlpack_c_exchange_api__")) else {
        let _ = PyErr::take(ty.py());
        return (None, None);
    };
    let Ok(capsule) = attr.cast::<PyCapsule>() else {
        return (None, None);
    };
    // SAFETY: attached; the capsule is checked for the exchange API's name.
    let pointer =
        unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLPACK_EXCHANGE_API.as_ptr()) };
    let Some(mut header) = NonNull::new(pointer.cast::<crate::ffi::DLPackExchangeAPIHeader>())
    else {
        let _ = PyErr::take(ty.py());
        return (None, None);
    };
    // Walk `prev_api` to the table of major version 1 (bounded, in case of a cycle).
    for _ in 0..8 {
        // SAFETY: the header is the first field of a process-lifetime table
        // (DLPack: "The struct must live for the whole process").
        let current = unsafe { header.as_ref() };
        if current.version.major == 1 {
            // SAFETY: a major-1 header begins a `DLPackExchangeAPI`, static as above.
            let api: &'static DLPackExchangeAPI = unsafe { header.cast().as_ref() };
            let usable = api.managed_tensor_from_py_object_no_sync.is_some();
            return (
                usable.then_some(ExchangeApi(api)),
                Some(attr.clone().unbind()),
            );
        }
        match NonNull::new(current.prev_api) {
            Some(previous) => header = previous,
            None => break,
        }
    }
    (None, None)
}

/// The exception a failed exchange-API call set (or one saying it set none).
fn producer_error(py: Python<'_>) -> PyErr {
    PyErr::take(py).unwrap_or_else(|| {
        pyo3::exceptions::PyBufferError::new_err(
            "the producer's exchange API failed without setting an error",
        )
    })
}

impl ExchangeApi {
    /// An owned versioned tensor of `obj` (no stream synchronisation).
    pub(crate) fn owned(
        self,
        obj: &Bound<'_, PyAny>,
    ) -> PyResult<NonNull<DLManagedTensorVersioned>> {
        let from_py = self
            .0
            .managed_tensor_from_py_object_no_sync
            .expect("checked in find");
        let mut out: *mut DLManagedTensorVersioned = ptr::null_mut();
        // SAFETY: `obj` is an instance of the type whose table this is (the
        // lookup is by `type(obj)`), we are attached, and `out` is writable.
        let status = unsafe { from_py(obj.as_ptr().cast(), &mut out) };
        match NonNull::new(out) {
            Some(managed) if status == 0 => Ok(managed),
            _ => Err(producer_error(obj.py())),
        }
    }

    /// A non-owning view of `obj`'s tensor, valid while `obj` is alive and
    /// unmodified; `None` when the producer offers no such function.
    pub(crate) fn borrowed(self, obj: &Bound<'_, PyAny>) -> Option<PyResult<DLTensor>> {
        let from_py = self.0.dltensor_from_py_object_no_sync?;
        let mut out = DLTensor {
            data: ptr::null_mut(),
            device: crate::Device::cpu(),
            ndim: 0,
            dtype: crate::DataType::U8,
            shape: ptr::null_mut(),
            strides: ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: as in `owned`; `out` is a writable DLTensor.
        let status = unsafe { from_py(obj.as_ptr().cast(), &mut out) };
        Some(if status == 0 {
            Ok(out)
        } else {
            Err(producer_error(obj.py()))
        })
    }

    /// The table's version (for `PyTensor::version` of borrowed views).
    pub(crate) fn version(self) -> crate::ffi::DLPackVersion {
        self.0.header.version
    }
}
