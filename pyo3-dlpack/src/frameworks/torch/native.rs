//! `Native::torch` results: the value handed to torch's own C exchange
//! table (`managed_tensor_to_py_object_no_sync`), no Python call; torch
//! builds without the table, and builds without the `exchange-api`
//! feature, go through `torch.from_dlpack`.

#[cfg(feature = "exchange-api")]
use std::cell::Cell;

use pyo3::prelude::*;

use pyo3::exceptions::PyRuntimeError;

use crate::TensorInfo;
use crate::error::ExportError;
use crate::error::PythonKind;
#[cfg(feature = "exchange-api")]
use crate::exchange::ExchangeApi;
#[cfg(feature = "exchange-api")]
use crate::export::Described;
use crate::export::IntoDLPack;
#[cfg(feature = "exchange-api")]
use crate::export::managed::{IntoBlock, call_deleter};
#[cfg(feature = "exchange-api")]
use crate::export::plan::{CapsuleFormat, ExportRequest};
#[cfg(feature = "exchange-api")]
use crate::ffi::DLManagedTensorVersioned;
use crate::{DLPackError, DataType, Device};

/// `value` as a `torch.Tensor` over its memory (imports torch). What
/// torch's table refuses (a dtype or device torch lacks) is a `BufferError`
/// naming the tensor, with torch's reason trimmed to its first line (torch
/// appends a C++ backtrace).
pub(crate) fn tensor_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    #[cfg(feature = "exchange-api")]
    if let Some(api) = torch_table(py)? {
        return to_torch(py, api, value);
    }
    through_torch_from_dlpack(py, value)
}

/// torch before 2.10 (no exchange table), and builds without the
/// `exchange-api` feature: `torch.from_dlpack` of a
/// `DLPackTensor`, under the table path's rules: a value that may not be
/// written is refused (torch 2.9 takes a versioned capsule and ignores its
/// read-only flag: its tensor would be a writable alias), and what torch
/// refuses is a `BufferError` naming the tensor.
fn through_torch_from_dlpack<T: IntoDLPack>(
    py: Python<'_>,
    value: T,
) -> PyResult<Bound<'_, PyAny>> {
    let tensor = crate::export::DLPackTensor::new(value)?;
    let info = tensor.info();
    let (dtype, device) = (info.dtype(), info.device());
    writable_for_torch(info)?;
    let torch = py.import(super::MODULE)?;
    torch
        .call_method1(pyo3::intern!(py, "from_dlpack"), (tensor,))
        .map_err(|err| {
            if err.is_instance_of::<pyo3::exceptions::PyBufferError>(py) {
                // torch 2.9 raises BufferError where 2.10's table raises RuntimeError.
                let runtime =
                    PythonKind::Runtime.new_err(crate::python::text_of(err.value(py).as_any()));
                return refused(py, runtime, dtype, device);
            }
            refused(py, err, dtype, device)
        })
}

/// torch has no read-only tensors: a tensor over memory that may not be
/// written could be written while Rust still reads it.
fn writable_for_torch(info: &TensorInfo<'_>) -> Result<(), DLPackError> {
    if info.writability() == crate::Writability::Writable {
        return Ok(());
    }
    Err(ExportError::FrameworkRefused {
        array: "torch.Tensor".into(),
        dtype: info.dtype(),
        device: Some(info.device()),
        reason: "torch has no read-only tensors, and this value may not be written; \
                 export it writable, or return a copy"
            .into(),
    }
    .into())
}

/// torch's refusal (a `RuntimeError`) of a `dtype` tensor on `device` as a
/// `BufferError`; other exceptions (`MemoryError`) are kept as they are.
pub(crate) fn refused(py: Python<'_>, err: PyErr, dtype: DataType, device: Device) -> PyErr {
    if !err.is_instance_of::<PyRuntimeError>(py) {
        return err;
    }
    let message = crate::python::text_of(err.value(py).as_any());
    let reason = message.lines().next().unwrap_or_default().trim().to_owned();
    DLPackError::from(ExportError::FrameworkRefused {
        array: "torch.Tensor".into(),
        dtype,
        device: Some(device),
        reason,
    })
    .into()
}

/// `torch.Tensor`'s exchange table (`None`: torch < 2.10).
#[cfg(feature = "exchange-api")]
fn torch_table(py: Python<'_>) -> PyResult<Option<ExchangeApi>> {
    crate::exchange::lookup_type(super::import_tensor_type(py)?)
}

#[cfg(feature = "exchange-api")]
thread_local! {
    /// The token of the last value handed to torch's table that was dropped
    /// on this thread, and the next token to hand out (see [`Watched`]).
    static DROPPED: Cell<u64> = const { Cell::new(0) };
    static NEXT: Cell<u64> = const { Cell::new(1) };
}

/// The owner of a block handed to torch: tells, on this thread, whether its
/// deleter has run. torch's table takes the block when it succeeds; when it
/// fails, it may have run the deleter (an error after `from_blob`) or not
/// (an error before it): the token says which, so the value is dropped
/// exactly once either way (another value dropped meanwhile, say by a
/// garbage collection inside torch, has another token).
#[cfg(feature = "exchange-api")]
struct Watched<T> {
    value: T,
    token: u64,
}

#[cfg(feature = "exchange-api")]
impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        DROPPED.set(self.token);
    }
}

#[cfg(feature = "exchange-api")]
impl<T: IntoDLPack> IntoDLPack for Watched<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.value.tensor_info()
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.value.synchronize(consumer_stream)
    }
}

/// A versioned block of the value (the plan of `__dlpack__(max_version=(1, 3))`)
/// handed to torch's `managed_tensor_to_py_object_no_sync`.
#[cfg(feature = "exchange-api")]
fn to_torch<T: IntoDLPack>(
    py: Python<'_>,
    api: ExchangeApi,
    value: T,
) -> PyResult<Bound<'_, PyAny>> {
    let token = NEXT.get();
    NEXT.set(token.wrapping_add(1));
    let managed = versioned_block(value, token)?;
    let (dtype, device) = {
        // SAFETY: the block just written, ours until handed to torch below.
        let tensor = &unsafe { managed.as_ref() }.dl_tensor;
        (tensor.dtype, tensor.device)
    };
    // SAFETY: a live block this function owns and gives to torch.
    match unsafe { api.to_py_object(py, managed) } {
        Ok(tensor) => Ok(tensor),
        Err(err) => {
            if DROPPED.get() != token {
                // SAFETY: torch failed before taking the block (its deleter
                // did not run, see `Watched`): it is still ours, freed once here.
                unsafe { call_deleter(managed) };
            }
            Err(refused(py, err, dtype, device))
        }
    }
}

/// The value in a versioned managed block (described once, as `export_value`
/// does).
#[cfg(feature = "exchange-api")]
fn versioned_block<T: IntoDLPack>(
    value: T,
    token: u64,
) -> Result<std::ptr::NonNull<DLManagedTensorVersioned>, DLPackError> {
    let described = Described::new(Watched { value, token })?;
    let info = described.info();
    writable_for_torch(info)?;
    let plan = ExportRequest::of_format(CapsuleFormat::Versioned).plan(info)?;
    if let Some(stream) = plan.sync_stream {
        crate::export::synchronize(described.owner(), info, stream)?;
    }
    Ok(described.into_block(&plan))
}
