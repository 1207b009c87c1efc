//! CUDA, in one home: the stream rules of the DLPack specification
//! ([`streams`]), the CUDA driver loaded at run time ([`driver`]), the one
//! rule for when the host may read memory ([`host`]), and the cudarc bridge
//! (feature `cudarc`).

#[cfg(feature = "cudarc")]
pub(crate) mod bridge;
pub(crate) mod driver;
pub(crate) mod host;
pub(crate) mod streams;
