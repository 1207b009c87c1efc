//! Shapes and strides, the one home of their rules for both directions:
//! how they are held ([`Dims`], what a description is built from, borrowed
//! or owned, `usize` or `i64`; `DimsBuf`, the one small vector that stores
//! them, inline up to 4 dimensions: 8 entries) and their arithmetic, which
//! export descriptions, import validation, copies, views and `ndarray` all
//! call.
//!
//! One overflow policy: a tensor may span at most `isize::MAX` bytes (no
//! allocation can be larger), every intermediate sum stays within that in
//! magnitude, and anything beyond it is a [`SizeOverflow`].

use std::fmt;

use crate::error::{LayoutError, SizeOverflow};
use crate::{DLPackError, DataType};

/// Most dimensions a tensor may have, in both directions. NumPy allows 64;
/// the limit only guards against absurd values from a broken producer.
pub const MAX_NDIM: usize = 1024;

/// The most bytes a tensor may span.
const LIMIT: i128 = isize::MAX as i128;

/// Number of elements of `shape`: every extent non-negative, the product at
/// most `isize::MAX`.
#[inline]
pub(crate) fn numel(shape: &[i64]) -> Result<usize, DLPackError> {
    let mut numel: usize = 1;
    let mut overflowed = false;
    for (dim, &extent) in shape.iter().enumerate() {
        let Ok(extent) = usize::try_from(extent) else {
            return Err(negative_extent(shape, dim, extent));
        };
        // Keep going after an overflow: a negative extent later is the
        // better error, and a zero extent later makes the tensor empty.
        match numel.checked_mul(extent) {
            Some(n) if n <= LIMIT as usize => numel = n,
            _ if extent == 0 => numel = 0,
            _ => {
                overflowed = true;
                numel = 1;
            }
        }
    }
    if overflowed && numel != 0 {
        return Err(too_many_elements(shape));
    }
    Ok(numel)
}

// The errors of `numel`, out of line: `numel` is inlined into every check of
// a shape, and each copy of the error's construction took more than its loop.
#[cold]
#[inline(never)]
fn negative_extent(shape: &[i64], dim: usize, extent: i64) -> DLPackError {
    LayoutError::NegativeExtent {
        shape: shape.to_vec(),
        dim,
        extent,
    }
    .into()
}

#[cold]
#[inline(never)]
fn too_many_elements(shape: &[i64]) -> DLPackError {
    SizeOverflow::Elements {
        shape: shape.to_vec(),
    }
    .into()
}

/// Bytes one element occupies in storage: `itemsize` for byte-sized types,
/// one byte per lane for padded sub-byte types; `None` for packed sub-byte
/// types (see [`storage_bytes`]).
#[inline]
pub(crate) fn element_bytes(dtype: DataType, padded: bool) -> Option<usize> {
    if dtype.is_byte_sized() {
        Some(dtype.itemsize())
    } else if padded {
        Some(usize::from(dtype.bits).div_ceil(8) * usize::from(dtype.lanes))
    } else {
        None
    }
}

/// Bytes of storage for `numel` elements: `numel × itemsize`; packed
/// sub-byte types take `ceil(numel × bits × lanes / 8)` (the header's
/// `GetDataSize`), padded ones a byte per lane. `None` beyond `isize::MAX`.
#[inline]
pub(crate) fn storage_bytes(numel: usize, dtype: DataType, padded: bool) -> Option<usize> {
    let bytes = match element_bytes(dtype, padded) {
        Some(size) => (numel as u128) * (size as u128),
        None => ((numel as u128) * u128::from(dtype.bits) * u128::from(dtype.lanes)).div_ceil(8),
    };
    usize::try_from(bytes).ok().filter(|&b| b as i128 <= LIMIT)
}

#[cfg(any(feature = "ndarray", feature = "nalgebra"))]
/// A sufficient condition for no two indices to reach the same element:
/// ordered by |stride|, each axis longer than 1 steps past everything the
/// smaller axes reach.
pub(crate) fn elements_are_distinct(shape: &[i64], strides: &[i64]) -> bool {
    let mut axes: Vec<(u64, u64)> = shape
        .iter()
        .zip(strides)
        .filter(|&(&dim, _)| dim > 1)
        .map(|(&dim, &stride)| (stride.unsigned_abs(), dim as u64))
        .collect();
    axes.sort_unstable();
    let mut reach: u64 = 0;
    for (stride, dim) in axes {
        if stride <= reach {
            return false;
        }
        // Bounded by the validated extent, so no overflow.
        reach += (dim - 1) * stride;
    }
    true
}

/// The bytes the elements reach relative to the first element's address:
/// `(lowest, one past the highest)`, for a tensor with at least one element
/// whose extents were checked by [`numel`]. `None` when the span exceeds
/// `isize::MAX` bytes.
pub(crate) fn reach(shape: &[i64], strides: &[i64], itemsize: usize) -> Option<(i128, i128)> {
    let itemsize = itemsize as i128;
    let (mut low, mut high) = (0i128, itemsize);
    for (&dim, &stride) in shape.iter().zip(strides) {
        let step = i128::from(dim - 1)
            .checked_mul(i128::from(stride))?
            .checked_mul(itemsize)
            .filter(|step| step.abs() <= LIMIT)?;
        // Each side stays within ±LIMIT after every step, so no sum overflows.
        let side = if step < 0 { &mut low } else { &mut high };
        *side += step;
        if side.abs() > LIMIT || high - low > LIMIT {
            return None;
        }
    }
    Some((low, high))
}

/// A stride in bytes, for the protocols that count strides so (the buffer
/// protocol, the array interfaces, NumPy's C API). A stride the elements
/// step along is within the tensor's checked reach, so its product fits; a
/// stride no element uses (of an axis of one element, or of an empty
/// tensor) may be any `i64`, and where its product does not fit it is 0.
#[inline]
pub(crate) fn byte_stride(stride: i64, itemsize: usize) -> isize {
    i64::try_from(itemsize)
        .ok()
        .and_then(|itemsize| stride.checked_mul(itemsize))
        .and_then(|bytes| isize::try_from(bytes).ok())
        .unwrap_or(0)
}

/// Whether the elements are packed in row-major (C) order. Strides of
/// dimensions of extent 1 do not matter (torch rewrites them), nor do any
/// strides of an empty tensor.
#[inline]
pub(crate) fn is_contiguous(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if dim != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(dim);
    }
    true
}

/// Whether the elements are packed in column-major (Fortran) order, with
/// the exceptions of [`is_contiguous`] (extents of 1, empty tensors). For
/// the buffer export (not in the limited API before 3.11).
#[cfg(all(feature = "non-dlpack-export", any(not(Py_LIMITED_API), Py_3_11)))]
#[inline]
pub(crate) fn is_column_major(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for (&dim, &stride) in shape.iter().zip(strides) {
        if dim != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(dim);
    }
    true
}

/// Writes the row-major strides of `shape` into `out` (same length): stride
/// `i` is the product of the extents after `i` (extents of 0 count as 1).
#[inline]
pub(crate) fn row_major(shape: &[i64], out: &mut [i64]) {
    let mut step = 1i64;
    for (stride, &dim) in out.iter_mut().zip(shape).rev() {
        *stride = step;
        step = step.saturating_mul(dim.max(1));
    }
}

/// The offsets, in elements from the first element, of every element in
/// row-major index order: the element-by-element walk that tests hold the
/// copy routine (`gather`) to.
#[cfg(test)]
pub(crate) fn offsets<'a>(shape: &'a [i64], strides: &'a [i64]) -> Offsets<'a> {
    let numel = shape.iter().product::<i64>().max(0) as usize;
    Offsets {
        shape,
        strides,
        index: DimsBuf::zeros(shape.len()),
        offset: 0,
        left: numel,
    }
}

/// Iterator of [`offsets`].
#[cfg(test)]
pub(crate) struct Offsets<'a> {
    shape: &'a [i64],
    strides: &'a [i64],
    index: DimsBuf,
    offset: i64,
    left: usize,
}

#[cfg(test)]
impl Iterator for Offsets<'_> {
    type Item = isize;

    fn next(&mut self) -> Option<isize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let current = self.offset;
        // Odometer step, last axis fastest; the offset follows incrementally.
        let index = self.index.as_mut_slice();
        for axis in (0..self.shape.len()).rev() {
            index[axis] += 1;
            self.offset += self.strides[axis];
            if index[axis] < self.shape[axis] {
                break;
            }
            self.offset -= self.strides[axis] * index[axis];
            index[axis] = 0;
        }
        // Within the checked reach of the tensor, so within isize.
        Some(current as isize)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

#[cfg(test)]
impl ExactSizeIterator for Offsets<'_> {}

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
        // A plain loop, not a collect (its instance is compiled for this one use).
        let mut entries = Vec::with_capacity(self.len());
        for entry in self.iter() {
            entries.push(entry);
        }
        entries
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
    #[cfg(test)]
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
    fn numel_checks_signs_and_overflow() {
        assert_eq!(numel(&[]).unwrap(), 1);
        assert_eq!(numel(&[2, 3, 4]).unwrap(), 24);
        assert_eq!(numel(&[0, i64::MAX]).unwrap(), 0);
        assert_eq!(
            numel(&[2, -1]).unwrap_err().to_string(),
            "shape [2, -1] has a negative extent -1 in dimension 1"
        );
        assert!(matches!(
            numel(&[1 << 40, 1 << 40]),
            Err(DLPackError::SizeOverflow(SizeOverflow::Elements { .. }))
        ));
        // An overflow followed by a zero extent is an empty tensor.
        assert_eq!(numel(&[1 << 40, 1 << 40, 0]).unwrap(), 0);
    }

    #[test]
    fn storage_of_byte_and_sub_byte_types() {
        assert_eq!(storage_bytes(6, DataType::F32, false), Some(24));
        assert_eq!(storage_bytes(7, DataType::F4_E2M1FN, false), Some(4));
        assert_eq!(storage_bytes(7, DataType::F4_E2M1FN, true), Some(7));
        assert_eq!(storage_bytes(usize::MAX / 2, DataType::F64, false), None);
    }

    #[test]
    fn reach_of_every_stride_sign() {
        assert_eq!(reach(&[2, 3], &[3, 1], 4), Some((0, 24)));
        assert_eq!(reach(&[3], &[-1], 1), Some((-2, 1)));
        assert_eq!(reach(&[100, 3], &[0, 1], 8), Some((0, 24)));
        assert_eq!(reach(&[2, 2], &[i64::MAX, 1], 1), None);
        assert_eq!(reach(&[2, 2], &[-(1 << 62), 1 << 62], 1), None);
    }

    #[test]
    fn contiguity_and_row_major() {
        let mut strides = [0; 3];
        row_major(&[2, 0, 4], &mut strides);
        assert_eq!(strides, [4, 4, 1]);
        assert!(is_contiguous(&[2, 3], &[3, 1]));
        assert!(is_contiguous(&[2, 1], &[1, 99]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(is_contiguous(&[0, 3], &[7, 7]));
    }

    #[test]
    fn offsets_walk_in_row_major_order() {
        let walk = |shape: &[i64], strides: &[i64]| offsets(shape, strides).collect::<Vec<_>>();
        assert_eq!(walk(&[2, 3], &[1, 2]), [0, 2, 4, 1, 3, 5]);
        assert_eq!(walk(&[3], &[-1]), [0, -1, -2]);
        assert_eq!(walk(&[2, 2], &[0, 1]), [0, 1, 0, 1]);
        assert_eq!(walk(&[], &[]), [0]);
        assert!(walk(&[3, 0], &[1, 1]).is_empty());
    }

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
