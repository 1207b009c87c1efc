//! Implementation detail of [`pyo3-dlpack`](https://docs.rs/pyo3-dlpack): the
//! `#[derive(IntoDLPack, FromDLPack)]` macros.
//!
//! Depend on `pyo3-dlpack` (feature `derive`, on by default), which
//! re-exports these derives and documents them; this crate's version is
//! pinned to it. The pipeline: `attr` parses `#[dlpack(...)]`, `ast` builds a
//! typed view and checks the cross-field rules (collecting every error in a
//! `Ctxt`), `expand_*` generate safe code that calls the runtime crate's
//! hidden `__private` module.

mod ast;
mod attr;
mod ctxt;
mod device;
mod expand;
mod expand_from;
mod expand_into;
#[cfg(test)]
mod snapshots;
mod symbol;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// See `pyo3_dlpack::IntoDLPack`.
#[proc_macro_derive(IntoDLPack, attributes(dlpack))]
pub fn derive_into_dlpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(ast::Derive::IntoDLPack, &input).into()
}

/// See `pyo3_dlpack::FromDLPack`.
#[proc_macro_derive(FromDLPack, attributes(dlpack))]
pub fn derive_from_dlpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(ast::Derive::FromDLPack, &input).into()
}
