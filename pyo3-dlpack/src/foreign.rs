//! Validation of a foreign `DLTensor` (a producer's, or a prototype handed
//! to the exchange API's allocator) before anything else reads it: the one
//! place that decides which foreign fields are trusted.

use crate::error::{CapsuleError, LayoutError, SizeOverflow};
use crate::ffi::DLTensor;
use crate::layout::{self, DimsBuf, MAX_NDIM};
use crate::{DLPackError, protocol};

/// What validation learnt about a tensor, kept by `PyTensor`.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) ndim: usize,
    pub(crate) numel: usize,
    pub(crate) nbytes: usize,
    /// Row-major strides, when the producer gave NULL strides for ndim > 0
    /// (boxed: rare, and a `PyTensor` stays small for the common case).
    pub(crate) synthesized_strides: Option<Box<[i64]>>,
    /// Addresses `[start, end)` of every byte the elements reach (empty for no elements).
    pub(crate) span: (usize, usize),
    /// Row-major order (see `layout::is_contiguous`), decided once here.
    pub(crate) contiguous: bool,
}

impl Checked {
    /// Placeholder until a tensor is checked (never read).
    pub(crate) const EMPTY: Self = Self {
        ndim: 0,
        numel: 0,
        nbytes: 0,
        synthesized_strides: None,
        span: (0, 0),
        contiguous: true,
    };
}

/// Which foreign struct is checked, for the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A producer's tensor.
    Tensor,
    /// An allocator's prototype (only dtype, ndim, shape and device are read).
    Prototype,
}

/// The extents of `tensor` and their product: [`extents_of`], every extent
/// non-negative and their product in range.
///
/// # Safety
///
/// As for [`extents_of`].
#[cfg(feature = "exchange-api")]
#[inline]
pub(crate) unsafe fn shape_of(
    tensor: &DLTensor,
    role: Role,
) -> Result<(&[i64], usize), DLPackError> {
    // SAFETY: the caller's contract.
    let shape = unsafe { extents_of(tensor, role) }?;
    let numel = layout::numel(shape).map_err(as_foreign)?;
    Ok((shape, numel))
}

/// The extents of `tensor`, not yet checked: ndim within `0..=MAX_NDIM` and
/// a non-NULL shape when ndim > 0.
///
/// # Safety
///
/// `tensor` comes from a live managed tensor or prototype: when non-NULL,
/// `shape` points to `ndim` readable `i64`s, as the DLPack header requires.
#[inline]
unsafe fn extents_of(tensor: &DLTensor, role: Role) -> Result<&[i64], DLPackError> {
    // Not `ok_or`: its error would be built (and dropped) on every call.
    let Some(ndim) = usize::try_from(tensor.ndim).ok().filter(|&n| n <= MAX_NDIM) else {
        return Err(CapsuleError::Ndim {
            ndim: tensor.ndim,
            max: MAX_NDIM,
        }
        .into());
    };
    if ndim > 0 && tensor.shape.is_null() {
        let prototype = role == Role::Prototype;
        return Err(CapsuleError::NullShape { ndim, prototype }.into());
    }
    // SAFETY: non-NULL when ndim > 0 (checked above) and `ndim` long, per the caller.
    Ok(unsafe { foreign_slice(tensor.shape, ndim) })
}

/// Checks every field of `tensor` that later code relies on: the dtype
/// (the protocol's rule), the shape ([`shape_of`]), the byte extent (no
/// overflow, no address wrap-around), NULL data with elements. `padded`:
/// the producer's flags say sub-byte elements take a byte each.
///
/// # Safety
///
/// `tensor` comes from a live managed tensor: when non-NULL, `shape` and
/// `strides` point to `ndim` readable `i64`s each, as the DLPack header requires.
#[cfg(any(test, feature = "__fuzzing"))]
pub(crate) unsafe fn check(tensor: &DLTensor, padded: bool) -> Result<Checked, DLPackError> {
    let mut checked = Checked::EMPTY;
    // SAFETY: the caller's contract.
    unsafe { check_copy_into(tensor, padded, &mut checked, &mut None) }?;
    Ok(checked)
}

/// [`check`] of a copy, writing what it learns into `out` (where it is
/// kept: its callers are on every import's path, and a `Checked` returned by
/// value went through the stack and was read back with loads that stalled on
/// store forwarding; `out` is left as it was on error). The producer's shape
/// and strides are read once, into `dims`, which is checked and kept and
/// read from then on: a producer's arrays may change
/// while the import lives (torch's point into the source tensor's own
/// metadata, which an in-place view op such as `t.unsqueeze_()`, `t.t_()` or
/// `t.as_strided_(…)` rewrites).
///
/// # Safety
///
/// As for [`check`].
#[inline(always)]
pub(crate) unsafe fn check_copy_into(
    tensor: &DLTensor,
    padded: bool,
    out: &mut Checked,
    dims: &mut Option<DimsBuf>,
) -> Result<(), DLPackError> {
    // SAFETY: the caller's contract.
    let shape = unsafe { extents_of(tensor, Role::Tensor) }?;
    let strides = (!tensor.strides.is_null()).then(|| {
        // SAFETY: non-NULL here, and `ndim` long, per the caller.
        unsafe { foreign_slice(tensor.strides, shape.len()) }
    });
    // Written where it is kept: a `DimsBuf` returned by value was moved
    // twice (measured on a torch import).
    let copy = dims.insert(DimsBuf::pair(shape.len()));
    let (copied_shape, copied_strides) = copy.split_mut();
    copied_shape.copy_from_slice(shape);
    if let Some(strides) = strides {
        copied_strides.copy_from_slice(strides);
    }
    let (shape, copied_strides) = copy.split();
    check_dims_into(tensor, shape, strides.map(|_| copied_strides), padded, out)
}

/// The checks of [`check_copy_into`] on a shape and strides already read
/// (`None`: the producer sent NULL strides), for descriptions made here
/// from a producer's own fields (a NumPy array's): `tensor`'s `shape` and
/// `strides` pointers are not read. The common row-major case takes one
/// pass ([`check_row_major`]); anything else, [`check_any_layout_into`].
#[inline(always)]
pub(crate) fn check_dims_into(
    tensor: &DLTensor,
    shape: &[i64],
    strides: Option<&[i64]>,
    padded: bool,
    out: &mut Checked,
) -> Result<(), DLPackError> {
    protocol::check_dtype(tensor.dtype)?;
    match strides.and_then(|strides| check_row_major(tensor, shape, strides)) {
        Some(row_major) => {
            row_major.write(shape.len(), out);
            Ok(())
        }
        None => check_any_layout_into(tensor, shape, strides, padded, out),
    }
}

/// The checks of [`check_dims_into`] for any layout, the dtype already
/// checked: the definition that [`check_row_major`] shortens. Out of line:
/// [`check_dims_into`] is inlined into each import path that checks a
/// tensor, and this, the less common and larger part, was copied into each
/// (8 KB of a default build); a call costs what the general checks cost
/// little beside.
#[inline(never)]
pub(crate) fn check_any_layout_into(
    tensor: &DLTensor,
    shape: &[i64],
    strides: Option<&[i64]>,
    padded: bool,
    out: &mut Checked,
) -> Result<(), DLPackError> {
    let numel = layout::numel(shape).map_err(as_foreign)?;
    let ndim = shape.len();
    let synthesized_strides = (ndim > 0 && strides.is_none()).then(|| {
        let mut strides = vec![0; ndim].into_boxed_slice();
        layout::row_major(shape, &mut strides);
        strides
    });
    let strides = match (&synthesized_strides, strides) {
        (Some(strides), _) => &strides[..],
        (None, Some(strides)) => strides,
        (None, None) => &[],
    };
    let Some(nbytes) = layout::storage_bytes(numel, tensor.dtype, padded) else {
        let dtype = tensor.dtype;
        return Err(SizeOverflow::Storage { numel, dtype }.into());
    };
    let contiguous = layout::is_contiguous(shape, strides);
    let span = if numel > 0 {
        check_extent(tensor, shape, strides, contiguous, padded, nbytes)?
    } else {
        (0, 0)
    };
    out.ndim = ndim;
    out.numel = numel;
    out.nbytes = nbytes;
    out.synthesized_strides = synthesized_strides;
    out.span = span;
    out.contiguous = contiguous;
    Ok(())
}

/// What [`check_row_major`] learnt of a tensor.
#[derive(Debug)]
pub(crate) struct RowMajor {
    numel: usize,
    nbytes: usize,
    span: (usize, usize),
}

impl RowMajor {
    #[inline(always)]
    pub(crate) fn write(self, ndim: usize, out: &mut Checked) {
        out.ndim = ndim;
        out.numel = self.numel;
        out.nbytes = self.nbytes;
        out.synthesized_strides = None;
        out.span = self.span;
        out.contiguous = true;
    }
}

/// The common case of [`check_dims_into`] in one pass over the dimensions
/// (measured: the general checks were half an import's own time on a torch
/// tensor): a row-major tensor of whole-byte elements with at least one
/// element, at a non-NULL address, within the size limits. `None` for
/// anything else (an extent below 1, other strides, a size or address past
/// the limits, packed elements, NULL data), left to
/// [`check_any_layout_into`] and its errors.
///
/// Where it answers, the answer is the general checks' (a property test
/// holds them equal): with every extent at least 1, the running product of
/// the extents from the last is both `is_contiguous`'s expected stride and
/// the numel's product, and never decreases, so a final product within the
/// limit means every step was (a stride compared with a product past
/// `i64::MAX` may wrongly match, but such a product never ends within the
/// limit); the elements reach exactly `[data + byte_offset, … + nbytes)`.
#[inline(always)]
pub(crate) fn check_row_major(
    tensor: &DLTensor,
    shape: &[i64],
    strides: &[i64],
) -> Option<RowMajor> {
    if !tensor.dtype.is_byte_sized() || tensor.data.is_null() {
        return None;
    }
    let mut numel: u64 = 1;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent < 1 || (extent != 1 && stride as u64 != numel) {
            return None;
        }
        numel = numel.checked_mul(extent as u64)?;
    }
    let nbytes = numel.checked_mul(tensor.dtype.itemsize() as u64)?;
    // Within one allocation: at most `isize::MAX` bytes from `data`.
    if tensor.byte_offset.checked_add(nbytes)? > isize::MAX as u64 {
        return None;
    }
    let start = (tensor.data as usize).checked_add(tensor.byte_offset as usize)?;
    let end = start.checked_add(nbytes as usize)?;
    Some(RowMajor {
        numel: numel as usize,
        nbytes: nbytes as usize,
        span: (start, end),
    })
}

/// A layout rule a foreign field broke is a malformed capsule.
fn as_foreign(err: DLPackError) -> DLPackError {
    match err {
        DLPackError::Layout(err @ LayoutError::NegativeExtent { .. }) => {
            CapsuleError::Layout(err).into()
        }
        other => other,
    }
}

/// `len` i64s at `ptr`, or an empty slice for `len == 0` (where `ptr` may be NULL).
///
/// # Safety
///
/// When `len > 0`, `ptr` is non-NULL and points to `len` readable `i64`s that
/// outlive the returned slice's use.
pub(crate) unsafe fn foreign_slice<'a>(ptr: *const i64, len: usize) -> &'a [i64] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// The bytes the tensor reaches, from its first element's address plus the
/// most negative and most positive stride reach, must be a real address
/// range of at most `isize::MAX` bytes. A row-major tensor reaches exactly
/// its `nbytes`, packed sub-byte elements included (the common case,
/// without the strided walk's wide arithmetic). Inlined, as `check_dims_into`
/// is: the span returned through memory was read back with a wide load that
/// stalled on store forwarding (measured: a quarter of `check`'s time).
#[inline(always)]
fn check_extent(
    tensor: &DLTensor,
    shape: &[i64],
    strides: &[i64],
    contiguous: bool,
    padded: bool,
    nbytes: usize,
) -> Result<(usize, usize), DLPackError> {
    if tensor.data.is_null() {
        return Err(null_data(shape));
    }
    let (low, high) = if contiguous {
        (0, nbytes as i128)
    } else {
        // Packed elements of a width that is not a whole number of bytes
        // (int4, int12, float6 …): element `k` of the strided walk starts
        // at bit `k × bits`, inside `[k × itemsize, (k + 1) × itemsize)`
        // with the byte-rounded itemsize, so that reach covers them all.
        let itemsize =
            layout::element_bytes(tensor.dtype, padded).unwrap_or_else(|| tensor.dtype.itemsize());
        match layout::reach(shape, strides, itemsize) {
            Some(reach) => reach,
            None => return Err(address_overflow(tensor, shape, strides)),
        }
    };
    // Every byte reached lies in the allocation `data` points into, so
    // within `isize::MAX` bytes of it (Rust's and C's bound on one object),
    // and at a real address.
    let (from_data_low, from_data_high) = (
        i128::from(tensor.byte_offset) + low,
        i128::from(tensor.byte_offset) + high,
    );
    let within = -(isize::MAX as i128)..=isize::MAX as i128;
    let first = tensor.data as usize as i128 + i128::from(tensor.byte_offset);
    if !within.contains(&from_data_low)
        || !within.contains(&from_data_high)
        || first + low < 0
        || first + high > usize::MAX as i128
    {
        return Err(address_overflow(tensor, shape, strides));
    }
    Ok(((first + low) as usize, (first + high) as usize))
}

#[cold]
fn null_data(shape: &[i64]) -> DLPackError {
    CapsuleError::NullData {
        shape: shape.to_vec(),
    }
    .into()
}

#[cold]
fn address_overflow(tensor: &DLTensor, shape: &[i64], strides: &[i64]) -> DLPackError {
    SizeOverflow::AddressSpace {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        byte_offset: tensor.byte_offset,
    }
    .into()
}
