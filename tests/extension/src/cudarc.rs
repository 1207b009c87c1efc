//! cudarc (feature `cudarc`, in the GPU bundle): `CudaSlice` exports and
//! typed cudarc views of CUDA imports. Every function needs a CUDA GPU;
//! the tests that call them skip without one.

#[allow(unused_imports)]
use super::*;

use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3_dlpack::StreamMode;
use pyo3_dlpack::cudarc::driver::{CudaContext, CudaStream, DevicePtr, DriverError};

fn driver(err: DriverError) -> PyErr {
    PyRuntimeError::new_err(err.to_string())
}

/// A new non-blocking stream on GPU `device`; a `RuntimeError` without a
/// CUDA driver (cudarc itself would panic).
fn new_stream(device: usize) -> PyResult<Arc<CudaStream>> {
    // SAFETY: only tries to load the driver library (its initialisers run,
    // as they would on first use).
    if !unsafe { pyo3_dlpack::cudarc::driver::sys::is_culib_present() } {
        return Err(PyRuntimeError::new_err(
            "no CUDA driver (libcuda) on this machine",
        ));
    }
    CudaContext::new(device)
        .and_then(|ctx| ctx.new_stream())
        .map_err(driver)
}

/// `(tensor, address)`: 0..n as float32 in a cudarc slice on GPU `device`,
/// copied there on a stream of its own (not yet finished, maybe: consumers
/// must wait for it), exported with a drop counter.
#[pyfunction]
#[pyo3(signature = (n, device=0))]
pub(crate) fn cudarc_arange(n: usize, device: usize) -> PyResult<(DLPackTensor, usize)> {
    let stream = new_stream(device)?;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let slice = stream.clone_htod(&values).map_err(driver)?;
    let (address, _read) = slice.device_ptr(&stream);
    let address = address as usize;
    drop(_read);
    Ok((DLPackTensor::new(Tracked::new(slice))?, address))
}

/// Imports `tensor`, optionally stream-ordered.
fn import_tensor(tensor: &Bound<'_, PyAny>, stream_ordered: bool) -> PyResult<PyTensor> {
    let mode = if stream_ordered {
        StreamMode::StreamOrdered
    } else {
        StreamMode::Synchronize
    };
    PyTensor::from_pyany_with(tensor, &ImportOptions::new().stream_mode(mode))
}

/// The sum of a contiguous float32 CUDA tensor, read through a cudarc view
/// on a new stream of its device.
#[pyfunction]
#[pyo3(signature = (tensor, *, stream_ordered=false))]
pub(crate) fn cudarc_sum(tensor: &Bound<'_, PyAny>, stream_ordered: bool) -> PyResult<f64> {
    let tensor = import_tensor(tensor, stream_ordered)?;
    let stream = new_stream(tensor.device().device_id as usize)?;
    let view = tensor.cuda_view::<f32>(&stream)?;
    let host = stream.clone_dtoh(&view.as_view()).map_err(driver)?;
    Ok(host.iter().map(|&v| f64::from(v)).sum())
}

/// Writes `value` into every element of a contiguous float32 CUDA tensor
/// through a mutable cudarc view, on a new stream of its device, and
/// returns without synchronising: the producer's stream is made to wait.
#[pyfunction]
#[pyo3(signature = (tensor, value, *, stream_ordered=false))]
pub(crate) fn cudarc_fill(
    tensor: &Bound<'_, PyAny>,
    value: f32,
    stream_ordered: bool,
) -> PyResult<()> {
    let mut tensor = import_tensor(tensor, stream_ordered)?;
    let stream = new_stream(tensor.device().device_id as usize)?;
    let mut view = tensor.cuda_view_mut::<f32>(&stream)?;
    let values = vec![value; view.len()];
    stream
        .memcpy_htod(&values, &mut view.as_view_mut())
        .map_err(driver)?;
    Ok(())
}

/// The error of a cudarc view of `tensor` as `T` on GPU `device`, as
/// `(exception type name, message)`, or `None` when the view is made.
#[pyfunction]
#[pyo3(signature = (tensor, device=0, *, mutable=false))]
pub(crate) fn cudarc_view_error(
    py: Python<'_>,
    tensor: &Bound<'_, PyAny>,
    device: usize,
    mutable: bool,
) -> PyResult<Option<(String, String)>> {
    let mut tensor = PyTensor::from_pyany(tensor)?;
    let stream = new_stream(device)?;
    let made = if mutable {
        tensor.cuda_view_mut::<f32>(&stream).map(drop)
    } else {
        tensor.cuda_view::<f32>(&stream).map(drop)
    };
    Ok(made.err().map(|err| {
        let err = PyErr::from(err);
        let name = err
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        (name, err.value(py).to_string())
    }))
}
