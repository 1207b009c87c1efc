//! Import: tensors from any DLPack producer into Rust.

mod cast;
pub(crate) mod consume;
mod entry;
mod from_dlpack;
mod located;
mod negotiate;
mod options;
pub(crate) mod protocols;
mod reexport;
mod registry;
mod state;
pub(crate) mod tensor;
#[cfg(feature = "ndarray")]
mod typed;
mod view;

#[cfg(feature = "exchange-api")]
pub(crate) use negotiate::producer_device;

pub use cast::CastElement;
pub use from_dlpack::FromDLPack;
pub use located::{DeviceTensor, Located};
pub use options::{ImportOptions, Protocols, StreamMode};
pub use tensor::PyTensor;
#[cfg(feature = "ndarray")]
pub use typed::{
    Tensor, Tensor0, Tensor1, Tensor2, Tensor3, Tensor4, Tensor5, Tensor6, TensorDyn, TensorMut,
    TensorMut0, TensorMut1, TensorMut2, TensorMut3, TensorMut4, TensorMut5, TensorMut6,
    TensorMutDyn, memory,
};
