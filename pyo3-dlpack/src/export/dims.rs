//! `Dims`: the extents or strides of an export, borrowed or owned.

use std::fmt;

/// A list of extents or strides, borrowed from the value being exported or
/// computed on the fly.
///
/// Built with `From` from `&[usize]`, `&[i64]`, `&[isize]` (ndarray strides),
/// arrays (by reference or by value) and `Vec`s, so a `TensorInfo` can borrow
/// a struct's own `shape: [usize; 3]` field, or take a shape computed in
/// `tensor_info`. Arrays of up to 8 entries taken by value are
/// stored inline, without allocating.
#[derive(Clone)]
pub struct Dims<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    Usize(&'a [usize]),
    I64(&'a [i64]),
    InlineUsize([usize; Dims::INLINE], u8),
    InlineI64([i64; Dims::INLINE], u8),
    OwnedUsize(Box<[usize]>),
    OwnedI64(Box<[i64]>),
}

/// The entries of a [`Dims`], whichever their integer type.
enum Entries<'s> {
    Usize(&'s [usize]),
    I64(&'s [i64]),
}

impl Dims<'_> {
    /// Most entries stored inline when an array is taken by value.
    pub(crate) const INLINE: usize = 8;

    fn entries(&self) -> Entries<'_> {
        match &self.0 {
            Repr::Usize(dims) => Entries::Usize(dims),
            Repr::I64(dims) => Entries::I64(dims),
            Repr::InlineUsize(dims, len) => Entries::Usize(&dims[..usize::from(*len)]),
            Repr::InlineI64(dims, len) => Entries::I64(&dims[..usize::from(*len)]),
            Repr::OwnedUsize(dims) => Entries::Usize(dims),
            Repr::OwnedI64(dims) => Entries::I64(dims),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match self.entries() {
            Entries::Usize(dims) => dims.len(),
            Entries::I64(dims) => dims.len(),
        }
    }

    /// Whether there are no entries (a 0-d tensor).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i` as an `i64`, or `None` if it does not fit (a `usize` above `i64::MAX`).
    pub(super) fn get(&self, i: usize) -> Option<i64> {
        match self.entries() {
            Entries::Usize(dims) => i64::try_from(dims[i]).ok(),
            Entries::I64(dims) => Some(dims[i]),
        }
    }

    /// The entries as `i64`s. Only for validated dims (every entry fits).
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = i64> + ExactSizeIterator + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(i64::MAX))
    }

    /// The entries as a `Vec<i64>` (entries above `i64::MAX` saturate).
    pub fn to_vec(&self) -> Vec<i64> {
        self.iter().collect()
    }
}

impl fmt::Debug for Dims<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entries() {
            Entries::Usize(dims) => fmt::Debug::fmt(dims, f),
            Entries::I64(dims) => fmt::Debug::fmt(dims, f),
        }
    }
}

impl PartialEq for Dims<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.get(i) == other.get(i))
    }
}

macro_rules! dims_from {
    ($($elem:ty => $borrowed:ident, $inline:ident, $owned:ident);*) => {$(
        impl<'a> From<&'a [$elem]> for Dims<'a> {
            fn from(dims: &'a [$elem]) -> Self { Self(Repr::$borrowed(dims)) }
        }
        impl<'a, const N: usize> From<&'a [$elem; N]> for Dims<'a> {
            fn from(dims: &'a [$elem; N]) -> Self { Self(Repr::$borrowed(dims)) }
        }
        impl<'a> From<&'a Vec<$elem>> for Dims<'a> {
            fn from(dims: &'a Vec<$elem>) -> Self { Self(Repr::$borrowed(dims)) }
        }
        impl<'a> From<&'a Box<[$elem]>> for Dims<'a> {
            fn from(dims: &'a Box<[$elem]>) -> Self { Self(Repr::$borrowed(dims)) }
        }
        impl From<Vec<$elem>> for Dims<'_> {
            fn from(dims: Vec<$elem>) -> Self { Self(Repr::$owned(dims.into_boxed_slice())) }
        }
        impl From<Box<[$elem]>> for Dims<'_> {
            fn from(dims: Box<[$elem]>) -> Self { Self(Repr::$owned(dims)) }
        }
        impl<const N: usize> From<[$elem; N]> for Dims<'_> {
            /// Stored inline (no allocation) up to 8 entries.
            fn from(dims: [$elem; N]) -> Self {
                if N <= Dims::INLINE {
                    let mut inline = [0; Dims::INLINE];
                    inline[..N].copy_from_slice(&dims);
                    Self(Repr::$inline(inline, N as u8))
                } else {
                    Self(Repr::$owned(Box::new(dims)))
                }
            }
        }
    )*};
}
dims_from!(usize => Usize, InlineUsize, OwnedUsize; i64 => I64, InlineI64, OwnedI64);

impl<'a> From<&'a [isize]> for Dims<'a> {
    /// Strides as `ndarray` keeps them (converted, inline up to 8 entries).
    fn from(dims: &'a [isize]) -> Self {
        if dims.len() <= Self::INLINE {
            let mut inline = [0i64; Self::INLINE];
            for (slot, &d) in inline.iter_mut().zip(dims) {
                *slot = d as i64;
            }
            Self(Repr::InlineI64(inline, dims.len() as u8))
        } else {
            Self(Repr::OwnedI64(dims.iter().map(|&d| d as i64).collect()))
        }
    }
}
