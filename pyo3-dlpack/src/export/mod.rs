//! Export: Rust values to DLPack capsules and the `DLPackTensor` Python object.

mod aligned;
mod bounds;
mod capsule;
mod copy;
mod data;
mod dims;
mod exchange;
mod info;
mod into;
mod managed;
#[cfg(feature = "ndarray")]
mod ndarray;
mod request;
mod template;
mod tensor;

pub use aligned::{ALIGNMENT, AlignedBuffer};
pub use data::{RawBuffer, TensorData};
pub use info::{Dims, TensorInfo, TensorInfoBuilder};
pub use into::IntoDLPack;
pub use request::CapsuleFormat;
pub use tensor::DLPackTensor;

use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::DLPackError;
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use std::sync::Arc;

use copy::HostTensor;
use managed::PendingBlock;
use request::{ExportPlan, ExportRequest};
use template::{Description, Template};

/// Exports `owner` as the request asks: checks its description, plans the
/// export (format, device, stream, copy, read-only), synchronises streams,
/// and moves `owner` into a single-allocation managed tensor in a capsule.
pub(crate) fn export_capsule<'py, O: IntoDLPack>(
    py: Python<'py>,
    owner: O,
    request: &ExportRequest,
) -> PyResult<Bound<'py, PyCapsule>> {
    let info = owner
        .tensor_info()
        .map_err(|err| PyBufferError::new_err(err.to_string()))?;
    let plan = request.plan(&info)?;
    if plan.copy {
        let copied = HostTensor::copy_of(&info);
        let pending = Pending::new(&copied.tensor_info()?, &plan);
        return pending.seal(py, copied);
    }
    if let Some(stream) = plan.sync_stream {
        owner.synchronize(stream)?;
    }
    let pending = Pending::new(&info, &plan);
    pending.seal(py, owner)
}

/// Exports a `DLPackTensor`'s shared value from its cached template: no
/// description or validation per export (copies take the general path).
pub(crate) fn export_shared<'py>(
    py: Python<'py>,
    value: &Arc<dyn IntoDLPack>,
    template: &Template,
    request: &ExportRequest,
) -> PyResult<Bound<'py, PyCapsule>> {
    let plan = request.plan(template)?;
    if plan.copy {
        return export_capsule(py, into::Shared(value.clone()), request);
    }
    if let Some(stream) = plan.sync_stream {
        value.synchronize(stream)?;
    }
    Pending::new(template, &plan).seal(py, value.clone())
}

/// A versioned managed tensor of a `DLPackTensor`'s value, for an exchange-API
/// consumer (which owns it and calls its deleter).
pub(crate) fn managed_versioned(
    value: &Arc<dyn IntoDLPack>,
    template: &Template,
) -> Result<std::ptr::NonNull<DLManagedTensorVersioned>, DLPackError> {
    // The same plan as `__dlpack__(max_version=(1, 3))`: flags, device.
    let request = ExportRequest {
        max_version: Some((1, 3)),
        ..ExportRequest::default()
    };
    let plan = request.plan(template)?;
    Ok(
        PendingBlock::<DLManagedTensorVersioned, _>::new(template, plan.device, plan.flags())
            .finish(value.clone()),
    )
}

/// A versioned managed tensor owning a new zero-filled host tensor.
pub(crate) fn managed_host_tensor(
    shape: &[i64],
    dtype: crate::DataType,
) -> Result<std::ptr::NonNull<DLManagedTensorVersioned>, DLPackError> {
    let tensor = HostTensor::zeroed(shape, dtype)
        .ok_or_else(|| DLPackError::SizeOverflow(format!("shape {shape:?} of {dtype}")))?;
    let info = tensor.tensor_info()?;
    let pending =
        PendingBlock::<DLManagedTensorVersioned, HostTensor>::new(&info, info.device(), 0);
    drop(info);
    Ok(pending.finish(tensor))
}

/// A block of the planned format, waiting for its owner.
enum Pending<O> {
    Legacy(PendingBlock<DLManagedTensor, O>),
    Versioned(PendingBlock<DLManagedTensorVersioned, O>),
}

impl<O: Send + 'static> Pending<O> {
    fn new(info: &impl Description, plan: &ExportPlan) -> Self {
        match plan.format {
            CapsuleFormat::Legacy => Self::Legacy(PendingBlock::new(info, plan.device, 0)),
            CapsuleFormat::Versioned => {
                Self::Versioned(PendingBlock::new(info, plan.device, plan.flags()))
            }
        }
    }

    fn seal(self, py: Python<'_>, owner: O) -> PyResult<Bound<'_, PyCapsule>> {
        match self {
            Self::Legacy(block) => capsule::new_capsule(py, block.finish(owner)),
            Self::Versioned(block) => capsule::new_capsule(py, block.finish(owner)),
        }
    }
}
