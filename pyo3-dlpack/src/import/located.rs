//! Device-aware access in one call: a typed view of host memory, or device
//! memory described without being touched, as one enum to `match`.

use std::ffi::c_void;

use crate::import::tensor::PyTensor;
use crate::{DLPackError, DataType, Device, DeviceType, PlainElement};

/// Device memory, described: what a kernel launch needs, read without
/// touching the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceTensor<'a> {
    /// Where the memory is.
    pub device: Device,
    /// The first element's address (byte offset included).
    pub data_ptr: *mut c_void,
    /// Extents.
    pub shape: &'a [i64],
    /// Strides in elements.
    pub strides: &'a [i64],
    /// Element type.
    pub dtype: DataType,
    /// The stream the data is ready on: the one passed to the producer's
    /// `__dlpack__` (CUDA's legacy default stream, 1, unless
    /// [`ImportOptions::stream`](crate::ImportOptions::stream) named
    /// another), or the one a `__cuda_array_interface__` producer's stream
    /// was made to wait for; `None` when the data is ready on every stream.
    pub stream: Option<i64>,
}

/// A tensor's memory in one `match`: [`Host`](Self::Host) with a typed view
/// (a slice from [`PyTensor::locate`], an `ndarray` view from
/// `PyTensor::locate_array` with the `ndarray` feature), or
/// [`Device`](Self::Device) described.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{Located, PyTensor};
///
/// /// Python: `total(np.ones(3, "f4"))`; a torch CUDA tensor goes to the GPU path.
/// #[pyfunction]
/// fn total(tensor: PyTensor) -> PyResult<f32> {
///     match tensor.locate::<f32>()? {
///         Located::Host(values) => Ok(values.iter().sum()),
///         Located::Device(gpu) => {
///             // launch a kernel on gpu.data_ptr, gpu.shape, on gpu.stream…
///             Err(pyo3::exceptions::PyNotImplementedError::new_err(gpu.device.to_string()))
///         }
///     }
/// }
/// ```
#[derive(Debug)]
pub enum Located<'a, H> {
    /// Host (`cpu`) memory, as a typed view.
    Host(H),
    /// Memory on any other device, pinned (`cuda_host`) and managed
    /// (`cuda_managed`) memory included, which a kernel may use as it is
    /// (the host views, [`PyTensor::as_slice`], read them too, after waiting
    /// for the stream the data is ready on).
    Device(DeviceTensor<'a>),
}

impl PyTensor {
    /// A slice of host memory (contiguous tensors of `T`'s dtype, as
    /// [`as_slice`](Self::as_slice) checks), or the description of device
    /// memory.
    pub fn locate<T: PlainElement>(&self) -> Result<Located<'_, &[T]>, DLPackError> {
        match self.device_tensor() {
            Some(device) => Ok(Located::Device(device)),
            None => Ok(Located::Host(self.as_slice::<T>()?)),
        }
    }

    /// An `ndarray` view of host memory (any strides, as
    /// [`as_array`](Self::as_array) takes them), or the description of
    /// device memory. Feature `ndarray`.
    #[cfg(feature = "ndarray")]
    pub fn locate_array<T: PlainElement>(
        &self,
    ) -> Result<Located<'_, ndarray::ArrayViewD<'_, T>>, DLPackError> {
        match self.device_tensor() {
            Some(device) => Ok(Located::Device(device)),
            None => Ok(Located::Host(self.as_array::<T>()?)),
        }
    }

    /// The description of a tensor not in host (`cpu`) memory.
    pub fn device_tensor(&self) -> Option<DeviceTensor<'_>> {
        let device = self.device();
        if device.device_type == DeviceType::CPU {
            return None;
        }
        Some(DeviceTensor {
            device,
            data_ptr: self.data_ptr(),
            shape: self.shape(),
            strides: self.strides(),
            dtype: self.dtype(),
            stream: self.stream(),
        })
    }
}
