//! `Native::torch` results: the value handed to torch's own C exchange
//! table (`managed_tensor_to_py_object_no_sync`, [`table`]), no Python
//! call; torch builds without the table, and builds without the
//! `exchange-api` feature, go through `torch.from_dlpack`.

#[cfg(feature = "exchange-api")]
mod table;

use pyo3::prelude::*;

use pyo3::exceptions::PyRuntimeError;

use crate::TensorInfo;
use crate::error::ExportError;
use crate::export::IntoDLPack;
use crate::{DLPackError, DataType, Device};

/// `value` as a `torch.Tensor` over its memory (imports torch). What
/// torch's table refuses (a dtype or device torch lacks) is a `BufferError`
/// naming the tensor, with torch's reason trimmed to its first line (torch
/// appends a C++ backtrace).
pub(crate) fn tensor_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    #[cfg(feature = "exchange-api")]
    if let Some(api) = table::torch_table(py)? {
        return table::to_torch(py, api, value);
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
                    PyRuntimeError::new_err(crate::python::text_of(err.value(py).as_any()));
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
