//! The checks `TensorInfoBuilder::build` runs: ranks, extents, and every
//! element inside the buffer, with overflow-checked arithmetic.

use crate::DLPackError;
use crate::export::dims::Dims;
use crate::export::info::TensorInfo;

/// Rank limits, extents non-negative and representable, strides of the same rank.
pub(super) fn check_dims(shape: &Dims<'_>, strides: Option<&Dims<'_>>) -> Result<(), DLPackError> {
    if shape.len() > crate::MAX_NDIM {
        return Err(DLPackError::Layout(format!(
            "{} dimensions are more than the {} this crate exports",
            shape.len(),
            crate::MAX_NDIM
        )));
    }
    for i in 0..shape.len() {
        match shape.get(i) {
            Some(dim) if dim >= 0 => {}
            Some(dim) => {
                return Err(DLPackError::Layout(format!(
                    "shape {shape:?} has a negative extent {dim} in dimension {i}"
                )));
            }
            None => {
                return Err(DLPackError::SizeOverflow(format!(
                    "extent of dimension {i} does not fit an int64"
                )));
            }
        }
    }
    if let Some(strides) = strides {
        if strides.len() != shape.len() {
            return Err(DLPackError::Layout(format!(
                "strides {strides:?} have {} entries, but shape {shape:?} has {} dimensions",
                strides.len(),
                shape.len()
            )));
        }
        if (0..strides.len()).any(|i| strides.get(i).is_none()) {
            return Err(DLPackError::SizeOverflow(format!(
                "strides {strides:?} do not fit int64"
            )));
        }
    }
    Ok(())
}

/// The bytes the description reaches, relative to its first element:
/// `(lowest, one past the highest)`. Every sum is checked, and a span larger
/// than `isize::MAX` bytes (more than any buffer can hold) is an overflow.
fn extent(
    info: &TensorInfo<'_>,
    describe: &dyn Fn() -> String,
) -> Result<(i128, i128), DLPackError> {
    const LIMIT: i128 = isize::MAX as i128;
    let overflow = || {
        DLPackError::SizeOverflow(format!(
            "{} spans more bytes than fit in memory",
            describe()
        ))
    };
    let mut numel: i128 = 1;
    for dim in info.shape.iter() {
        numel = numel
            .checked_mul(i128::from(dim))
            .filter(|&n| n <= LIMIT)
            .ok_or_else(overflow)?;
    }
    if numel == 0 {
        return Ok((0, 0));
    }
    if !info.dtype.is_byte_sized() {
        // Packed sub-byte elements, row-major: the header's storage size.
        let bits = numel * i128::from(info.dtype.bits) * i128::from(info.dtype.lanes);
        return Ok((0, (bits + 7) / 8));
    }
    let itemsize = info.dtype.itemsize() as i128;
    if info.strides.is_none() {
        // Row-major: exactly the elements, packed (the common case, on every export).
        return Some(numel * itemsize)
            .filter(|&n| n <= LIMIT)
            .map(|n| (0, n))
            .ok_or_else(overflow);
    }
    let (mut low, mut high) = (0i128, itemsize);
    for (dim, stride) in info.shape.iter().zip(info.strides_iter()) {
        let reach = i128::from(dim - 1)
            .checked_mul(i128::from(stride))
            .and_then(|r| r.checked_mul(itemsize))
            .filter(|r| r.abs() <= LIMIT)
            .ok_or_else(overflow)?;
        // Each side stays within ±LIMIT after every step, so no sum can overflow.
        let side = if reach < 0 { &mut low } else { &mut high };
        *side += reach;
        if side.abs() > LIMIT || high - low > LIMIT {
            return Err(overflow());
        }
    }
    Ok((low, high))
}

/// Checks the description's reach: no overflow, and, when the buffer's
/// length is known, every element inside `[0, byte_len)` of the buffer.
pub(super) fn check_bounds(
    info: &TensorInfo<'_>,
    byte_offset: usize,
    byte_len: Option<usize>,
) -> Result<(), DLPackError> {
    let describe = || match &info.strides {
        Some(strides) => format!(
            "shape {:?} with strides {strides:?} of {}",
            info.shape, info.dtype
        ),
        None => format!("shape {:?} of {}", info.shape, info.dtype),
    };
    let (first, end) = extent(info, &describe)?;
    let Some(byte_len) = byte_len else {
        return Ok(());
    };
    if first == end {
        return Ok(()); // no elements
    }
    let offset = byte_offset as i128;
    if offset + first < 0 {
        return Err(DLPackError::Layout(format!(
            "{} reaches {} bytes before the start of the buffer",
            describe(),
            -(offset + first)
        )));
    }
    if offset + end > byte_len as i128 {
        let needed = offset + end;
        return Err(DLPackError::Layout(format!(
            "{} needs {needed} bytes, but the buffer holds {byte_len} bytes",
            describe()
        )));
    }
    Ok(())
}
