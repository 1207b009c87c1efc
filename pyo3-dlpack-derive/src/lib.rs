//! Implementation detail of [`pyo3-dlpack`](https://docs.rs/pyo3-dlpack): the
//! `#[derive(IntoDLPack, FromDLPack)]` macros.
//!
//! This crate is re-exported by `pyo3-dlpack` (feature `derive`, on by
//! default); depend on that crate, not on this one. The derives are not
//! implemented yet: this crate holds the place of the proc-macro crate in the
//! workspace so that the runtime crate's `derive` feature and its version
//! lock are already in place.
