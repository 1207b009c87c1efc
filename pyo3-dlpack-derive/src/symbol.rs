//! The words of `#[dlpack(...)]`, each spelled once (serde_derive's `Symbol`).

use std::fmt::{self, Display};

use syn::{Ident, Path};

/// An attribute name or key, compared with `==` against a parsed path.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Symbol(&'static str);

/// The attribute itself: `#[dlpack(...)]`.
pub(crate) const DLPACK: Symbol = Symbol("dlpack");

// Field roles (and, for `device`, `dtype` and `read_only`, container keys too).
pub(crate) const DATA: Symbol = Symbol("data");
pub(crate) const SHAPE: Symbol = Symbol("shape");
pub(crate) const STRIDES: Symbol = Symbol("strides");
pub(crate) const DEVICE: Symbol = Symbol("device");
pub(crate) const DTYPE: Symbol = Symbol("dtype");
pub(crate) const READ_ONLY: Symbol = Symbol("read_only");
pub(crate) const TENSOR: Symbol = Symbol("tensor");
pub(crate) const BYTE_OFFSET: Symbol = Symbol("byte_offset");
/// A field that is itself an `IntoDLPack` value: the tensor (IntoDLPack).
pub(crate) const INNER: Symbol = Symbol("inner");
/// Not a role: the field is none of the tensor's parts, although its name
/// is that of one (see `validate::check_slips`).
pub(crate) const SKIP: Symbol = Symbol("skip");

// Container-only keys.
pub(crate) const NDIM: Symbol = Symbol("ndim");
pub(crate) const CONTIGUOUS: Symbol = Symbol("contiguous");
pub(crate) const WRITABLE: Symbol = Symbol("writable");
pub(crate) const CRATE: Symbol = Symbol("crate");

/// The struct-level keys, in the order error messages list them.
pub(crate) const CONTAINER_KEYS: &[Symbol] =
    &[DTYPE, READ_ONLY, NDIM, DEVICE, CONTIGUOUS, WRITABLE, CRATE];

/// The field-level keys (roles), in the order error messages list them.
pub(crate) const FIELD_KEYS: &[Symbol] = &[
    DATA,
    SHAPE,
    STRIDES,
    DEVICE,
    DTYPE,
    READ_ONLY,
    TENSOR,
    BYTE_OFFSET,
    INNER,
    SKIP,
];

/// Container keys that are never field roles (a hint says where they go).
pub(crate) const CONTAINER_ONLY_KEYS: &[Symbol] = &[CRATE, NDIM, CONTIGUOUS, WRITABLE];

/// Field roles that are never container keys (a hint says where they go).
pub(crate) const FIELD_ONLY_KEYS: &[Symbol] =
    &[DATA, SHAPE, STRIDES, TENSOR, BYTE_OFFSET, INNER, SKIP];

/// `data, shape, strides, …`, for "expected one of" messages.
pub(crate) fn list(symbols: &[Symbol]) -> String {
    symbols
        .iter()
        .map(|symbol| symbol.0)
        .collect::<Vec<_>>()
        .join(", ")
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Symbol {
    pub(crate) fn as_str(self) -> &'static str {
        self.0
    }
}

impl Display for Symbol {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lists_are_the_documented_ones() {
        assert_eq!(
            list(CONTAINER_KEYS),
            "dtype, read_only, ndim, device, contiguous, writable, crate"
        );
        assert_eq!(
            list(FIELD_KEYS),
            "data, shape, strides, device, dtype, read_only, tensor, byte_offset, inner, skip"
        );
        for key in CONTAINER_ONLY_KEYS {
            assert!(CONTAINER_KEYS.contains(key) && !FIELD_KEYS.contains(key));
        }
        for key in FIELD_ONLY_KEYS {
            assert!(FIELD_KEYS.contains(key) && !CONTAINER_KEYS.contains(key));
        }
    }

    #[test]
    fn compares_with_parsed_paths() {
        let path: Path = syn::parse_str("read_only").unwrap();
        assert!(path == READ_ONLY);
        assert!(path != DTYPE);
        let path: Path = syn::parse_str("a::read_only").unwrap();
        assert!(path != READ_ONLY);
    }
}
