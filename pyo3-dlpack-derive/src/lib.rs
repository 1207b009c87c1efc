//! Implementation detail of [`pyo3-dlpack`](https://docs.rs/pyo3-dlpack): the
//! `#[derive(IntoDLPack, FromDLPack)]` macros.
//!
//! Depend on `pyo3-dlpack` (feature `derive`, on by default), which
//! re-exports these derives and documents them; this crate's version is
//! pinned to it.
//!
//! The pipeline, one module per stage (as in serde_derive and thiserror):
//! - `attr` parses `#[dlpack(...)]` (keys are the constants of `symbol`) and
//!   `ast` builds a typed view of the struct; both record every error in a
//!   `Ctxt` (`ctxt`) and go on;
//! - `validate` checks the rules across attributes and fields, again
//!   recording every error, and turns a valid input into a plan;
//! - `expand_into` and `expand_from` turn a plan into safe code that calls
//!   the runtime crate's hidden `__private` module; they cannot fail.
//!   `expand` runs the pipeline and, when there are errors, emits them with
//!   stub impls so that they do not cascade; `tokens` holds what every
//!   expansion emits (the runtime crate's path, spans, where clauses).

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
mod tokens;
mod validate;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `pyo3_dlpack::IntoDLPack` and `IntoPyObject` (as a
/// `DLPackTensor`): the attributes are in the table under [Deriving on
/// `IntoDLPack`](https://docs.rs/pyo3-dlpack/latest/pyo3_dlpack/trait.IntoDLPack.html#deriving).
#[proc_macro_derive(IntoDLPack, attributes(dlpack))]
pub fn derive_into_dlpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(ast::Derive::IntoDLPack, &input).into()
}

/// Derives `pyo3_dlpack::FromDLPack` and `FromPyObject`: the attributes are
/// in the table on [`FromDLPack`](https://docs.rs/pyo3-dlpack/latest/pyo3_dlpack/trait.FromDLPack.html).
#[proc_macro_derive(FromDLPack, attributes(dlpack))]
pub fn derive_from_dlpack(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(ast::Derive::FromDLPack, &input).into()
}
