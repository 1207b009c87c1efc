//! Import: tensors from any DLPack producer into Rust.

mod consume;
mod exchange;
mod from_dlpack;
mod layout;
mod negotiate;
mod reexport;
mod registry;
mod tensor;
mod view;

pub use from_dlpack::FromDLPack;
pub use layout::MAX_NDIM;
pub use negotiate::ImportOptions;
pub use tensor::PyTensor;
