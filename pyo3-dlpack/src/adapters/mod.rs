//! Adapters to other crates' tensor-like types, each behind its own feature:
//! `safetensors` (a file's tensors, exported read-only with no copy),
//! `nalgebra` (matrices exported with their strides, imports viewed as
//! matrices) and `image` (image buffers as height × width × channels tensors).

#[cfg(feature = "image")]
pub(crate) mod image;
#[cfg(feature = "nalgebra")]
pub(crate) mod nalgebra;
#[cfg(feature = "safetensors")]
pub(crate) mod safetensors;
