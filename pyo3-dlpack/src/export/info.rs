//! `TensorInfo`: a checked description of one export (data, device, dtype,
//! shape, strides, read-only).

use std::ffi::c_void;
use std::fmt;

use crate::export::data::TensorData;
use crate::{DLPackError, DataType, Device};

/// A list of extents or strides, borrowed from the value being exported or
/// computed on the fly.
///
/// Built with `From` from `&[usize]`, `&[i64]`, `&[isize]` (ndarray strides),
/// arrays (by reference or by value) and `Vec`s, so a `TensorInfo` can borrow
/// a struct's own `shape: [usize; 3]` field, or take a shape computed in
/// `tensor_info`. Arrays of up to [`Dims::INLINE`] entries taken by value are
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
    pub const INLINE: usize = 8;

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
    fn get(&self, i: usize) -> Option<i64> {
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
            /// Stored inline (no allocation) up to [`Dims::INLINE`] entries.
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
    /// Strides as `ndarray` keeps them (converted, inline up to [`Dims::INLINE`]).
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

/// The checked description of one export: where the first element is, on
/// which device, its dtype, shape, strides (in elements) and whether
/// consumers may write.
///
/// Build it with [`TensorInfo::builder`] (or [`TensorInfo::new`]) from a
/// [`TensorData`]; `build` checks that the shape, strides and offset stay
/// inside the buffer, so an export never describes memory it does not own.
///
/// ```
/// use pyo3_dlpack::{DataType, TensorInfo};
///
/// let data = vec![0.0f32; 6];
/// let shape = [2usize, 3];
/// let info = TensorInfo::new(&data, &shape).unwrap();
/// assert_eq!(info.dtype(), DataType::F32);
/// assert_eq!(info.strides(), vec![3, 1]);
///
/// // A transposed view of the same memory:
/// let t = TensorInfo::builder(&data).shape([3usize, 2]).strides([1i64, 3]).build().unwrap();
/// assert!(!t.is_contiguous());
///
/// // A shape that does not fit the buffer is an error, not an export:
/// let err = TensorInfo::new(&data, [4usize, 3]).unwrap_err();
/// assert_eq!(err.to_string(),
///     "shape [4, 3] of float32 needs 48 bytes, but the buffer holds 24 bytes");
/// ```
#[derive(Debug, Clone)]
pub struct TensorInfo<'a> {
    data: *mut c_void,
    device: Device,
    dtype: DataType,
    shape: Dims<'a>,
    strides: Option<Dims<'a>>,
    read_only: bool,
    length_known: bool,
}

/// Sets the parts of a [`TensorInfo`] one by one; [`build`](Self::build) checks them.
#[derive(Debug, Clone)]
#[must_use = "call .build() to get the TensorInfo"]
pub struct TensorInfoBuilder<'a> {
    data: *mut c_void,
    byte_len: Option<usize>,
    buffer_dtype: Option<DataType>,
    buffer_read_only: bool,
    buffer_device: Device,
    device: Device,
    dtype: Option<DataType>,
    shape: Option<Dims<'a>>,
    strides: Option<Dims<'a>>,
    byte_offset: usize,
    read_only: bool,
}

impl<'a> TensorInfo<'a> {
    /// Starts describing an export of `data`.
    pub fn builder<D: TensorData + ?Sized>(data: &'a D) -> TensorInfoBuilder<'a> {
        TensorInfoBuilder {
            data: data.data_ptr(),
            byte_len: data.byte_len(),
            buffer_dtype: data.dtype(),
            buffer_read_only: data.is_read_only(),
            buffer_device: data.device(),
            device: data.device(),
            dtype: None,
            shape: None,
            strides: None,
            byte_offset: 0,
            read_only: false,
        }
    }

    /// A row-major tensor of `shape` over typed `data`.
    pub fn new<D: TensorData + ?Sized>(
        data: &'a D,
        shape: impl Into<Dims<'a>>,
    ) -> Result<Self, DLPackError> {
        Self::builder(data).shape(shape).build()
    }

    /// Address of the first element (`data` plus any offset).
    pub fn data_ptr(&self) -> *mut c_void {
        self.data
    }

    /// Device of the memory.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Extents.
    pub fn shape(&self) -> Vec<i64> {
        self.shape.to_vec()
    }

    /// Strides in elements (row-major ones when none were given).
    pub fn strides(&self) -> Vec<i64> {
        self.strides_iter().collect()
    }

    /// Whether consumers must not write.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the buffer's length was known, so that every element was
    /// checked to lie inside it (only then may this crate read the elements,
    /// for `copy=True`).
    pub fn is_bounds_checked(&self) -> bool {
        self.length_known
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        // Checked in `build`: the product fits (it is bounded by the buffer or by i64).
        self.shape.iter().map(|d| d as usize).product()
    }

    /// Whether the elements are packed in row-major (C) order. Strides of
    /// dimensions of extent 0 or 1 do not matter.
    pub fn is_contiguous(&self) -> bool {
        let Some(strides) = &self.strides else {
            return true;
        };
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1i64;
        for (dim, stride) in self.shape.iter().zip(strides.iter()).rev() {
            if dim != 1 && stride != expected {
                return false;
            }
            expected = expected.saturating_mul(dim);
        }
        true
    }

    pub(crate) fn shape_iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = i64> + ExactSizeIterator + '_ {
        self.shape.iter()
    }

    /// Strides in elements, synthesising row-major ones when none were given
    /// (stride `i` is the product of the extents after `i`; no allocation,
    /// as this runs on every export).
    pub(crate) fn strides_iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = i64> + ExactSizeIterator + '_ {
        (0..self.ndim()).map(move |i| match &self.strides {
            Some(strides) => strides.get(i).unwrap_or(i64::MAX),
            None => self
                .shape
                .iter()
                .skip(i + 1)
                .fold(1i64, |step, dim| step.saturating_mul(dim.max(1))),
        })
    }
}

impl<'a> TensorInfoBuilder<'a> {
    /// Extents. Optional for 1-D typed data (the shape is then its length).
    pub fn shape(mut self, shape: impl Into<Dims<'a>>) -> Self {
        self.shape = Some(shape.into());
        self
    }

    /// Strides in elements (may be negative or zero). Row-major when not set.
    pub fn strides(mut self, strides: impl Into<Dims<'a>>) -> Self {
        self.strides = Some(strides.into());
        self
    }

    /// Like [`strides`](Self::strides), with `None` meaning row-major.
    pub fn maybe_strides(mut self, strides: Option<impl Into<Dims<'a>>>) -> Self {
        self.strides = strides.map(Into::into);
        self
    }

    /// Element type: required for raw bytes; for typed buffers it must match
    /// the buffer's type, except that `u8` storage may hold any type but
    /// `bool` (whose bytes must be 0 or 1: export a `Vec<bool>` instead).
    pub fn dtype(mut self, dtype: DataType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// Device, overriding the buffer's own (for example a CUDA device index
    /// that a `RawBuffer` did not know). Memory the CPU cannot read cannot be
    /// relabelled as memory it can (`build` refuses: that would make copies
    /// read device memory from the host).
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Bytes from the start of the buffer to the first element (the element
    /// at index `[0, 0, …]`); with negative strides, others lie before it.
    pub fn byte_offset(mut self, byte_offset: usize) -> Self {
        self.byte_offset = byte_offset;
        self
    }

    /// Exports read-only when `true`. A buffer that is read-only itself
    /// (`Arc<[T]>`) stays read-only whatever this says.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Checks the description against the buffer.
    pub fn build(self) -> Result<TensorInfo<'a>, DLPackError> {
        let dtype = self.resolve_dtype()?;
        let shape = match self.shape {
            Some(shape) => shape,
            None => Dims::from([self.implied_length(dtype)?]),
        };
        check_dims(&shape, self.strides.as_ref())?;
        if self.device.is_host_accessible() && !self.buffer_device.is_host_accessible() {
            return Err(DLPackError::Device {
                expected: self.buffer_device,
                found: self.device,
            });
        }
        if !dtype.is_byte_sized() && self.strides.is_some() {
            return Err(DLPackError::Layout(format!(
                "{dtype} packs several elements per byte: it cannot be exported with strides"
            )));
        }
        let info = TensorInfo {
            data: self.data.wrapping_byte_add(self.byte_offset),
            device: self.device,
            dtype,
            shape,
            strides: self.strides,
            read_only: self.read_only || self.buffer_read_only,
            length_known: self.byte_len.is_some(),
        };
        check_bounds(&info, self.byte_offset, self.byte_len)?;
        Ok(info)
    }

    fn resolve_dtype(&self) -> Result<DataType, DLPackError> {
        // Bytes may hold any type, except bool, whose elements must be 0 or 1.
        let bytes_hold =
            |given: DataType| self.buffer_dtype == Some(DataType::U8) && given != DataType::BOOL;
        match (self.buffer_dtype, self.dtype) {
            (Some(buffer), Some(given)) if buffer != given && !bytes_hold(given) => {
                Err(DLPackError::Dtype {
                    expected: buffer,
                    found: given,
                })
            }
            (_, Some(given)) => Ok(given),
            (Some(buffer), None) => Ok(buffer),
            (None, None) => Err(DLPackError::MissingDtype),
        }
    }

    /// The length of a 1-D export given no shape: the whole buffer.
    fn implied_length(&self, dtype: DataType) -> Result<i64, DLPackError> {
        let Some(byte_len) = self.byte_len else {
            return Err(DLPackError::Layout(
                "a buffer of unknown length needs an explicit shape".into(),
            ));
        };
        let available = byte_len.saturating_sub(self.byte_offset);
        let itemsize = dtype.itemsize().max(1);
        if !dtype.is_byte_sized() || available % itemsize != 0 {
            return Err(DLPackError::Layout(format!(
                "a buffer of {available} bytes is not a whole number of {dtype} elements; \
                 give an explicit shape"
            )));
        }
        i64::try_from(available / itemsize)
            .map_err(|_| DLPackError::SizeOverflow(format!("{available} bytes")))
    }
}

/// Rank limits, extents non-negative and representable, strides of the same rank.
fn check_dims(shape: &Dims<'_>, strides: Option<&Dims<'_>>) -> Result<(), DLPackError> {
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
fn check_bounds(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_defaults_to_the_whole_typed_buffer() {
        let data = vec![1u16; 5];
        let info = TensorInfo::builder(&data).build().unwrap();
        assert_eq!(info.shape(), vec![5]);
        assert_eq!(info.strides(), vec![1]);
        assert_eq!(info.numel(), 5);
        assert_eq!(info.data_ptr(), data.as_ptr().cast_mut().cast());
    }

    #[test]
    fn zero_d_and_zero_size() {
        let one = vec![3.0f32];
        let scalar = TensorInfo::new(&one, [0usize; 0]).unwrap();
        assert_eq!(scalar.ndim(), 0);
        assert_eq!(scalar.numel(), 1);
        let none: Vec<f32> = Vec::new();
        let empty = TensorInfo::new(&none, [0usize, 7]).unwrap();
        assert_eq!(empty.numel(), 0);
        assert!(empty.is_contiguous());
        // 0-d needs one element: an empty buffer cannot hold it.
        assert!(TensorInfo::new(&none, [0usize; 0]).is_err());
    }

    #[test]
    fn bounds_are_checked_for_every_stride_sign() {
        let data = vec![0u8; 12];
        // Transposed 3x4 view of a 4x3 buffer.
        let t = TensorInfo::builder(&data)
            .shape([3usize, 4])
            .strides([1i64, 3])
            .build();
        assert!(t.is_ok());
        // Broadcast (stride 0) is allowed and stays inside.
        assert!(
            TensorInfo::builder(&data)
                .shape([100usize, 12])
                .strides([0i64, 1])
                .build()
                .is_ok()
        );
        // Negative stride from an offset: a reversed view.
        let reversed = TensorInfo::builder(&data)
            .shape([12usize])
            .strides([-1i64])
            .byte_offset(11)
            .build()
            .unwrap();
        assert!(!reversed.is_contiguous());
        assert_eq!(
            reversed.data_ptr(),
            data.as_ptr().wrapping_add(11).cast_mut().cast()
        );
        // The same without the offset reaches before the buffer.
        let err = TensorInfo::builder(&data)
            .shape([12usize])
            .strides([-1i64])
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "shape [12] with strides [-1] of uint8 reaches 11 bytes before the start of the buffer"
        );
        // One stride too large: 2*5 + 3*1 + 1 = 14 bytes.
        let err = TensorInfo::builder(&data)
            .shape([3usize, 4])
            .strides([5i64, 1])
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "shape [3, 4] with strides [5, 1] of uint8 needs 14 bytes, but the buffer holds 12 bytes"
        );
    }

    #[test]
    fn malformed_descriptions_are_refused() {
        let data = vec![0i32; 6];
        let err = TensorInfo::builder(&data)
            .shape([2usize, 3])
            .strides([1i64])
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "strides [1] have 1 entries, but shape [2, 3] has 2 dimensions"
        );
        let err = TensorInfo::new(&data, [-1i64, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "shape [-1, 3] has a negative extent -1 in dimension 0"
        );
        let err = TensorInfo::new(&data, [usize::MAX]).unwrap_err();
        assert!(matches!(err, DLPackError::SizeOverflow(_)), "{err}");
        let err = TensorInfo::new(&data, [1usize << 40, 1 << 40]).unwrap_err();
        assert!(matches!(err, DLPackError::SizeOverflow(_)), "{err}");
        let err = TensorInfo::builder(&data)
            .shape([2usize, 3])
            .dtype(DataType::F32)
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            DLPackError::Dtype {
                expected: DataType::I32,
                found: DataType::F32
            }
        );
    }

    #[test]
    fn bytes_take_any_dtype_and_raw_memory_needs_one() {
        let bytes = vec![0u8; 8];
        let info = TensorInfo::builder(&bytes)
            .dtype(DataType::F32)
            .build()
            .unwrap();
        assert_eq!(info.shape(), vec![2]);
        let err = TensorInfo::builder(&bytes)
            .dtype(DataType::C128)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "a buffer of 8 bytes is not a whole number of complex128 elements; give an explicit shape"
        );
        // SAFETY: `bytes` outlives `raw` and is not written meanwhile.
        let raw =
            unsafe { crate::RawBuffer::new(bytes.as_ptr().cast_mut().cast(), 8, Device::cuda(0)) };
        assert_eq!(
            TensorInfo::new(&raw, [2usize]).unwrap_err(),
            DLPackError::MissingDtype
        );
        let on_gpu = TensorInfo::builder(&raw)
            .shape([2usize])
            .dtype(DataType::F32)
            .build()
            .unwrap();
        assert_eq!(on_gpu.device(), Device::cuda(0));
    }

    #[test]
    fn packed_sub_byte_types_use_the_header_storage_size() {
        let bytes = vec![0u8; 3];
        // 6 float4 values fit 3 bytes packed; 7 do not.
        assert!(
            TensorInfo::builder(&bytes)
                .shape([6usize])
                .dtype(DataType::F4_E2M1FN)
                .build()
                .is_ok()
        );
        let err = TensorInfo::builder(&bytes)
            .shape([7usize])
            .dtype(DataType::F4_E2M1FN)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "shape [7] of float4_e2m1fn needs 4 bytes, but the buffer holds 3 bytes"
        );
        let err = TensorInfo::builder(&bytes)
            .shape([2usize])
            .strides([1i64])
            .dtype(DataType::F4_E2M1FN)
            .build()
            .unwrap_err();
        assert!(
            err.to_string().contains("cannot be exported with strides"),
            "{err}"
        );
    }

    #[test]
    fn read_only_buffers_stay_read_only() {
        let shared: std::sync::Arc<[f32]> = vec![1.0f32; 2].into();
        let info = TensorInfo::builder(&shared)
            .read_only(false)
            .build()
            .unwrap();
        assert!(info.is_read_only());
        let owned = vec![1.0f32; 2];
        assert!(
            TensorInfo::builder(&owned)
                .read_only(true)
                .build()
                .unwrap()
                .is_read_only()
        );
        assert!(!TensorInfo::builder(&owned).build().unwrap().is_read_only());
    }
}
