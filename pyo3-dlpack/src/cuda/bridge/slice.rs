//! `CudaSlice<T>` as tensor memory.

use std::ffi::c_void;

use cudarc::driver::{CudaSlice, DevicePtr};

use super::streams::dlpack_stream;
use crate::{DLPackError, DataType, Device, Element, IntoDLPack, TensorData, TensorInfo};

// SAFETY: a `CudaSlice` owns `len` elements of `T` of device memory at an
// address that does not change when the slice moves; it frees them only
// when dropped (cudarc frees on the slice's stream after the work it
// tracks). No Rust reference to device memory exists, so a consumer's
// writes invalidate nothing. The device is the slice's context's ordinal.
unsafe impl<T: Element> TensorData for CudaSlice<T> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);

    /// The device address. Asked through cudarc as a read on the slice's
    /// own stream: that stream first waits for writes cudarc tracked on
    /// others, and consumers then wait for it ([`stream`](Self::stream)).
    fn data_ptr(&self) -> *mut c_void {
        let (address, _read_recorded) = self.device_ptr(self.stream());
        address as usize as *mut c_void
    }

    fn byte_len(&self) -> Option<usize> {
        Some(self.num_bytes())
    }

    fn device(&self) -> Device {
        Device::cuda(i32::try_from(self.ordinal()).unwrap_or(i32::MAX))
    }

    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }

    /// The slice's stream, on which cudarc queued its work.
    fn stream(&self) -> Option<usize> {
        Some(dlpack_stream(self.stream().cu_stream()))
    }
}

/// A 1-D CUDA tensor of the elements, on the slice's device; consumers on
/// another stream wait for the slice's stream.
///
/// The slice is dropped when the last consumer lets go (torch: when its
/// tensor is freed), and cudarc frees the memory on the slice's stream. Work
/// the consumer still has queued on another stream is not waited for: as
/// with every DLPack producer, a consumer orders its own work before letting
/// go (torch frees a tensor only when Python has no reference left; pending
/// kernels on a side stream need `torch.cuda.synchronize()` or
/// `Tensor.record_stream` first).
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::DLPackTensor;
/// use pyo3_dlpack::cudarc::driver::CudaContext;
///
/// /// Python: `torch.from_dlpack(ramp(1024))`, a CUDA tensor, no copy.
/// #[pyfunction]
/// fn ramp(n: usize) -> PyResult<DLPackTensor> {
///     let to_py = |e: pyo3_dlpack::cudarc::driver::DriverError| {
///         pyo3::exceptions::PyRuntimeError::new_err(e.to_string())
///     };
///     // cudarc panics (a `PanicException` in Python) where no CUDA driver is
///     // installed: check first.
///     // SAFETY: only loads the driver library (as cudarc's first call would).
///     if !unsafe { pyo3_dlpack::cudarc::driver::sys::is_culib_present() } {
///         return Err(pyo3::exceptions::PyRuntimeError::new_err("no CUDA driver on this machine"));
///     }
///     let stream = CudaContext::new(0).and_then(|ctx| ctx.new_stream()).map_err(to_py)?;
///     let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
///     let slice = stream.clone_htod(&values).map_err(to_py)?;
///     Ok(DLPackTensor::new(slice)?)
/// }
/// # Python::attach(|py| {
/// #     // SAFETY: as above.
/// #     if !unsafe { pyo3_dlpack::cudarc::driver::sys::is_culib_present() } {
/// #         let err = ramp(4).err().unwrap(); // no panic without a driver
/// #         assert_eq!(err.value(py).to_string(), "no CUDA driver on this machine");
/// #     }
/// # });
/// ```
impl<T: Element> IntoDLPack for CudaSlice<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self).build()
    }
}
