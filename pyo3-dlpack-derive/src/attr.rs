//! Parsing of `#[dlpack(...)]` on the struct and on its fields.
//!
//! Both derives share one grammar; `validate.rs` then refuses, per derive,
//! the keys that belong to the other. A struct derives one of the two:
//! `data` is memory for an export and a pointer for an import.
//!
//! As in serde_derive, parsers return what they could read and record every
//! problem in the [`Ctxt`] instead of returning at the first one, so a user
//! sees all mistakes at once. Checks of one attribute live here; checks
//! across attributes or fields live in `validate.rs`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, LitInt, LitStr, Token};

use crate::ctxt::Ctxt;
use crate::device::{self, DeviceSpec};
use crate::symbol::{
    self, BYTE_OFFSET, CONTAINER_KEYS, CONTAINER_ONLY_KEYS, CONTIGUOUS, CRATE, DATA, DEVICE,
    DLPACK, DTYPE, FIELD_KEYS, FIELD_ONLY_KEYS, INNER, NDIM, READ_ONLY, SHAPE, SKIP, STRIDES,
    Symbol, TENSOR, WRITABLE,
};

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
    /// `shape = [height, width, channels]`: the extents, one scalar field
    /// each, in order (exported from them, imported into them).
    pub(crate) shape: Option<Spanned<Vec<syn::Member>>>,
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
    ByteOffset,
    /// An `IntoDLPack` value whose description is the tensor's.
    Inner,
    /// None of the tensor's parts (a field named like one, kept as it is).
    Skip,
}

impl Role {
    const ALL: [(Symbol, Role); 10] = [
        (DATA, Role::Data),
        (SHAPE, Role::Shape),
        (STRIDES, Role::Strides),
        (DEVICE, Role::Device),
        (DTYPE, Role::Dtype),
        (READ_ONLY, Role::ReadOnly),
        (TENSOR, Role::Tensor),
        (BYTE_OFFSET, Role::ByteOffset),
        (INNER, Role::Inner),
        (SKIP, Role::Skip),
    ];

    /// The key that gives a field this role.
    pub(crate) fn symbol(self) -> Symbol {
        Self::ALL
            .iter()
            .find(|(_, role)| *role == self)
            .map(|(symbol, _)| *symbol)
            .expect("every role has a key")
    }

    fn from_path(path: &syn::Path) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(symbol, _)| path == *symbol)
            .map(|(_, role)| *role)
    }
}

/// The key of `meta`, for messages (`a::b` for a path that is no key).
fn key_text(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn set_once<T>(ctxt: &Ctxt, slot: &mut Option<T>, value: T, path: &syn::Path, key: Symbol) {
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
    meta: &ParseNestedMeta<'_>,
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
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
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

/// A flag (`contiguous`) must not be given a value (`contiguous = true`):
/// `None`, with the error recorded and the value skipped, so parsing goes on.
fn flag(ctxt: &Ctxt, meta: &ParseNestedMeta<'_>, key: Symbol) -> syn::Result<Option<Span>> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        ctxt.syn_error(meta.error(format!("`{key}` takes no value: write #[dlpack({key})]")));
        skip_value(meta)?;
        return Ok(None);
    }
    Ok(Some(meta.path.span()))
}

/// Runs `parse` on every `#[dlpack(...)]` in `attrs`, recording the error
/// that ends an attribute early (unparsable syntax) and going on to the next.
fn each_dlpack_meta(
    ctxt: &Ctxt,
    attrs: &[Attribute],
    mut parse: impl FnMut(ParseNestedMeta<'_>) -> syn::Result<()>,
) {
    for attr in attrs.iter().filter(|attr| attr.path() == DLPACK) {
        if matches!(&attr.meta, syn::Meta::List(list) if list.tokens.is_empty()) {
            // Would parse as no key at all, and silently mean nothing.
            ctxt.error_spanned_by(
                attr,
                "empty #[dlpack()]: name at least one key, as in #[dlpack(data)], or remove it",
            );
            continue;
        }
        if let Err(error) = attr.parse_nested_meta(&mut parse) {
            ctxt.syn_error(error);
        }
    }
}

/// Parses the struct's `#[dlpack(...)]` attributes.
pub(crate) fn container(ctxt: &Ctxt, attrs: &[Attribute]) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    each_dlpack_meta(ctxt, attrs, |meta| {
        let path = meta.path.clone();
        if path == DTYPE {
            if let Some(ty) = dtype_value(ctxt, &meta)? {
                set_once(ctxt, &mut out.dtype, ty, &path, DTYPE);
            }
        } else if path == READ_ONLY {
            if let Some(span) = flag(ctxt, &meta, READ_ONLY)? {
                set_once(ctxt, &mut out.read_only, span, &path, READ_ONLY);
            }
        } else if path == CONTIGUOUS {
            if let Some(span) = flag(ctxt, &meta, CONTIGUOUS)? {
                set_once(ctxt, &mut out.contiguous, span, &path, CONTIGUOUS);
            }
        } else if path == WRITABLE {
            if let Some(span) = flag(ctxt, &meta, WRITABLE)? {
                set_once(ctxt, &mut out.writable, span, &path, WRITABLE);
            }
        } else if path == CRATE {
            let hint = "`crate` takes a path in a string: write `crate = \"::pyo3_dlpack\"`";
            let Some(lit) = literal_value::<LitStr>(ctxt, &meta, hint)? else {
                return Ok(());
            };
            match lit.parse::<syn::Path>() {
                Ok(krate) => set_once(ctxt, &mut out.krate, krate, &path, CRATE),
                Err(_) => ctxt.syn_error(syn::Error::new(
                    lit.span(),
                    format!(
                        "`crate = {:?}` is not a path: write `crate = \"::pyo3_dlpack\"` or the path you re-export it under",
                        lit.value()
                    ),
                )),
            }
        } else if path == NDIM {
            let hint = "`ndim` takes a non-negative integer: write `ndim = 2`";
            let Some(lit) = literal_value::<LitInt>(ctxt, &meta, hint)? else {
                return Ok(());
            };
            match lit.base10_parse::<usize>() {
                Ok(value) => {
                    let ndim = Spanned {
                        value,
                        span: lit.span(),
                    };
                    set_once(ctxt, &mut out.ndim, ndim, &path, NDIM);
                }
                Err(_) => ctxt.syn_error(syn::Error::new(lit.span(), hint)),
            }
        } else if path == DEVICE {
            let hint =
                "`device` takes a string: write `device = \"cuda\"` or `device = \"cuda:0\"`";
            let Some(lit) = literal_value::<LitStr>(ctxt, &meta, hint)? else {
                return Ok(());
            };
            match device::parse(&lit.value()) {
                Ok(value) => {
                    let device = Spanned {
                        value,
                        span: lit.span(),
                    };
                    set_once(ctxt, &mut out.device, device, &path, DEVICE);
                }
                Err(message) => ctxt.syn_error(syn::Error::new(lit.span(), message)),
            }
        } else if path == SHAPE && meta.input.peek(Token![=]) {
            if let Some(members) = shape_members(ctxt, &meta)? {
                set_once(ctxt, &mut out.shape, members, &path, SHAPE);
            }
        } else if let Some(key) = FIELD_ONLY_KEYS.iter().find(|key| path == **key) {
            ctxt.syn_error(meta.error(format!(
                "`{key}` belongs on a field: put #[dlpack({key})] on the field that holds it"
            )));
            skip_value(&meta)?;
        } else {
            ctxt.syn_error(meta.error(format!(
                "unknown dlpack attribute `{}` on the struct; expected one of: {}",
                key_text(&path),
                symbol::list(CONTAINER_KEYS)
            )));
            skip_value(&meta)?;
        }
        Ok(())
    });
    out
}

/// The fields after `shape =`: `[height, width, channels]` (or positions,
/// `[1, 2]`, in a tuple struct); anything else is recorded, and skipped.
fn shape_members(
    ctxt: &Ctxt,
    meta: &ParseNestedMeta<'_>,
) -> syn::Result<Option<Spanned<Vec<syn::Member>>>> {
    let value = meta.value()?;
    let hint = "`shape = [...]` lists the fields that hold the extents, in order: write `shape = [height, width, channels]`";
    let fork = value.fork();
    let parsed = fork.parse::<syn::ExprArray>().ok().and_then(|array| {
        let members = array
            .elems
            .iter()
            .map(|elem| match elem {
                syn::Expr::Path(path) => path.path.get_ident().cloned().map(syn::Member::Named),
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(int),
                    ..
                }) => int.base10_parse::<u32>().ok().map(|index| {
                    syn::Member::Unnamed(syn::Index {
                        index,
                        span: int.span(),
                    })
                }),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Spanned {
            value: members,
            span: array.span(),
        })
    });
    match parsed {
        Some(members) if fork.is_empty() || fork.peek(Token![,]) => {
            value.parse::<syn::ExprArray>()?;
            Ok(Some(members))
        }
        _ => {
            ctxt.syn_error(syn::Error::new(value.span(), hint));
            skip_value(meta)?;
            Ok(None)
        }
    }
}

/// The type after `dtype =`; a string is an error that names the type to
/// write instead, and parsing goes on.
fn dtype_value(ctxt: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Option<syn::Type>> {
    let value = meta.value()?;
    if !value.peek(LitStr) {
        let fork = value.fork();
        if fork.parse::<syn::Type>().is_ok() && (fork.is_empty() || fork.peek(Token![,])) {
            return value.parse().map(Some);
        }
        // Not a type (`dtype = 1`): recorded, and parsing goes on.
        ctxt.syn_error(syn::Error::new(
            value.span(),
            "`dtype` takes a Rust element type: write `dtype = f32`",
        ));
        skip_value(meta)?;
        return Ok(None);
    }
    let lit: LitStr = value.parse()?;
    let message = match dtype_for_string(&lit.value()) {
        Some(ty) => {
            format!("`dtype` takes a Rust element type, not a string: write `dtype = {ty}`")
        }
        None => format!(
            "`dtype` takes a Rust element type, not a string: {:?} names none; write a type such as `dtype = f32`",
            lit.value()
        ),
    };
    // Recorded, not returned: parsing goes on, so later mistakes are
    // reported too.
    ctxt.syn_error(syn::Error::new(lit.span(), message));
    Ok(None)
}

/// DLPack and NumPy dtype names, and the Rust element type each one is.
const DTYPE_NAMES: &[(&str, &str)] = &[
    ("bool", "bool"),
    ("int8", "i8"),
    ("int16", "i16"),
    ("int32", "i32"),
    ("int64", "i64"),
    ("uint8", "u8"),
    ("uint16", "u16"),
    ("uint32", "u32"),
    ("uint64", "u64"),
    ("float16", "half::f16"),
    ("bfloat16", "half::bf16"),
    ("float32", "f32"),
    ("float64", "f64"),
    ("complex64", "num_complex::Complex<f32>"),
    ("complex128", "num_complex::Complex<f64>"),
];

/// The Rust element types spelled as themselves.
const RUST_ELEMENTS: &[&str] = &[
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
];

/// The type to write for `dtype = "text"`: the element type of a dtype name
/// (`"float32"`, `"torch.float32"`, `"np.int64"` → `f32`, `i64`), the
/// string's contents when they already are an element type (`"f32"`, or a
/// path such as `"half::f16"`), or `None` when the string names no type.
fn dtype_for_string(text: &str) -> Option<String> {
    let text = text.trim();
    let name = text.rsplit('.').next().unwrap_or(text).to_ascii_lowercase();
    if let Some((_, ty)) = DTYPE_NAMES.iter().find(|(known, _)| *known == name) {
        return Some((*ty).to_owned());
    }
    if RUST_ELEMENTS.contains(&text) {
        return Some(text.to_owned());
    }
    let is_path = text.contains("::") || text.contains('<');
    match syn::parse_str::<syn::Type>(text) {
        Ok(ty) if is_path => Some(quote::quote!(#ty).to_string().replace(' ', "")),
        _ => None,
    }
}

/// Parses a field's `#[dlpack(...)]` attributes: its role, if any.
pub(crate) fn field(ctxt: &Ctxt, attrs: &[Attribute]) -> Option<Spanned<Role>> {
    let mut role: Option<Spanned<Role>> = None;
    each_dlpack_meta(ctxt, attrs, |meta| {
        let path = &meta.path;
        let Some(found) = Role::from_path(path) else {
            let hint = match CONTAINER_ONLY_KEYS.iter().find(|key| path == **key) {
                Some(key) => {
                    format!("`{key}` belongs on the struct: put #[dlpack({key}…)] above `struct`")
                }
                None => format!(
                    "unknown dlpack attribute `{}` on a field; expected one of: {}",
                    key_text(path),
                    symbol::list(FIELD_KEYS)
                ),
            };
            ctxt.syn_error(meta.error(hint));
            return skip_value(&meta);
        };
        let key = found.symbol();
        if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
            ctxt.syn_error(meta.error(format!(
                "field attribute `{key}` takes no value: write #[dlpack({key})] (a struct-level `dtype = T` goes above `struct`)"
            )));
            return skip_value(&meta);
        }
        match &role {
            Some(existing) if existing.value == found => {
                ctxt.error_spanned_by(path, format!("duplicate dlpack attribute `{key}`"));
            }
            Some(existing) => ctxt.error_spanned_by(
                path,
                format!(
                    "a field has one dlpack role, and this one is already `{}`; use a separate field for `{key}`",
                    existing.value.symbol()
                ),
            ),
            None => {
                role = Some(Spanned {
                    value: found,
                    span: path.span(),
                });
            }
        }
        Ok(())
    });
    role
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_strings_name_the_type_to_write() {
        for (text, expected) in [
            ("float32", Some("f32")),
            ("Float32", Some("f32")),
            ("torch.float32", Some("f32")),
            ("np.int64", Some("i64")),
            ("uint8", Some("u8")),
            ("bool", Some("bool")),
            ("bfloat16", Some("half::bf16")),
            ("complex128", Some("num_complex::Complex<f64>")),
            ("f32", Some("f32")),
            ("half::f16", Some("half::f16")),
            (
                "num_complex :: Complex < f32 >",
                Some("num_complex::Complex<f32>"),
            ),
            ("float", None),
            ("double", None),
            ("", None),
            ("f 32", None),
        ] {
            assert_eq!(dtype_for_string(text).as_deref(), expected, "{text:?}");
        }
    }

    #[test]
    fn every_dtype_name_maps_to_a_type() {
        for (name, ty) in DTYPE_NAMES {
            assert!(syn::parse_str::<syn::Type>(ty).is_ok(), "{name} → {ty}");
        }
    }
}
