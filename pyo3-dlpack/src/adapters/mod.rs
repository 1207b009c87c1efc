//! Adapters to other crates' tensor-like types, each behind its own feature:
//! `safetensors` (a file's tensors, exported read-only with no copy),
//! `nalgebra` (matrices exported with their strides, imports viewed as
//! matrices), `image` (image buffers as height × width × channels tensors)
//! and `candle` (tensors exported read-only with no copy, imports copied).

#[cfg(feature = "candle")]
pub(crate) mod candle;
#[cfg(feature = "image")]
pub(crate) mod image;
#[cfg(feature = "nalgebra")]
pub(crate) mod nalgebra;
#[cfg(feature = "safetensors")]
pub(crate) mod safetensors;
