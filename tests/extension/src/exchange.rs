//! `ExchangeProducer`: a producer of CUDA tensors that speaks the DLPack C
//! exchange API (DLPack 1.3) as torch ≥ 2.10 does, for the stand-in tests
//! (tests/python/test_exchange_standin.py): its type's
//! `__dlpack_c_exchange_api__` is a capsule of a static table whose
//! `current_work_stream` reports the stream the test chose for a device
//! ([`exchange_stream`]), and whose exports hand out float32 tensors over
//! memory the test allocated (stand-in device memory), each with a counted
//! deleter ([`exchange_counts`]). Its `__dlpack__` only counts the call and
//! refuses: the table is the only way in.

use std::collections::HashSet;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3_dlpack::ffi::{
    DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackVersion, DLTensor,
};

#[allow(unused_imports)]
use super::*;

/// What `current_work_stream` reports for a device.
#[derive(Clone, Copy)]
enum Current {
    /// This stream handle (0: NULL, the default stream).
    Stream(usize),
    /// Fails: -1 with a `RuntimeError` set.
    Fail,
}

/// The test's choices per (device type, device id); unset devices report NULL.
static STREAMS: Mutex<Vec<((i32, i32), Current)>> = Mutex::new(Vec::new());

/// The counts [`exchange_counts`] reports.
#[derive(Default)]
struct Counts {
    /// Owning exports (`managed_tensor_from_py_object_no_sync`).
    exported: usize,
    /// Deleter calls on a live export.
    deleted: usize,
    /// Deleter calls on a struct that is not a live export (a second
    /// delete, or a foreign one): never freed, only counted.
    bad_deletes: usize,
    /// Borrowed views (`dltensor_from_py_object_no_sync`).
    borrowed: usize,
    /// `current_work_stream` calls, with the device each asked for.
    queries: Vec<(i32, i32)>,
    /// `__dlpack__` calls.
    dlpack_calls: usize,
    /// The addresses of the exports not deleted yet.
    live: HashSet<usize>,
}

static COUNTS: Mutex<Option<Counts>> = Mutex::new(None);

/// Runs `f` on the counts (never panics on a poisoned lock: deleters run it).
fn with_counts<R>(f: impl FnOnce(&mut Counts) -> R) -> R {
    let mut counts = COUNTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(counts.get_or_insert_with(Counts::default))
}

/// A float32 tensor of `shape` (row-major) at `address` on a device, exported
/// only through the C exchange table.
#[pyclass(frozen)]
pub(crate) struct ExchangeProducer {
    address: usize,
    shape: Vec<i64>,
    strides: Vec<i64>,
    device: Device,
}

#[pymethods]
impl ExchangeProducer {
    /// `address`: memory the test keeps alive while this producer and its
    /// exports live; `device_type`/`device_id`: DLPack codes.
    #[new]
    #[pyo3(signature = (address, shape, device_type=2, device_id=0))]
    fn new(address: usize, shape: Vec<i64>, device_type: i32, device_id: i32) -> PyResult<Self> {
        if shape.iter().any(|&d| d < 0) {
            return Err(PyValueError::new_err("negative dimension"));
        }
        let mut strides = vec![1i64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1].max(1);
        }
        let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
        Ok(Self {
            address,
            shape,
            strides,
            device,
        })
    }

    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Py<PyCapsule>> {
        let table = NonNull::from(&TABLE.0).cast::<c_void>();
        // SAFETY: an immutable static table, alive for the whole process.
        let capsule = unsafe { PyCapsule::new_with_pointer(py, table, DLPACK_EXCHANGE_API) }?;
        Ok(capsule.unbind())
    }

    /// Counted and refused: imports must take the exchange table.
    #[pyo3(signature = (**_kwargs))]
    fn __dlpack__(&self, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        with_counts(|c| c.dlpack_calls += 1);
        Err(PyBufferError::new_err(
            "ExchangeProducer exports only through its C exchange table",
        ))
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (self.device.device_type.code(), self.device.device_id)
    }
}

/// Sets what `current_work_stream` reports for device (`device_type`,
/// `device_id`): `stream` (None: NULL), or a failure when `fail`.
#[pyfunction]
#[pyo3(signature = (device_type, device_id, stream=None, fail=false))]
pub(crate) fn exchange_stream(device_type: i32, device_id: i32, stream: Option<usize>, fail: bool) {
    let current = if fail {
        Current::Fail
    } else {
        Current::Stream(stream.unwrap_or(0))
    };
    let mut streams = STREAMS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    streams.retain(|(device, _)| *device != (device_type, device_id));
    streams.push(((device_type, device_id), current));
}

/// The producer's counts: `exported`, `deleted` (deleter calls on live
/// exports), `bad_deletes` (any other deleter call), `live` (exports not
/// deleted), `borrowed`, `queries` (the devices `current_work_stream` was
/// asked for, in order), `dlpack_calls`.
#[pyfunction]
pub(crate) fn exchange_counts(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    with_counts(|c| -> PyResult<()> {
        d.set_item("exported", c.exported)?;
        d.set_item("deleted", c.deleted)?;
        d.set_item("bad_deletes", c.bad_deletes)?;
        d.set_item("live", c.live.len())?;
        d.set_item("borrowed", c.borrowed)?;
        d.set_item("queries", c.queries.clone())?;
        d.set_item("dlpack_calls", c.dlpack_calls)
    })?;
    Ok(d)
}

/// The table, for the whole process.
struct Table(DLPackExchangeAPI);

// SAFETY: immutable; its only pointer (`prev_api`) is NULL.
unsafe impl Sync for Table {}

static TABLE: Table = Table(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: DLPackVersion::CURRENT,
        prev_api: ptr::null_mut(),
    },
    managed_tensor_allocator: None,
    managed_tensor_from_py_object_no_sync: Some(managed_from_py_object),
    managed_tensor_to_py_object_no_sync: None,
    dltensor_from_py_object_no_sync: Some(dltensor_from_py_object),
    current_work_stream: Some(current_work_stream),
});

/// Runs `body` attached, turning an error or a panic into a set Python
/// exception and -1.
fn guarded(body: impl FnOnce(Python<'_>) -> PyResult<()>) -> i32 {
    // SAFETY: the exchange API's consumers call it attached (dlpack.h: the
    // `*_py_object_*` functions are called with the GIL held), and the
    // crate's consumer calls `current_work_stream` attached too.
    let py = unsafe { Python::assume_attached() };
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(err)) => {
            err.restore(py);
            -1
        }
        Err(_) => {
            PyRuntimeError::new_err("ExchangeProducer panicked").restore(py);
            -1
        }
    }
}

/// `py_object` as an `ExchangeProducer`.
///
/// # Safety
///
/// `py_object` is NULL or a live Python object; attached.
unsafe fn producer_of(
    py: Python<'_>,
    py_object: *mut c_void,
) -> PyResult<PyRef<'_, ExchangeProducer>> {
    if py_object.is_null() {
        return Err(PyTypeError::new_err("NULL object"));
    }
    // SAFETY: non-NULL and live (the caller's contract).
    let object = unsafe { Bound::from_borrowed_ptr(py, py_object.cast()) };
    Ok(object.cast_into::<ExchangeProducer>()?.borrow())
}

/// An export: the managed struct first (its address is the export's), then
/// the shape and strides it points to.
#[repr(C)]
struct Export {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// `managed_tensor_from_py_object_no_sync`.
///
/// # Safety
///
/// Attached; `py_object` NULL or live; `out` NULL or writable.
unsafe extern "C" fn managed_from_py_object(
    py_object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    guarded(|py| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("NULL out"))?;
        // SAFETY: the caller's contract.
        let producer = unsafe { producer_of(py, py_object) }?;
        let mut export = Box::new(Export {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion::CURRENT,
                manager_ctx: ptr::null_mut(),
                deleter: Some(deleter),
                flags: 0,
                dl_tensor: DLTensor {
                    data: producer.address as *mut c_void,
                    device: producer.device,
                    ndim: producer.shape.len() as i32,
                    dtype: DataType::F32,
                    shape: ptr::null_mut(),
                    strides: ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            shape: producer.shape.clone(),
            strides: producer.strides.clone(),
        });
        export.managed.dl_tensor.shape = export.shape.as_mut_ptr();
        export.managed.dl_tensor.strides = export.strides.as_mut_ptr();
        let raw = Box::into_raw(export);
        with_counts(|c| {
            c.exported += 1;
            c.live.insert(raw as usize);
        });
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(raw.cast()) };
        Ok(())
    })
}

/// The deleter of every export: counts, and frees a live export once (any
/// other call is counted in `bad_deletes` and frees nothing). Any thread,
/// attached or not; never panics.
///
/// # Safety
///
/// `managed` is NULL or a struct this table handed out.
unsafe extern "C" fn deleter(managed: *mut DLManagedTensorVersioned) {
    let live = with_counts(|c| {
        let live = c.live.remove(&(managed as usize));
        if live {
            c.deleted += 1;
        } else {
            c.bad_deletes += 1;
        }
        live
    });
    if live {
        // SAFETY: a live export: `Box::into_raw` of an `Export` (whose first
        // field is the managed struct), removed from the live set just now,
        // so freed once.
        drop(unsafe { Box::from_raw(managed.cast::<Export>()) });
    }
}

/// `dltensor_from_py_object_no_sync`: shape and strides point into the
/// producer object, alive while it is.
///
/// # Safety
///
/// Attached; `py_object` NULL or live; `out` NULL or writable.
unsafe extern "C" fn dltensor_from_py_object(py_object: *mut c_void, out: *mut DLTensor) -> i32 {
    guarded(|py| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("NULL out"))?;
        // SAFETY: the caller's contract.
        let producer = unsafe { producer_of(py, py_object) }?;
        let view = DLTensor {
            data: producer.address as *mut c_void,
            device: producer.device,
            ndim: producer.shape.len() as i32,
            dtype: DataType::F32,
            shape: producer.shape.as_ptr().cast_mut(),
            strides: producer.strides.as_ptr().cast_mut(),
            byte_offset: 0,
        };
        with_counts(|c| c.borrowed += 1);
        // SAFETY: `out` is the consumer's non-NULL, writable DLTensor.
        unsafe { out.write(view) };
        Ok(())
    })
}

/// `current_work_stream`: what the test chose for the device (NULL unless
/// set), recording the question.
///
/// # Safety
///
/// Attached; `out` NULL or writable.
unsafe extern "C" fn current_work_stream(
    device_type: i32,
    device_id: i32,
    out: *mut *mut c_void,
) -> i32 {
    guarded(|_| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("NULL out"))?;
        let device = (device_type, device_id);
        with_counts(|c| c.queries.push(device));
        let current = STREAMS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .find(|(d, _)| *d == device)
            .map_or(Current::Stream(0), |(_, current)| *current);
        match current {
            Current::Stream(stream) => {
                // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
                unsafe { out.write(stream as *mut c_void) };
                Ok(())
            }
            Current::Fail => Err(PyRuntimeError::new_err(
                "ExchangeProducer: no current work stream",
            )),
        }
    })
}
