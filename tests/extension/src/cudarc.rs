//! cudarc (feature `cudarc`, in the GPU bundle and `make test`): `CudaSlice`
//! exports and typed cudarc views of CUDA imports. Every function needs a
//! CUDA driver: a GPU's (test_cudarc.py), or the stand-in's
//! (test_cudarc_standin.py).

#[allow(unused_imports)]
use super::*;

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3_dlpack::StreamMode;
use pyo3_dlpack::cudarc::driver::{CudaContext, CudaStream, DevicePtr, DriverError};

fn driver(err: DriverError) -> PyErr {
    PyRuntimeError::new_err(err.to_string())
}

/// Per device, a first stream of its cudarc context, kept for the process.
/// cudarc synchronises the whole context when a `CudaContext` makes its
/// first stream (`CudaContext::new_stream`), which would order everything
/// queued so far and hide a missing wait: with one context per device, made
/// once ([`cudarc_context`]), only that first call does.
static CONTEXTS: Mutex<Vec<(usize, Arc<CudaStream>)>> = Mutex::new(Vec::new());

/// The first stream of GPU `device`'s context, made once; a `RuntimeError`
/// without a CUDA driver (cudarc itself would panic).
fn first_stream(device: usize) -> PyResult<Arc<CudaStream>> {
    // SAFETY: only tries to load the driver library (its initialisers run,
    // as they would on first use).
    if !unsafe { pyo3_dlpack::cudarc::driver::sys::is_culib_present() } {
        return Err(PyRuntimeError::new_err(
            "no CUDA driver (libcuda) on this machine",
        ));
    }
    let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, stream)) = contexts.iter().find(|(d, _)| *d == device) {
        return Ok(stream.clone());
    }
    let stream = CudaContext::new(device)
        .and_then(|ctx| ctx.new_stream())
        .map_err(driver)?;
    contexts.push((device, stream.clone()));
    Ok(stream)
}

/// Makes GPU `device`'s cudarc context and its first stream (cudarc
/// synchronises the device then): call before queuing work whose ordering
/// a test checks.
#[pyfunction]
#[pyo3(signature = (device=0))]
pub(crate) fn cudarc_context(device: usize) -> PyResult<()> {
    first_stream(device).map(drop)
}

/// A new non-blocking stream on GPU `device`.
fn new_stream(device: usize) -> PyResult<Arc<CudaStream>> {
    first_stream(device)?.context().new_stream().map_err(driver)
}

/// `(tensor, address, stream)`: 0..n as float32 in a cudarc slice on GPU
/// `device`, copied there on a stream of its own (its handle; not yet
/// finished, maybe: consumers must wait for it), exported with a drop
/// counter (or, `tracked=False`, the slice itself: `CudaSlice`'s own
/// `IntoDLPack`).
#[pyfunction]
#[pyo3(signature = (n, device=0, tracked=true))]
pub(crate) fn cudarc_arange(
    n: usize,
    device: usize,
    tracked: bool,
) -> PyResult<(DLPackTensor, usize, usize)> {
    let stream = new_stream(device)?;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let slice = stream.clone_htod(&values).map_err(driver)?;
    let (address, _read) = slice.device_ptr(&stream);
    let address = address as usize;
    drop(_read);
    let handle = stream.cu_stream() as usize;
    let tensor = if tracked {
        DLPackTensor::new(Tracked::new(slice))?
    } else {
        DLPackTensor::new(slice)?
    };
    Ok((tensor, address, handle))
}

/// `(capsule, address)`: 0..n float32 in a new `CudaSlice` on a stream of
/// its own, exported by value (`IntoDLPack::into_capsule`, versioned), not
/// through a `DLPackTensor`.
#[pyfunction]
pub(crate) fn cudarc_capsule(py: Python<'_>, n: usize) -> PyResult<(Bound<'_, PyCapsule>, usize)> {
    let stream = new_stream(0)?;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let slice = stream.clone_htod(&values).map_err(driver)?;
    let (address, _read) = slice.device_ptr(&stream);
    let address = address as usize;
    drop(_read);
    let capsule = slice.into_capsule(py, pyo3_dlpack::CapsuleFormat::Versioned)?;
    Ok((capsule, address))
}

/// Imports `tensor`, optionally stream-ordered, or made ready on the
/// consumer's `stream`.
fn import_tensor(
    tensor: &Bound<'_, PyAny>,
    stream_ordered: bool,
    stream: Option<i64>,
) -> PyResult<PyTensor> {
    let mode = if stream_ordered {
        StreamMode::StreamOrdered
    } else {
        StreamMode::Synchronize
    };
    let mut options = ImportOptions::new().stream_mode(mode);
    if let Some(stream) = stream {
        // SAFETY: the tests' promise: a live stream of the tensor's device (the
        // stand-in driver's, or a real one on a GPU machine), or 1 or 2.
        options = unsafe { options.stream(stream) };
    }
    PyTensor::from_pyany_with(tensor, &options)
}

/// The sum of a contiguous float32 CUDA tensor, read through a cudarc view
/// on a new stream of its device (the import: stream-ordered, or ready on
/// the consumer's `stream`).
#[pyfunction]
#[pyo3(signature = (tensor, *, stream_ordered=false, stream=None))]
pub(crate) fn cudarc_sum(
    tensor: &Bound<'_, PyAny>,
    stream_ordered: bool,
    stream: Option<i64>,
) -> PyResult<f64> {
    let tensor = import_tensor(tensor, stream_ordered, stream)?;
    let stream = new_stream(tensor.device().device_id as usize)?;
    let view = tensor.cuda_view::<f32>(&stream)?;
    let host = stream.clone_dtoh(&view.as_view()).map_err(driver)?;
    Ok(host.iter().map(|&v| f64::from(v)).sum())
}

/// Writes `value` into every element of a contiguous float32 CUDA tensor
/// through a mutable cudarc view, on a new stream of its device, and
/// returns without synchronising: the producer's stream is made to wait.
#[pyfunction]
#[pyo3(signature = (tensor, value, *, stream_ordered=false, stream=None))]
pub(crate) fn cudarc_fill(
    tensor: &Bound<'_, PyAny>,
    value: f32,
    stream_ordered: bool,
    stream: Option<i64>,
) -> PyResult<()> {
    let mut tensor = import_tensor(tensor, stream_ordered, stream)?;
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

/// What a cudarc view says of itself: `len`, `is_empty`, whether its stream
/// is the one it was made for (or that stream's handle), `as_view().len()`,
/// its Debug.
type ViewSaid = (usize, bool, usize, usize, String);

/// `allocate_like(like, shape, float32)` filled with 0, 1, 2, … from Rust
/// through a mutable cudarc view on a new stream of its device (the copy is
/// queued there and not waited for: dropping the view makes the stream the
/// import is ready on wait for it); returns the framework's object and what
/// the view said of itself ([`ViewSaid`], with its stream's handle).
#[pyfunction]
pub(crate) fn cudarc_allocate_arange<'py>(
    like: &Bound<'py, PyAny>,
    shape: Vec<i64>,
) -> PyResult<(Bound<'py, PyAny>, ViewSaid)> {
    let mut out = pyo3_dlpack::allocate_like(like, &shape, DataType::F32)?;
    let stream = new_stream(out.tensor.device().device_id as usize)?;
    let mut view = out.tensor.cuda_view_mut::<f32>(&stream)?;
    let values: Vec<f32> = (0..view.len()).map(|i| i as f32).collect();
    stream
        .memcpy_htod(&values, &mut view.as_view_mut())
        .map_err(driver)?;
    let said = (
        view.len(),
        view.is_empty(),
        view.stream().cu_stream() as usize,
        view.as_view().len(),
        format!("{view:?}"),
    );
    drop(view);
    Ok((out.object, said))
}

/// What a cudarc view of `tensor` (a float32 CUDA tensor on GPU `device`)
/// says of itself, immutable and then mutable ([`ViewSaid`], 1 for its own
/// stream).
#[pyfunction]
#[pyo3(signature = (tensor, device=0))]
pub(crate) fn cudarc_view_said(
    tensor: &Bound<'_, PyAny>,
    device: usize,
) -> PyResult<Vec<ViewSaid>> {
    let mut tensor = PyTensor::from_pyany(tensor)?;
    let stream = new_stream(device)?;
    let view = tensor.cuda_view::<f32>(&stream)?;
    let mut said = vec![(
        view.len(),
        view.is_empty(),
        usize::from(Arc::ptr_eq(view.stream(), &stream)),
        view.as_view().len(),
        format!("{view:?}"),
    )];
    drop(view);
    let view = tensor.cuda_view_mut::<f32>(&stream)?;
    said.push((
        view.len(),
        view.is_empty(),
        usize::from(Arc::ptr_eq(view.stream(), &stream)),
        view.as_view().len(),
        format!("{view:?}"),
    ));
    Ok(said)
}
