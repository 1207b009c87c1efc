//! Parsing of `#[dlpack(...)]` on the struct and on its fields.
//!
//! Both derives share one grammar; each derive then refuses the keys that
//! belong to the other (`plan_into_dlpack` / `plan_from_dlpack` in `ast.rs`).
//! A struct derives one of the two: `data` is memory for an export and a
//! pointer for an import.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Attribute, LitInt, LitStr, Token};

use crate::ctxt::Ctxt;
use crate::device::{self, DeviceSpec};

/// A value and where it was written.
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// Struct-level `#[dlpack(...)]`.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// `dtype = T`: a Rust `Element` type.
    pub(crate) dtype: Option<syn::Type>,
    /// `read_only` (IntoDLPack).
    pub(crate) read_only: Option<Span>,
    /// `crate = "path"`.
    pub(crate) krate: Option<syn::Path>,
    /// `ndim = N` (FromDLPack).
    pub(crate) ndim: Option<Spanned<usize>>,
    /// `device = "cuda:0"` (FromDLPack).
    pub(crate) device: Option<Spanned<DeviceSpec>>,
    /// `contiguous` (FromDLPack).
    pub(crate) contiguous: Option<Span>,
    /// `writable` (FromDLPack).
    pub(crate) writable: Option<Span>,
}

/// What a field is to the derives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    Data,
    Shape,
    Strides,
    Device,
    Dtype,
    ReadOnly,
    Tensor,
}

impl Role {
    const ALL: &'static [(&'static str, Role)] = &[
        ("data", Role::Data),
        ("shape", Role::Shape),
        ("strides", Role::Strides),
        ("device", Role::Device),
        ("dtype", Role::Dtype),
        ("read_only", Role::ReadOnly),
        ("tensor", Role::Tensor),
    ];

    pub(crate) fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, role)| *role == self)
            .map(|(name, _)| *name)
            .unwrap_or("?")
    }
}

const CONTAINER_KEYS: &str = "dtype, read_only, ndim, device, contiguous, writable, crate";
const FIELD_KEYS: &str = "data, shape, strides, device, dtype, read_only, tensor";

fn set_once<T>(ctxt: &Ctxt, slot: &mut Option<T>, value: T, path: &syn::Path, key: &str) {
    if slot.is_some() {
        ctxt.error_spanned_by(path, format!("duplicate dlpack attribute `{key}`"));
    } else {
        *slot = Some(value);
    }
}

/// The literal after `key =`, or `None` (with an error recorded, and the
/// value skipped) when it is something else, so parsing goes on.
fn literal_value<L: syn::parse::Parse>(
    ctxt: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
    hint: &str,
) -> syn::Result<Option<L>> {
    let value = meta.value()?;
    let fork = value.fork();
    match fork.parse::<L>() {
        Ok(_) if fork.is_empty() || fork.peek(Token![,]) => Ok(Some(value.parse::<L>()?)),
        _ => {
            ctxt.syn_error(syn::Error::new(value.span(), hint));
            skip_value(meta)?;
            Ok(None)
        }
    }
}

/// Skips a key's `= value` or `(...)`, so that parsing goes on after an
/// error recorded for that key (all mistakes are reported together).
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    meta.input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            if matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
                break;
            }
            rest = next;
        }
        Ok(((), rest))
    })
}

/// A flag (`contiguous`) must not be given a value (`contiguous = true`).
fn flag(meta: &syn::meta::ParseNestedMeta<'_>, key: &str) -> syn::Result<Span> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!("`{key}` takes no value: write #[dlpack({key})]")));
    }
    Ok(meta.path.span())
}

/// Parses the struct's `#[dlpack(...)]` attributes.
pub(crate) fn container(ctxt: &Ctxt, attrs: &[Attribute]) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("dlpack")) {
        let result = attr.parse_nested_meta(|meta| {
            let path = meta.path.clone();
            let key = path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            match key.as_str() {
                "dtype" => {
                    let value = meta.value()?;
                    if value.peek(LitStr) {
                        // Recorded, not returned: parsing goes on, so later
                        // mistakes are reported too.
                        let lit: LitStr = value.parse()?;
                        ctxt.syn_error(syn::Error::new(
                            lit.span(),
                            format!(
                                "`dtype` takes a Rust element type, not a string: write `dtype = {}`",
                                lit.value()
                            ),
                        ));
                        return Ok(());
                    }
                    let ty: syn::Type = value.parse()?;
                    set_once(ctxt, &mut out.dtype, ty, &path, "dtype");
                }
                "read_only" => set_once(ctxt, &mut out.read_only, flag(&meta, "read_only")?, &path, "read_only"),
                "contiguous" => set_once(ctxt, &mut out.contiguous, flag(&meta, "contiguous")?, &path, "contiguous"),
                "writable" => set_once(ctxt, &mut out.writable, flag(&meta, "writable")?, &path, "writable"),
                "crate" => {
                    let hint = "`crate` takes a path in a string: write `crate = \"::pyo3_dlpack\"`";
                    let Some(lit) = literal_value::<LitStr>(ctxt, &meta, hint)? else { return Ok(()) };
                    match lit.parse::<syn::Path>() {
                        Ok(krate) => set_once(ctxt, &mut out.krate, krate, &path, "crate"),
                        Err(_) => ctxt.syn_error(syn::Error::new(
                            lit.span(),
                            format!("`crate = {:?}` is not a path: write `crate = \"::pyo3_dlpack\"` or the path you re-export it under", lit.value()),
                        )),
                    }
                }
                "ndim" => {
                    let hint = "`ndim` takes a non-negative integer: write `ndim = 2`";
                    let Some(lit) = literal_value::<LitInt>(ctxt, &meta, hint)? else { return Ok(()) };
                    match lit.base10_parse::<usize>() {
                        Ok(value) => set_once(ctxt, &mut out.ndim, Spanned { value, span: lit.span() }, &path, "ndim"),
                        Err(_) => ctxt.syn_error(syn::Error::new(lit.span(), hint)),
                    }
                }
                "device" => {
                    let hint = "`device` takes a string: write `device = \"cuda\"` or `device = \"cuda:0\"`";
                    let Some(lit) = literal_value::<LitStr>(ctxt, &meta, hint)? else { return Ok(()) };
                    match device::parse(&lit.value()) {
                        Ok(value) => set_once(ctxt, &mut out.device, Spanned { value, span: lit.span() }, &path, "device"),
                        Err(message) => ctxt.syn_error(syn::Error::new(lit.span(), message)),
                    }
                }
                "data" | "shape" | "strides" | "tensor" => {
                    ctxt.syn_error(meta.error(format!(
                        "`{key}` belongs on a field: put #[dlpack({key})] on the field that holds it"
                    )));
                    skip_value(&meta)?;
                }
                _ => {
                    ctxt.syn_error(meta.error(format!(
                        "unknown dlpack attribute `{}` on the struct; expected one of: {CONTAINER_KEYS}",
                        quote::quote!(#path)
                    )));
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            ctxt.syn_error(error);
        }
    }
    out
}

/// Parses a field's `#[dlpack(...)]` attributes: its role, if any.
pub(crate) fn field(ctxt: &Ctxt, attrs: &[Attribute]) -> Option<Spanned<Role>> {
    let mut role: Option<Spanned<Role>> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("dlpack")) {
        let result = attr.parse_nested_meta(|meta| {
            let path = &meta.path;
            let key = path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            let Some((_, found)) = Role::ALL.iter().find(|(name, _)| *name == key) else {
                let hint = match key.as_str() {
                    "crate" | "ndim" | "contiguous" | "writable" => format!(
                        "`{key}` belongs on the struct: put #[dlpack({key}…)] above `struct`"
                    ),
                    _ => format!(
                        "unknown dlpack attribute `{}` on a field; expected one of: {FIELD_KEYS}",
                        quote::quote!(#path)
                    ),
                };
                ctxt.syn_error(meta.error(hint));
                return skip_value(&meta);
            };
            if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                ctxt.syn_error(meta.error(format!(
                    "field attribute `{key}` takes no value: write #[dlpack({key})] (a struct-level `dtype = T` goes above `struct`)"
                )));
                return skip_value(&meta);
            }
            match &role {
                Some(existing) if existing.value == *found => {
                    ctxt.error_spanned_by(path, format!("duplicate dlpack attribute `{key}`"));
                }
                Some(existing) => ctxt.error_spanned_by(
                    path,
                    format!(
                        "a field has one dlpack role, and this one is already `{}`; use a separate field for `{key}`",
                        existing.value.name()
                    ),
                ),
                None => role = Some(Spanned { value: *found, span: path.span() }),
            }
            Ok(())
        });
        if let Err(error) = result {
            ctxt.syn_error(error);
        }
    }
    role
}
