//! Where a typed argument's memory may be: the third parameter of
//! [`Tensor`](crate::Tensor) and [`TensorMut`](crate::TensorMut), checked
//! with the dtype and the rank while PyO3 extracts the argument.
//!
//! | marker | accepts | access |
//! |---|---|---|
//! | [`Host`] (the default) | CPU memory | `ndarray` views and slices |
//! | [`Cuda`] | CUDA device memory (`cuda`, any index) | [`device_tensor`](crate::Tensor::device_tensor): pointer, shape, strides, stream |
//! | [`AnyDevice`] | any device, CPU included | [`locate_array`](crate::Tensor::locate_array): a view of host memory or the description of device memory |
//!
//! Device memory is imported as [`PyTensor`](crate::PyTensor) imports it
//! (the producer is asked for data ready on CUDA's legacy default stream,
//! [`DeviceTensor::stream`](crate::DeviceTensor::stream) says which);
//! pinned (`cuda_host`) and managed (`cuda_managed`) memory are
//! [`AnyDevice`]'s only: the host may read them after a wait, a kernel as
//! they are.
//!
//! ```
//! use pyo3::prelude::*;
//! use pyo3_dlpack::memory::Cuda;
//! use pyo3_dlpack::Tensor2;
//!
//! /// Python: `launch(torch.ones(2, 3, device="cuda"))`; a host array is a
//! /// `TypeError` naming `m`.
//! #[pyfunction]
//! fn launch(m: Tensor2<f32, Cuda>) -> (usize, usize) {
//!     let (rows, cols) = m.dim();
//!     let gpu = m.device_tensor();
//!     // kernel<<<grid, block, 0, gpu.stream>>>(gpu.data_ptr, rows, cols, gpu.strides)
//!     let _ = (gpu.data_ptr, gpu.strides, gpu.stream);
//!     (rows, cols)
//! }
//! # Python::attach(|py| -> PyResult<()> {
//! #     let host = py.import("numpy")?.call_method1("ones", ((2, 3), "float32"))?;
//! #     let err = wrap_pyfunction!(launch, py)?.call1((host,)).unwrap_err();
//! #     assert!(err.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
//! #     assert_eq!(err.value(py).to_string(), "expected a tensor on cuda, got one on cpu:0");
//! #     Ok(())
//! # }).unwrap();
//! ```

use crate::{DLPackError, Device, DeviceType};

mod sealed {
    pub trait Sealed {}
}

/// Where a typed argument's memory may be: [`Host`], [`Cuda`] or
/// [`AnyDevice`] (sealed: the views rely on what each one checks).
pub trait Memory: sealed::Sealed + 'static {
    /// `Ok` if memory on `device` is accepted; the refusal otherwise.
    #[doc(hidden)]
    fn accept(device: Device) -> Result<(), DLPackError>;

    /// Whether only host (`cpu`) memory is accepted, so that every view is
    /// checked at the argument.
    #[doc(hidden)]
    const HOST_ONLY: bool;

    /// Whether only CUDA device memory is accepted (a stub names no NumPy
    /// array for it).
    #[doc(hidden)]
    const CUDA_ONLY: bool = false;
}

/// Host (`cpu`) memory only, the default: typed `ndarray` views and slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Host;

/// CUDA device memory only (`cuda`, any device index): a kernel's
/// argument, described by [`Tensor::device_tensor`](crate::Tensor::device_tensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Cuda;

/// Memory on any device, host memory included: host views or the device
/// memory's description, in one `match`
/// ([`Tensor::locate_array`](crate::Tensor::locate_array)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AnyDevice;

impl sealed::Sealed for Host {}
impl sealed::Sealed for Cuda {}
impl sealed::Sealed for AnyDevice {}

impl Memory for Host {
    fn accept(device: Device) -> Result<(), DLPackError> {
        if device.device_type == DeviceType::CPU {
            return Ok(());
        }
        Err(DLPackError::Device {
            expected: Device::cpu(),
            found: device,
        })
    }
    const HOST_ONLY: bool = true;
}

impl Memory for Cuda {
    fn accept(device: Device) -> Result<(), DLPackError> {
        if device.device_type == DeviceType::CUDA {
            return Ok(());
        }
        Err(DLPackError::DeviceType {
            expected: DeviceType::CUDA,
            found: device,
        })
    }
    const HOST_ONLY: bool = false;
    const CUDA_ONLY: bool = true;
}

impl Memory for AnyDevice {
    fn accept(_device: Device) -> Result<(), DLPackError> {
        Ok(())
    }
    const HOST_ONLY: bool = false;
}
