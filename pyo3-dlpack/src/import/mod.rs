//! Import: tensors from any DLPack producer into Rust.

mod consume;
pub(crate) mod exchange;
mod from_dlpack;
mod negotiate;
mod reexport;
mod registry;
mod tensor;
mod view;

pub use from_dlpack::FromDLPack;
pub use negotiate::ImportOptions;
pub use tensor::PyTensor;
