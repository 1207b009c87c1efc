//! cudarc (feature `cudarc`): `CudaSlice<T>` exports as tensor memory, and
//! CUDA imports give typed cudarc views ([`PyTensor::cuda_view`]).
//!
//! Both sides keep CUDA's stream order through cudarc's own calls: an
//! exported slice names its stream ([`TensorData::stream`]), so a consumer
//! on another stream waits for it; a view makes the stream you launch on
//! wait for the stream the import is ready on, and that one wait for yours
//! when the view is dropped.
//!
//! [`PyTensor::cuda_view`]: crate::PyTensor::cuda_view
//! [`TensorData::stream`]: crate::TensorData::stream

mod slice;
mod streams;
mod view;

pub use view::{CudaTensorView, CudaTensorViewMut};
