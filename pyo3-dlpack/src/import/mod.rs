//! Import: tensors from any DLPack producer into Rust.

pub(crate) mod consume;
pub(crate) mod exchange;
mod from_dlpack;
mod located;
mod negotiate;
mod numpy;
pub(crate) mod protocols;
mod reexport;
mod registry;
mod state;
pub(crate) mod tensor;
mod torch_checks;
mod view;

pub use from_dlpack::FromDLPack;
pub use located::{DeviceTensor, Located};
pub use negotiate::{ImportOptions, StreamMode};
pub use protocols::Protocols;
pub use tensor::PyTensor;
