//! Import: tensors from any DLPack producer into Rust.

mod consume;
pub(crate) mod exchange;
mod from_dlpack;
mod located;
mod negotiate;
pub(crate) mod protocols;
mod reexport;
mod registry;
pub(crate) mod tensor;
mod view;

pub use from_dlpack::FromDLPack;
pub use located::{DeviceTensor, Located};
pub use negotiate::{ImportOptions, StreamMode};
pub use protocols::Protocols;
pub use tensor::PyTensor;
