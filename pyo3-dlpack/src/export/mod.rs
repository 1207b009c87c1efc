//! Export: Rust values to DLPack capsules and the `DLPackTensor` Python object.
//!
//! Every export goes the same way: a checked [`TensorInfo`] (stored by a
//! `DLPackTensor`, or made from the value), an [`ExportPlan`] for what the
//! consumer asked, then the one block writer (`managed::IntoBlock`), from a
//! [`Described`] owner (the owner and its description, made together) and
//! the plan.

mod aligned;
#[cfg(all(feature = "non-dlpack-export", any(not(Py_LIMITED_API), Py_3_11)))]
mod buffer;
mod copy;
#[cfg(feature = "non-dlpack-export")]
mod cuda_array_interface;
mod data;
mod hinted;
mod info;
mod into;
pub(crate) mod managed;
mod method;
#[cfg(feature = "ndarray")]
mod ndarray;
pub(crate) mod plan;
mod tensor;
#[cfg(not(feature = "pickle"))]
mod unpicklable;

pub use aligned::{ALIGNMENT, AlignedBuffer};
#[doc(hidden)]
pub use data::OwnLayout;
pub use data::{RawBuffer, TensorData};
pub use info::{Dims, TensorInfo, TensorInfoBuilder};
pub use into::IntoDLPack;
pub use plan::CapsuleFormat;
pub use tensor::DLPackTensor;

#[cfg(any(feature = "exchange-api", feature = "non-dlpack-import"))]
use std::ptr::NonNull;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::DLPackError;
#[cfg(feature = "exchange-api")]
use crate::DataType;
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned};

pub(crate) use copy::HostTensor;
pub(crate) use managed::Described;
use managed::IntoBlock;
use plan::{ExportPlan, ExportRequest};

/// Exports `owner` as the request asks: describes it (once), plans the
/// export, copies or synchronises as planned, and seals the owner into a
/// capsule. A description that fails is the value's error (`ValueError`).
pub(crate) fn export_value<'py, O: IntoDLPack>(
    py: Python<'py>,
    owner: O,
    request: &ExportRequest,
) -> PyResult<Bound<'py, PyCapsule>> {
    let described = Described::new(owner)?;
    let plan = request.plan(described.info())?;
    if plan.copy {
        return seal_copy(py, described.info(), &plan);
    }
    ready(py, described.owner(), described.info(), &plan, request)?;
    seal(py, described, &plan)
}

/// Exports a `DLPackTensor`'s shared value from its stored description: no
/// description or validation per export. A copy reads the memory, so it
/// describes the value again and checks that description against the live
/// buffer first; if that fails, the export fails (`BufferError`).
pub(crate) fn export_shared<'py>(
    py: Python<'py>,
    described: &Described<Arc<dyn IntoDLPack>>,
    request: &ExportRequest,
) -> PyResult<Bound<'py, PyCapsule>> {
    let info = described.info();
    let plan = request.plan(info)?;
    if plan.copy {
        let fresh = described
            .owner()
            .tensor_info()
            .map_err(DLPackError::redescribed)?;
        return seal_copy(py, &fresh, &request.plan(&fresh)?);
    }
    ready(py, described.owner().as_ref(), info, &plan, request)?;
    seal(py, described, &plan)
}

/// Makes the data safe to use on the consumer's `stream` before an export of
/// device memory: the consumer's stream waits for the one the description
/// names (an event, through the CUDA driver), then the value's own
/// [`IntoDLPack::synchronize`] runs. Out of line: device memory only, and
/// one copy for its callers (`ready_device`, `__cuda_array_interface__`).
#[inline(never)]
pub(crate) fn synchronize<O: IntoDLPack + ?Sized>(
    value: &O,
    info: &TensorInfo<'_>,
    stream: i64,
) -> Result<(), DLPackError> {
    if let Some((producer, consumer)) =
        crate::cuda::streams::export_wait(info.device(), info.stream(), stream)
    {
        crate::cuda::driver::driver("ordering the export's stream before the consumer's")?.wait(
            info.device().device_id,
            producer,
            consumer,
        )?;
    }
    value.synchronize(stream)
}

/// Readies a `DLPackTensor`'s value for an exchange-API consumer, as
/// `__dlpack__(max_version=(1, 3))` does for a consumer on the device's
/// default stream (the stream the table reports as current: NULL), and
/// plans that export.
#[cfg(feature = "exchange-api")]
pub(crate) fn ready_for_exchange(
    py: Python<'_>,
    described: &Described<Arc<dyn IntoDLPack>>,
) -> Result<ExportPlan, DLPackError> {
    let info = described.info();
    let request = ExportRequest {
        stream: crate::cuda::streams::stream_to_request(None, Some(info.device())),
        ..ExportRequest::of_format(CapsuleFormat::Versioned)
    };
    let plan = request.plan(info)?;
    ready(py, described.owner().as_ref(), info, &plan, &request)?;
    Ok(plan)
}

/// A versioned managed tensor of a `DLPackTensor`'s value, for an exchange-API
/// consumer (which owns it and calls its deleter), as
/// [`ready_for_exchange`] planned it.
#[cfg(feature = "exchange-api")]
pub(crate) fn managed_shared(
    described: &Described<Arc<dyn IntoDLPack>>,
    plan: &ExportPlan,
) -> NonNull<DLManagedTensorVersioned> {
    described.into_block(plan)
}

/// A versioned managed tensor owning `value` (imports from the protocols
/// other than DLPack, the exchange API's allocator): the plan of
/// `__dlpack__(max_version=(1, 3))`. Shared as a `DLPackTensor`'s value is
/// (see `seal_copy`): its block is written and freed by the code that serves
/// every `DLPackTensor`, not by a second instance of it for each value type.
#[cfg(any(feature = "exchange-api", feature = "non-dlpack-import"))]
pub(crate) fn managed_value(
    value: Arc<dyn IntoDLPack>,
) -> Result<NonNull<DLManagedTensorVersioned>, DLPackError> {
    let described = Described::shared(value)?;
    let plan = ExportRequest::of_format(CapsuleFormat::Versioned).plan(described.info())?;
    Ok(described.into_block(&plan))
}

/// A versioned managed tensor owning a new zero-filled host tensor (the
/// exchange API's allocator).
#[cfg(feature = "exchange-api")]
pub(crate) fn managed_host_tensor(
    shape: &[i64],
    dtype: DataType,
) -> Result<NonNull<DLManagedTensorVersioned>, DLPackError> {
    managed_value(Arc::new(HostTensor::zeroed(shape, dtype)?))
}

/// Readies the memory for the consumer `plan` is for: the consumer's stream
/// made to wait for the value's (`plan.sync_stream`), or the host (the one
/// host-read rule). Nothing to do for CPU memory, which has no stream and
/// is exported in place as it is: that test is inlined into every export,
/// the rest is not.
#[inline(always)]
fn ready<O: IntoDLPack + ?Sized>(
    py: Python<'_>,
    owner: &O,
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
    request: &ExportRequest,
) -> Result<(), DLPackError> {
    // In place: on the value's device, or memory the host reaches on the CPU.
    debug_assert!(
        !plan.copy && (plan.device == info.device() || info.device().is_host_accessible()),
        "an in-place export of a plan that copies, or of memory on another device"
    );
    if info.device().device_type == crate::DeviceType::CPU && plan.sync_stream.is_none() {
        return Ok(());
    }
    ready_device(py, owner, info, plan, request)
}

/// [`ready`] for memory on another device than the CPU.
#[inline(never)]
fn ready_device<O: IntoDLPack + ?Sized>(
    py: Python<'_>,
    owner: &O,
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
    request: &ExportRequest,
) -> Result<(), DLPackError> {
    if let Some(stream) = plan.sync_stream {
        synchronize(owner, info, stream)?;
    }
    host_readable_for(py, info, plan, request)
}

/// An export whose consumer reads the memory on the host: pinned or managed
/// memory handed over as CPU memory (`dl_device=cpu`); pinned memory as it
/// is (no stream protocol orders it for its consumer: NumPy reads it at
/// once); managed memory to a consumer that named no stream (NumPy, which
/// reads it at once; a CUDA consumer names its stream). The value's stream
/// is waited for first ([`crate::cuda::host`]).
#[inline]
fn host_readable_for(
    py: Python<'_>,
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
    request: &ExportRequest,
) -> Result<(), DLPackError> {
    let source = info.device();
    let in_place = plan.device == source;
    let read_by_host = !in_place
        || source.device_type == crate::DeviceType::CUDA_HOST
        || (source.device_type == crate::DeviceType::CUDA_MANAGED && request.stream.is_none());
    if !read_by_host {
        return Ok(());
    }
    crate::cuda::host::make_host_readable(py, source, info.stream())
}

/// A copying export (`copy=True`, or CUDA device memory asked for on the
/// CPU): the elements `info` describes (checked by the plan to be of known
/// extent, on the host or a CUDA device), copied into a host buffer the
/// capsule owns, once the value's stream is done with them.
fn seal_copy<'py>(
    py: Python<'py>,
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
) -> PyResult<Bound<'py, PyCapsule>> {
    // Sealed as a shared value, so that its block is written and freed by
    // the code that serves every `DLPackTensor` (not a second instance of
    // it for the copy's type): one small allocation beside the copy's own.
    let copy: Arc<dyn IntoDLPack> = Arc::new(HostTensor::copy_of(info)?);
    seal(py, Described::shared(copy)?, plan)
}

/// The block of the planned format, in a capsule.
#[inline]
fn seal<'py>(
    py: Python<'py>,
    described: impl IntoBlock,
    plan: &ExportPlan,
) -> PyResult<Bound<'py, PyCapsule>> {
    match plan.format {
        CapsuleFormat::Legacy => {
            managed::new_capsule(py, described.into_block::<DLManagedTensor>(plan))
        }
        CapsuleFormat::Versioned => {
            managed::new_capsule(py, described.into_block::<DLManagedTensorVersioned>(plan))
        }
    }
}
