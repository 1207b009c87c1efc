//! `ExchangeProducer`: a producer of CUDA tensors that speaks the DLPack C
//! exchange API (DLPack 1.3) as torch ≥ 2.10 does, for the stand-in tests
//! (tests/python/test_exchange_standin.py): its type's
//! `__dlpack_c_exchange_api__` is a capsule of a static table whose
//! `current_work_stream` reports the stream the test chose for a device
//! ([`exchange_stream`]), and whose exports hand out float32 tensors over
//! memory the test allocated (stand-in device memory), each with a counted
//! deleter ([`exchange_counts`]). Its `__dlpack__` only counts the call and
//! refuses: the table is the only way in.
//!
//! The table's allocator (what `allocate_like` calls) hands out blocks of a
//! pool the test filled with stand-in device memory ([`exchange_pool`]), one
//! block per float32 tensor, returned to the pool by the allocation's
//! deleter; `managed_tensor_to_py_object_no_sync` wraps an allocation as an
//! `ExchangeProducer` that owns it (deleted when the object is).

use std::collections::HashSet;
use std::ffi::{CString, c_void};
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
    /// The addresses of the exports not deleted yet (allocations among them).
    live: HashSet<usize>,
    /// Allocations (`managed_tensor_allocator`) handed out.
    allocated: usize,
    /// Allocations deleted: their blocks back in the pool.
    freed: usize,
    /// Objects made of an allocation (`managed_tensor_to_py_object_no_sync`).
    wrapped: usize,
}

/// A block of the allocator's pool: `bytes` of memory at `address` on a
/// (device type, device id).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Block {
    device: (i32, i32),
    address: usize,
    bytes: usize,
}

/// The allocator's free blocks, first fit in the order they were added or
/// given back (a block given back is used first: reuse is immediate).
static POOL: Mutex<Vec<Block>> = Mutex::new(Vec::new());

fn with_pool<R>(f: impl FnOnce(&mut Vec<Block>) -> R) -> R {
    f(&mut POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
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
    /// The allocation this object owns (made by the table's allocator).
    owned: Option<Owned>,
}

/// An allocation owned by the `ExchangeProducer` made of it: deleted (its
/// block back in the pool) when the object is dropped.
struct Owned(NonNull<DLManagedTensorVersioned>);

// SAFETY: the deleter may run on any thread (it only takes the counts' and
// the pool's locks), and nothing else reads the struct through this pointer.
unsafe impl Send for Owned {}
// SAFETY: as above; `&Owned` gives no access to the struct.
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: an allocation of the table, handed to this object by
        // `managed_tensor_to_py_object_no_sync`, deleted once, here.
        unsafe { deleter(self.0.as_ptr()) };
    }
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
        let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
        Ok(Self {
            address,
            strides: row_major(&shape),
            shape,
            device,
            owned: None,
        })
    }

    /// The address of the memory it exports.
    #[getter]
    fn address(&self) -> usize {
        self.address
    }

    /// Whether it owns an allocation of the table's allocator.
    #[getter]
    fn allocated(&self) -> bool {
        self.owned.is_some()
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

/// Row-major element strides of `shape`.
fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    strides
}

/// Adds a block of `nbytes` at `address` on device (`device_type`,
/// `device_id`) to the allocator's pool; `clear=True` empties the pool
/// first (and adds nothing when `address` is None).
#[pyfunction]
#[pyo3(signature = (device_type, device_id, address=None, nbytes=0, clear=false))]
pub(crate) fn exchange_pool(
    device_type: i32,
    device_id: i32,
    address: Option<usize>,
    nbytes: usize,
    clear: bool,
) -> Vec<usize> {
    with_pool(|pool| {
        if clear {
            pool.clear();
        }
        if let Some(address) = address {
            pool.push(Block {
                device: (device_type, device_id),
                address,
                bytes: nbytes,
            });
        }
        pool.iter().map(|block| block.address).collect()
    })
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
/// exports), `bad_deletes` (any other deleter call), `live` (exports and
/// allocations not deleted), `borrowed`, `queries` (the devices
/// `current_work_stream` was asked for, in order), `dlpack_calls`,
/// `allocated`, `freed` (allocations deleted), `wrapped` (allocations made
/// objects), `pool` (the free blocks' addresses, first fit first).
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
        d.set_item("dlpack_calls", c.dlpack_calls)?;
        d.set_item("allocated", c.allocated)?;
        d.set_item("freed", c.freed)?;
        d.set_item("wrapped", c.wrapped)
    })?;
    d.set_item(
        "pool",
        with_pool(|pool| -> Vec<usize> { pool.iter().map(|block| block.address).collect() }),
    )?;
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
    managed_tensor_allocator: Some(allocator),
    managed_tensor_from_py_object_no_sync: Some(managed_from_py_object),
    managed_tensor_to_py_object_no_sync: Some(managed_to_py_object),
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
    if let Ok(legacy) = object.cast::<LegacyExchangeProducer>() {
        return Ok(legacy.get().inner.clone_ref(py).into_bound(py).borrow());
    }
    Ok(object.cast_into::<ExchangeProducer>()?.borrow())
}

/// An [`ExchangeProducer`] whose type publishes the same table only under
/// DLPack 1.2's name, `__c_dlpack_exchange_api__`, as an int (its address),
/// as tvm-ffi 0.1.3 and older publish it; no 1.3 capsule. Its type is
/// immutable (Python 3.10+; not in the abi3-py39 build), as the int is read
/// only from types Python code cannot change.
#[cfg_attr(not(feature = "abi3"), pyclass(frozen, immutable_type))]
#[cfg_attr(feature = "abi3", pyclass(frozen))]
pub(crate) struct LegacyExchangeProducer {
    inner: Py<ExchangeProducer>,
}

#[pymethods]
impl LegacyExchangeProducer {
    /// As [`ExchangeProducer::new`], on the CPU by default.
    #[new]
    #[pyo3(signature = (address, shape, device_type=1, device_id=0))]
    fn new(
        py: Python<'_>,
        address: usize,
        shape: Vec<i64>,
        device_type: i32,
        device_id: i32,
    ) -> PyResult<Self> {
        let inner = ExchangeProducer::new(address, shape, device_type, device_id)?;
        Ok(Self {
            inner: Py::new(py, inner)?,
        })
    }

    #[classattr]
    fn __c_dlpack_exchange_api__() -> usize {
        std::ptr::from_ref(&TABLE.0) as usize
    }

    /// Counted and refused, as [`ExchangeProducer::__dlpack__`].
    #[pyo3(signature = (**_kwargs))]
    fn __dlpack__(&self, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        with_counts(|c| c.dlpack_calls += 1);
        Err(PyBufferError::new_err(
            "LegacyExchangeProducer exports only through its C exchange table",
        ))
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        self.inner.get().__dlpack_device__()
    }
}

/// An export: the managed struct first (its address is the export's), then
/// the shape and strides it points to; an allocation's block.
#[repr(C)]
struct Export {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
    block: Option<Block>,
}

impl Export {
    /// A float32 tensor of `shape` (row-major) at `address` on `device`,
    /// handed out as a live export.
    fn hand_out(
        address: usize,
        device: Device,
        shape: Vec<i64>,
        block: Option<Block>,
    ) -> *mut DLManagedTensorVersioned {
        let mut export = Box::new(Export {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion::CURRENT,
                manager_ctx: ptr::null_mut(),
                deleter: Some(deleter),
                flags: 0,
                dl_tensor: DLTensor {
                    data: address as *mut c_void,
                    device,
                    ndim: shape.len() as i32,
                    dtype: DataType::F32,
                    shape: ptr::null_mut(),
                    strides: ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            strides: row_major(&shape),
            shape,
            block,
        });
        export.managed.dl_tensor.shape = export.shape.as_mut_ptr();
        export.managed.dl_tensor.strides = export.strides.as_mut_ptr();
        let raw = Box::into_raw(export);
        with_counts(|c| {
            if block.is_some() {
                c.allocated += 1;
            } else {
                c.exported += 1;
            }
            c.live.insert(raw as usize);
        });
        raw.cast()
    }
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
        let raw = Export::hand_out(
            producer.address,
            producer.device,
            producer.shape.clone(),
            None,
        );
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(raw) };
        Ok(())
    })
}

/// Reports an allocator's failure through the consumer's `SetError`.
fn set_error(
    set_error: pyo3_dlpack::ffi::DLPackSetError,
    ctx: *mut c_void,
    kind: &str,
    message: &str,
) -> i32 {
    if let Some(set_error) = set_error {
        let kind = CString::new(kind).unwrap_or_default();
        let message = CString::new(message).unwrap_or_default();
        // SAFETY: the consumer's callback with its context and two
        // NUL-terminated strings alive through the call.
        unsafe { set_error(ctx, kind.as_ptr(), message.as_ptr()) };
    }
    -1
}

/// `managed_tensor_allocator`: a float32 tensor like `prototype` (its
/// device, shape) in the first free block of the pool on its device that
/// holds it; a `TypeError` for another dtype, a `MemoryError` when no block
/// does (both through `set_error`).
///
/// # Safety
///
/// `prototype` NULL or a readable DLTensor whose shape holds `ndim`
/// extents; `out` NULL or writable.
unsafe extern "C" fn allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    error: pyo3_dlpack::ffi::DLPackSetError,
) -> i32 {
    let Some((prototype, out)) = NonNull::new(prototype).zip(NonNull::new(out)) else {
        return set_error(error, error_ctx, "ValueError", "NULL prototype or out");
    };
    // SAFETY: readable (the caller's contract).
    let prototype = unsafe { prototype.as_ref() };
    if prototype.dtype != DataType::F32 {
        let message = format!(
            "ExchangeProducer allocates float32 only, not {}",
            prototype.dtype
        );
        return set_error(error, error_ctx, "TypeError", &message);
    }
    let ndim = usize::try_from(prototype.ndim).unwrap_or(0);
    let shape = if ndim == 0 {
        Vec::new()
    } else {
        // SAFETY: `ndim` extents (the caller's contract).
        unsafe { std::slice::from_raw_parts(prototype.shape, ndim) }.to_vec()
    };
    let bytes = shape.iter().product::<i64>().max(0) as usize * 4;
    let device = prototype.device;
    let key = (device.device_type.code(), device.device_id);
    let taken = with_pool(|pool| {
        let found = pool
            .iter()
            .position(|block| block.device == key && block.bytes >= bytes)?;
        Some(pool.remove(found))
    });
    let Some(block) = taken else {
        let message = format!("ExchangeProducer: no free block of {bytes} bytes on {device}");
        return set_error(error, error_ctx, "MemoryError", &message);
    };
    let raw = Export::hand_out(block.address, device, shape, Some(block));
    // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
    unsafe { out.write(raw) };
    0
}

/// `managed_tensor_to_py_object_no_sync`: an `ExchangeProducer` that owns
/// `tensor` (an allocation of this table), a new reference in `out`.
///
/// # Safety
///
/// Attached; `tensor` NULL or a live allocation of this table, ours from
/// now on; `out` NULL or writable.
unsafe extern "C" fn managed_to_py_object(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> i32 {
    guarded(|py| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("NULL out"))?;
        let tensor = NonNull::new(tensor).ok_or_else(|| PyValueError::new_err("NULL tensor"))?;
        // Owned from here: deleted if the object cannot be made.
        let owned = Owned(tensor);
        // SAFETY: a live allocation (the caller's contract): an `Export`,
        // whose first field is the managed struct.
        let export = unsafe { tensor.cast::<Export>().as_ref() };
        let producer = ExchangeProducer {
            address: export.managed.dl_tensor.data as usize,
            shape: export.shape.clone(),
            strides: export.strides.clone(),
            device: export.managed.dl_tensor.device,
            owned: Some(owned),
        };
        let object = Bound::new(py, producer)?;
        with_counts(|c| c.wrapped += 1);
        // SAFETY: `out` is the consumer's non-NULL, writable out-parameter.
        unsafe { out.write(object.into_ptr().cast()) };
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
        if !live {
            c.bad_deletes += 1;
        }
        live
    });
    if live {
        // SAFETY: a live export: `Box::into_raw` of an `Export` (whose first
        // field is the managed struct), removed from the live set just now,
        // so freed once.
        let export = unsafe { Box::from_raw(managed.cast::<Export>()) };
        // An allocation's block is back in the pool, first in line.
        if let Some(block) = export.block {
            with_pool(|pool| pool.insert(0, block));
        }
        with_counts(|c| {
            if export.block.is_some() {
                c.freed += 1;
            } else {
                c.deleted += 1;
            }
        });
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
