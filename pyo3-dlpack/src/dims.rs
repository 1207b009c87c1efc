//! Lists of extents and strides: [`Dims`], what a description is built from
//! (borrowed or owned, `usize` or `i64`), and `DimsBuf`, the one small
//! vector that stores them (inline up to 4 dimensions: 8 entries).

use std::fmt;

/// A list of extents or strides, borrowed from the value being exported or
/// computed on the fly.
///
/// Built with `From` from `&[usize]`, `&[i64]`, `&[isize]` (ndarray strides),
/// arrays (by reference or by value) and `Vec`s, so a `TensorInfo` can borrow
/// a struct's own `shape: [usize; 3]` field, or take a shape computed in
/// `tensor_info`. Up to 8 entries taken by value are stored inline, without
/// allocating.
///
/// ```
/// use pyo3_dlpack::Dims;
///
/// let shape = [2usize, 3];
/// assert_eq!(Dims::from(&shape).to_vec(), [2, 3]);
/// assert_eq!(Dims::from(vec![4i64, -1]).to_vec(), [4, -1]);
/// ```
#[derive(Clone)]
pub struct Dims<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    Usize(&'a [usize]),
    I64(&'a [i64]),
    /// Entries taken by value, as `i64`s; `unfit` is the first that did not
    /// fit one (a `usize` above `i64::MAX`), which reads as `None`.
    Owned {
        entries: DimsBuf,
        unfit: Option<usize>,
    },
}

/// The entries of a [`Dims`], whichever their integer type.
enum Entries<'s> {
    Usize(&'s [usize]),
    I64(&'s [i64]),
}

impl Dims<'_> {
    /// Entries taken by value, converted to `i64` (the first that does not
    /// fit is remembered, for the error the description gives).
    fn owned<T: Copy>(items: &[T], convert: impl Fn(T) -> Option<i64>) -> Self {
        let mut entries = DimsBuf::zeros(items.len());
        let mut unfit = None;
        for (i, (slot, &item)) in entries.as_mut_slice().iter_mut().zip(items).enumerate() {
            *slot = convert(item).unwrap_or_else(|| {
                unfit.get_or_insert(i);
                i64::MAX
            });
        }
        Self(Repr::Owned { entries, unfit })
    }

    fn entries(&self) -> Entries<'_> {
        match &self.0 {
            Repr::Usize(dims) => Entries::Usize(dims),
            Repr::I64(dims) => Entries::I64(dims),
            Repr::Owned { entries, .. } => Entries::I64(entries.as_slice()),
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
    pub(crate) fn get(&self, i: usize) -> Option<i64> {
        if let Repr::Owned {
            unfit: Some(unfit), ..
        } = self.0
        {
            if i == unfit {
                return None;
            }
        }
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
    ($($elem:ty => $borrowed:ident, $convert:expr);*) => {$(
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
            fn from(dims: Vec<$elem>) -> Self { Self::owned(&dims, $convert) }
        }
        impl From<Box<[$elem]>> for Dims<'_> {
            fn from(dims: Box<[$elem]>) -> Self { Self::owned(&dims, $convert) }
        }
        impl<const N: usize> From<[$elem; N]> for Dims<'_> {
            /// Stored inline (no allocation) up to 8 entries.
            fn from(dims: [$elem; N]) -> Self { Self::owned(&dims, $convert) }
        }
    )*};
}
dims_from!(usize => Usize, |d| i64::try_from(d).ok(); i64 => I64, Some);

impl<'a> From<&'a [isize]> for Dims<'a> {
    /// Strides as `ndarray` keeps them (converted, inline up to 8 entries).
    fn from(dims: &'a [isize]) -> Self {
        Self::owned(dims, |d| Some(d as i64))
    }
}

/// Owned `i64` storage for a shape and its strides (or any two equal-length
/// lists), inline up to [`DimsBuf::INLINE`] dimensions, so descriptions of
/// ordinary tensors do not allocate.
#[derive(Clone)]
pub(crate) struct DimsBuf {
    repr: DimsRepr,
}

#[derive(Clone)]
enum DimsRepr {
    Inline {
        entries: [i64; 2 * DimsBuf::INLINE],
        len: u8,
    },
    Heap(Box<[i64]>),
}

impl DimsBuf {
    /// Dimensions stored without allocating.
    pub(crate) const INLINE: usize = 4;

    /// `len` zeros (a single list, for an index).
    #[inline]
    pub(crate) fn zeros(len: usize) -> Self {
        if len <= 2 * Self::INLINE {
            Self {
                repr: DimsRepr::Inline {
                    entries: [0; 2 * Self::INLINE],
                    len: len as u8,
                },
            }
        } else {
            Self {
                repr: DimsRepr::Heap(vec![0; len].into_boxed_slice()),
            }
        }
    }

    /// A shape and its strides, `ndim` each, zero-filled.
    #[inline]
    pub(crate) fn pair(ndim: usize) -> Self {
        Self::zeros(2 * ndim)
    }

    /// A copy of `shape` and `strides`; strides shorter than the shape
    /// (none, from a producer that sent NULL) leave zeros.
    pub(crate) fn copy_pair(shape: &[i64], strides: &[i64]) -> Self {
        let mut buf = Self::pair(shape.len());
        let (s, t) = buf.split_mut();
        s.copy_from_slice(shape);
        let n = strides.len().min(t.len());
        t[..n].copy_from_slice(&strides[..n]);
        buf
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[i64] {
        match &self.repr {
            DimsRepr::Inline { entries, len } => &entries[..usize::from(*len)],
            DimsRepr::Heap(entries) => entries,
        }
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [i64] {
        match &mut self.repr {
            DimsRepr::Inline { entries, len } => &mut entries[..usize::from(*len)],
            DimsRepr::Heap(entries) => entries,
        }
    }

    /// The two halves of a [`pair`](Self::pair): shape, strides.
    #[inline]
    pub(crate) fn split(&self) -> (&[i64], &[i64]) {
        let all = self.as_slice();
        all.split_at(all.len() / 2)
    }

    /// The two halves, writable.
    #[inline]
    pub(crate) fn split_mut(&mut self) -> (&mut [i64], &mut [i64]) {
        let all = self.as_mut_slice();
        let half = all.len() / 2;
        all.split_at_mut(half)
    }
}

impl std::fmt::Debug for DimsBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_slice(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_buf_inline_and_heap() {
        let small = DimsBuf::copy_pair(&[2, 3], &[3, 1]);
        assert_eq!(small.split(), (&[2i64, 3][..], &[3i64, 1][..]));
        let shape: Vec<i64> = (1..=20).collect();
        let big = DimsBuf::copy_pair(&shape, &shape);
        assert_eq!(big.split().0, &shape[..]);
    }

    #[test]
    fn owned_entries_keep_the_first_that_does_not_fit() {
        let dims = Dims::from([3usize, usize::MAX, 2]);
        assert_eq!(
            (dims.get(0), dims.get(1), dims.get(2)),
            (Some(3), None, Some(2))
        );
        let dims = Dims::from(vec![1i64; 9]);
        assert_eq!(dims.to_vec(), vec![1; 9]);
        let strides: &[isize] = &[-2, 1];
        assert_eq!(Dims::from(strides).to_vec(), vec![-2, 1]);
    }
}
