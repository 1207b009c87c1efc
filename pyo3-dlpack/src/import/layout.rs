//! Validation of a producer's `DLTensor` before anything else reads it.

use crate::ffi::DLTensor;
use crate::{DLPackError, DataType};

/// Most dimensions an imported tensor may have. NumPy allows 64; the limit
/// only guards against absurd values from a broken producer.
pub const MAX_NDIM: usize = 1024;

/// What validation learnt about a tensor, kept by `PyTensor`.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) ndim: usize,
    pub(crate) numel: usize,
    pub(crate) nbytes: usize,
    /// Row-major strides, when the producer gave NULL strides for ndim > 0.
    pub(crate) synthesized_strides: Option<Box<[i64]>>,
    /// Addresses `[start, end)` of every byte the elements reach (empty for no elements).
    pub(crate) span: (usize, usize),
}

impl Checked {
    /// Placeholder until a tensor is checked (never read).
    pub(crate) const EMPTY: Self = Self {
        ndim: 0,
        numel: 0,
        nbytes: 0,
        synthesized_strides: None,
        span: (0, 0),
    };
}

/// Checks every field of `tensor` that later code relies on:
/// ndim bounds, NULL shape with ndim > 0, negative extents, the element
/// count and byte extent (no overflow, no address wrap-around), NULL data
/// with elements, and the dtype (known code, bits > 0, one lane).
///
/// # Safety
///
/// `tensor` comes from a live managed tensor: when non-NULL, `shape` and
/// `strides` point to `ndim` readable `i64`s each, as the DLPack header requires.
pub(crate) unsafe fn check(tensor: &DLTensor) -> Result<Checked, DLPackError> {
    let ndim = usize::try_from(tensor.ndim)
        .ok()
        .filter(|&n| n <= MAX_NDIM)
        .ok_or_else(|| {
            DLPackError::InvalidCapsule(format!("ndim {} is outside 0..={MAX_NDIM}", tensor.ndim))
        })?;
    check_dtype(tensor.dtype)?;
    if ndim > 0 && tensor.shape.is_null() {
        return Err(DLPackError::InvalidCapsule(format!(
            "the tensor has {ndim} dimensions but a NULL shape"
        )));
    }
    // SAFETY: non-NULL (checked above) and `ndim` long, per the caller.
    let shape = unsafe { foreign_slice(tensor.shape, ndim) };
    let numel = count_elements(shape)?;
    let synthesized_strides = (ndim > 0 && tensor.strides.is_null()).then(|| row_major(shape));
    let strides = match &synthesized_strides {
        Some(strides) => strides,
        // SAFETY: non-NULL here, and `ndim` long, per the caller.
        None => unsafe { foreign_slice(tensor.strides, ndim) },
    };
    let nbytes = storage_bytes(numel, tensor.dtype)?;
    let span = if numel > 0 {
        check_extent(tensor, shape, strides)?
    } else {
        (0, 0)
    };
    Ok(Checked {
        ndim,
        numel,
        nbytes,
        synthesized_strides,
        span,
    })
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

fn check_dtype(dtype: DataType) -> Result<(), DLPackError> {
    if !dtype.code.is_known() {
        return Err(DLPackError::InvalidCapsule(format!(
            "unknown DLPack dtype code {} (bits {}): this crate knows the codes of DLPack 1.3",
            dtype.code.code(),
            dtype.bits
        )));
    }
    if dtype.bits == 0 {
        return Err(DLPackError::InvalidCapsule(format!(
            "dtype {dtype} has 0 bits per element"
        )));
    }
    if dtype.lanes != 1 {
        return Err(DLPackError::InvalidCapsule(format!(
            "dtype {dtype} has {} lanes: vector dtypes (lanes != 1) are not supported",
            dtype.lanes
        )));
    }
    Ok(())
}

fn count_elements(shape: &[i64]) -> Result<usize, DLPackError> {
    let mut numel: usize = 1;
    for (i, &dim) in shape.iter().enumerate() {
        let dim = usize::try_from(dim).map_err(|_| {
            DLPackError::InvalidCapsule(format!(
                "shape {shape:?} has a negative extent {dim} in dimension {i}"
            ))
        })?;
        numel = numel.checked_mul(dim).ok_or_else(|| {
            DLPackError::SizeOverflow(format!(
                "shape {shape:?} has more elements than fit in memory"
            ))
        })?;
    }
    if numel > isize::MAX as usize {
        return Err(DLPackError::SizeOverflow(format!(
            "shape {shape:?} has more elements than fit in memory"
        )));
    }
    Ok(numel)
}

fn row_major(shape: &[i64]) -> Box<[i64]> {
    let mut strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        // Cannot overflow: the element count was checked to fit in isize.
        step = step.saturating_mul(dim.max(1));
    }
    strides.into_boxed_slice()
}

/// Bytes of storage: `numel * itemsize`, or packed bits for sub-byte types.
fn storage_bytes(numel: usize, dtype: DataType) -> Result<usize, DLPackError> {
    let bits = (numel as u128) * u128::from(dtype.bits) * u128::from(dtype.lanes);
    let bytes = if dtype.is_byte_sized() {
        (numel as u128) * dtype.itemsize() as u128
    } else {
        bits.div_ceil(8)
    };
    usize::try_from(bytes)
        .ok()
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| DLPackError::SizeOverflow(format!("{numel} elements of {dtype}")))
}

/// The bytes the tensor reaches, from its first element's address plus the
/// most negative and most positive stride reach, must be a real address range.
fn check_extent(
    tensor: &DLTensor,
    shape: &[i64],
    strides: &[i64],
) -> Result<(usize, usize), DLPackError> {
    if tensor.data.is_null() {
        return Err(DLPackError::InvalidCapsule(format!(
            "the tensor has shape {shape:?} but a NULL data pointer"
        )));
    }
    let itemsize = tensor.dtype.itemsize() as i128;
    let overflow = || {
        DLPackError::SizeOverflow(format!(
            "shape {shape:?} with strides {strides:?} and byte_offset {} reaches outside the address space",
            tensor.byte_offset
        ))
    };
    let (mut low, mut high) = (0i128, 0i128);
    for (&dim, &stride) in shape.iter().zip(strides) {
        let reach = i128::from(dim - 1)
            .checked_mul(i128::from(stride))
            .and_then(|r| r.checked_mul(itemsize))
            .ok_or_else(overflow)?;
        let side = if reach < 0 { &mut low } else { &mut high };
        *side = side.checked_add(reach).ok_or_else(overflow)?;
    }
    let first = tensor.data as usize as i128 + i128::from(tensor.byte_offset);
    if first + low < 0 || first + high + itemsize > usize::MAX as i128 {
        return Err(overflow());
    }
    if high - low + itemsize > isize::MAX as i128 {
        return Err(overflow());
    }
    Ok(((first + low) as usize, (first + high + itemsize) as usize))
}
