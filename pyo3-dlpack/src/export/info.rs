//! `TensorInfo`: a checked description of one export (data, device, dtype,
//! shape, strides, read-only).

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::error::{Contradiction, LayoutDesc, LayoutError, SizeOverflow};
use crate::export::data::TensorData;
pub use crate::layout::Dims;
use crate::layout::DimsBuf;
use crate::layout::{self, MAX_NDIM};
use crate::protocol;
use crate::{DLPackError, DataType, Device, Writability};

/// The checked description of one export: where the first element is, on
/// which device, its dtype, shape, strides (in elements) and whether
/// consumers may write.
///
/// Build it with [`TensorInfo::builder`] (or [`TensorInfo::new`]) from a
/// [`TensorData`]; `build` checks that the shape, strides and offset stay
/// inside the buffer, so an export never describes memory it does not own.
/// The description owns its extents and strides (inline up to 4
/// dimensions); its lifetime is the borrow of the buffer it describes.
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
    /// Extents, then strides in elements (row-major ones when none were given).
    dims: DimsBuf,
    numel: usize,
    writability: Writability,
    length_known: bool,
    /// The CUDA stream pending work writes the memory on (see `TensorData::stream`).
    stream: Option<usize>,
    /// Where the `TensorData` value the description was built from lies
    /// (see [`TensorInfo::is_owned_by`]); 0 when vouched unshared.
    buffer_at: usize,
    /// Whether the memory is read-only only because it holds Rust `bool`s
    /// ([`protocol::element_writability`]).
    bool_guarded: bool,
    /// The buffer the description borrows.
    buffer: PhantomData<&'a ()>,
}

/// Sets the parts of a [`TensorInfo`] one by one; [`build`](Self::build) checks them.
#[derive(Debug, Clone)]
#[must_use = "call .build() to get the TensorInfo"]
pub struct TensorInfoBuilder<'a> {
    data: *mut c_void,
    byte_len: Option<usize>,
    buffer_dtype: Option<DataType>,
    buffer_writability: Writability,
    buffer_device: Device,
    device: Device,
    dtype: Option<DataType>,
    shape: Option<Dims<'a>>,
    strides: Option<Dims<'a>>,
    byte_offset: usize,
    read_only: bool,
    stream: Option<usize>,
    buffer_at: usize,
    /// The Rust element type the buffer holds ([`TensorData::STATIC_DTYPE`]).
    rust_elements: Option<DataType>,
    /// Whether a buffer of Rust bools may be exported writable ([`TensorInfoBuilder::writable_bool`]).
    bool_vouched: bool,
    /// Whether the shape, strides and offset are the memory's own
    /// ([`TensorData::own_layout`]): others given must agree.
    layout_fixed: bool,
    /// The first thing given that contradicts the memory's own layout.
    conflict: Option<Box<Contradiction>>,
    /// Whether a first element unaligned for its dtype was vouched for
    /// ([`TensorInfoBuilder::allow_misaligned`]).
    misaligned_vouched: bool,
}

impl<'a> TensorInfo<'a> {
    /// Starts describing an export of `data`.
    pub fn builder<D: TensorData + ?Sized>(data: &'a D) -> TensorInfoBuilder<'a> {
        // The memory's own layout, if it has one, is the layout given so far
        // (made once: not a builder without it, then copied with it).
        let (shape, strides, byte_offset, layout_fixed) = match data.own_layout() {
            None => (None, None, 0, false),
            Some(own) => (Some(own.shape), Some(own.strides), own.byte_offset, true),
        };
        TensorInfoBuilder {
            data: data.data_ptr(),
            byte_len: data.byte_len(),
            buffer_dtype: data.dtype(),
            buffer_writability: data.writability(),
            buffer_device: data.device(),
            device: data.device(),
            dtype: None,
            shape,
            strides,
            byte_offset,
            read_only: false,
            stream: data.stream(),
            buffer_at: address_of(data),
            rust_elements: D::STATIC_DTYPE,
            bool_vouched: false,
            layout_fixed,
            conflict: None,
            misaligned_vouched: false,
        }
    }

    /// The whole of `data`, a buffer of exactly `len` elements of `T` (a
    /// `Vec<T>`, `Box<[T]>`, `Arc<[T]>` or `AlignedBuffer<T>`), as a 1-D
    /// tensor: what [`builder`](Self::builder)`(data).build()` describes,
    /// without its checks, which such a buffer passes by construction (its
    /// length is its elements', a slice's at most `isize::MAX` bytes, and
    /// every `Element` dtype is byte-sized and valid).
    pub(crate) fn of_elements<T: crate::Element, D: TensorData + ?Sized>(
        data: &'a D,
        len: usize,
    ) -> Self {
        debug_assert_eq!(data.byte_len(), Some(len * size_of::<T>()));
        debug_assert_eq!(data.dtype(), Some(T::DTYPE));
        let mut dims = DimsBuf::pair(1);
        let (shape, strides) = dims.split_mut();
        shape[0] = len as i64;
        strides[0] = 1;
        TensorInfo {
            data: data.data_ptr(),
            device: data.device(),
            dtype: T::DTYPE,
            dims,
            numel: len,
            writability: protocol::element_writability(Some(T::DTYPE), data.writability()),
            length_known: true,
            stream: data.stream(),
            buffer_at: address_of(data),
            bool_guarded: protocol::element_writability(Some(T::DTYPE), data.writability())
                != data.writability(),
            buffer: PhantomData,
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
        self.dims_slices().0.len()
    }

    /// Extents.
    pub fn shape(&self) -> &[i64] {
        self.dims.split().0
    }

    /// Strides in elements (row-major ones when none were given).
    pub fn strides(&self) -> &[i64] {
        self.dims.split().1
    }

    /// Whether consumers must not write (read-only, or of unknown writability).
    pub fn is_read_only(&self) -> bool {
        !self.writability.allows_writes()
    }

    /// Whether consumers may write: [`Writability::Unknown`] for memory
    /// imported from a legacy capsule, which is exported as it came (see
    /// [`Writability`]).
    pub fn writability(&self) -> Writability {
        self.writability
    }

    /// Whether the buffer's length was known, so that every element was
    /// checked to lie inside it (only then may this crate read the elements,
    /// for `copy=True`).
    pub fn is_bounds_checked(&self) -> bool {
        self.length_known
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// Whether the elements are packed in row-major (C) order. Strides of
    /// dimensions of extent 0 or 1 do not matter.
    pub fn is_contiguous(&self) -> bool {
        let (shape, strides) = self.dims_slices();
        layout::is_contiguous(shape, strides)
    }

    /// Extents and strides, borrowed from the description.
    pub(crate) fn dims_slices(&self) -> (&[i64], &[i64]) {
        self.dims.split()
    }

    /// Extents then strides, one slice of `2 * ndim` (what an export's block
    /// copies in one go).
    pub(crate) fn dims_pair(&self) -> &[i64] {
        self.dims.as_slice()
    }

    /// Exports read-only from now on (a value shared through an `Arc`).
    pub(crate) fn force_read_only(&mut self) {
        self.writability = Writability::ReadOnly;
        self.bool_guarded = false;
    }

    /// Exports writable memory of Rust `bool`s writable after all: for an
    /// exported value that is the buffer itself and has no code that reads
    /// an element (`Vec<bool>`, `Box<[bool]>`, `AlignedBuffer<bool>`; see
    /// `export::managed::reads_no_elements`).
    pub(crate) fn lift_bool_guard(&mut self) {
        if self.bool_guarded {
            self.writability = Writability::Writable;
            self.bool_guarded = false;
        }
    }

    /// A read-only description handed to a consumer that never writes (JAX,
    /// whose arrays are immutable): its writability becomes unknown, which a
    /// legacy capsule may carry (see [`Writability::Unknown`]).
    pub(crate) fn for_immutable_consumer(&mut self) {
        if self.writability == Writability::ReadOnly {
            self.writability = Writability::Unknown;
        }
    }

    /// The same description, no longer tied to the borrow of its buffer:
    /// for a description stored next to the value that owns the buffer
    /// (`export::managed::Described`, its only caller).
    ///
    /// # Safety
    ///
    /// The description is used only while the memory it describes stays
    /// allocated at the same address (while the value it borrowed from lives).
    #[inline(always)]
    pub(crate) unsafe fn detach(self) -> TensorInfo<'static> {
        TensorInfo {
            data: self.data,
            device: self.device,
            dtype: self.dtype,
            dims: self.dims,
            numel: self.numel,
            writability: self.writability,
            length_known: self.length_known,
            stream: self.stream,
            buffer_at: self.buffer_at,
            bool_guarded: self.bool_guarded,
            buffer: PhantomData,
        }
    }

    /// Whether the `TensorData` value this description was built from lies
    /// inside the `len` bytes at `value` (a field of the exported value, or
    /// the value itself), or was vouched unshared
    /// ([`TensorInfoBuilder::unshared`]). Memory described through anything
    /// else (the contents of an `Arc` the value shares, a leaked `&'static`)
    /// may be read by other Rust code while a consumer writes it: exports
    /// make such descriptions read-only.
    pub(crate) fn is_owned_by(&self, value: usize, len: usize) -> bool {
        self.buffer_at == 0 || (value..value.saturating_add(len)).contains(&self.buffer_at)
    }

    /// Vouches, for this crate's own wrappers, that the described memory is
    /// reached by nothing but the exported value (see [`Self::is_owned_by`]).
    pub(crate) fn vouch_unshared(&mut self) {
        self.buffer_at = 0;
    }

    /// [`TensorInfoBuilder::unshared`] for a finished description: for an
    /// `IntoDLPack` that hands on another value's description (a wrapper
    /// around a `Box<dyn IntoDLPack>`), whose buffer does not lie inside the
    /// wrapper.
    ///
    /// # Safety
    ///
    /// As for [`TensorInfoBuilder::unshared`].
    pub unsafe fn unshared(mut self) -> Self {
        self.vouch_unshared();
        self
    }

    /// The CUDA stream pending work writes the memory on, if the buffer or
    /// the builder named one.
    pub fn stream(&self) -> Option<usize> {
        self.stream
    }
}

impl<'a> TensorInfoBuilder<'a> {
    /// Extents. Optional for 1-D typed data (the shape is then its length),
    /// and for data that knows its own layout (an `ndarray` array, a
    /// `nalgebra` matrix), whose own shape a shape given must equal
    /// ([`build`](Self::build) refuses another: [`Contradiction::Shape`]).
    #[inline]
    pub fn shape(mut self, shape: impl Into<Dims<'a>>) -> Self {
        let shape = shape.into();
        if self.layout_fixed {
            self.check_own(&shape, false);
        } else {
            self.shape = Some(shape);
        }
        self
    }

    /// Strides in elements (may be negative or zero). Row-major when not
    /// set, or the data's own for data that knows its layout (which strides
    /// given must equal, as [`shape`](Self::shape) says).
    #[inline]
    pub fn strides(mut self, strides: impl Into<Dims<'a>>) -> Self {
        let strides = strides.into();
        if self.layout_fixed {
            self.check_own(&strides, true);
        } else {
            self.strides = Some(strides);
        }
        self
    }

    /// Records the first contradiction of the memory's own shape (or
    /// strides, when `strides`): out of line, so the setters stay small.
    #[cold]
    #[inline(never)]
    fn check_own(&mut self, given: &Dims<'_>, strides: bool) {
        if self.conflict.is_some() {
            return;
        }
        let own = if strides { &self.strides } else { &self.shape };
        let own = own.as_ref().map(Dims::to_vec).unwrap_or_default();
        let given = given.to_vec();
        if own != given {
            self.conflict = Some(Box::new(if strides {
                Contradiction::Strides { memory: own, given }
            } else {
                Contradiction::Shape { memory: own, given }
            }));
        }
    }

    /// Like [`strides`](Self::strides), with `None` meaning the default
    /// (row-major, or the data's own).
    #[inline]
    pub fn maybe_strides(self, strides: Option<impl Into<Dims<'a>>>) -> Self {
        match strides {
            Some(strides) => self.strides(strides),
            None if self.layout_fixed => self,
            None => Self {
                strides: None,
                ..self
            },
        }
    }

    /// Element type: required for raw bytes; for typed buffers it must match
    /// the buffer's type, except that `u8` storage may hold any type but
    /// `bool` (whose bytes must be 0 or 1: export a `Vec<bool>` instead).
    pub fn dtype(mut self, dtype: DataType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// Forgets the buffer's element type: for this crate's own byte buffers
    /// that hold elements of another type (copies), bool included.
    pub(crate) fn untyped(mut self) -> Self {
        self.buffer_dtype = None;
        self.rust_elements = None;
        self
    }

    /// The device, which must be the memory's own
    /// ([`TensorData::device`]): [`build`](Self::build) refuses another
    /// ([`Contradiction::Device`]), since a consumer would hand the pointer
    /// to that device's API. Memory on another device is vouched for where
    /// the pointer is, by [`RawBuffer::new`](crate::RawBuffer::new)
    /// (or, for a buffer you describe, [`device_unchecked`](Self::device_unchecked)).
    ///
    /// ```
    /// use pyo3_dlpack::{Device, TensorInfo};
    ///
    /// let host = vec![0u8; 4];
    /// assert!(TensorInfo::builder(&host).device(Device::cpu()).build().is_ok());
    /// assert!(TensorInfo::builder(&host).device(Device::cuda(0)).build().is_err());
    /// ```
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Describes the memory as on `device`, whatever its [`TensorData`]
    /// says: for memory whose type cannot know its device (a host-side
    /// handle to memory another library placed).
    ///
    /// # Safety
    ///
    /// The memory is on `device`: consumers hand the pointer to that
    /// device's API (a CUDA kernel, a host `memcpy`), and a pointer of
    /// another device crashes or corrupts memory there.
    pub unsafe fn device_unchecked(mut self, device: Device) -> Self {
        self.device = device;
        self.buffer_device = device;
        self
    }

    /// Bytes from the start of the buffer to the first element (the element
    /// at index `[0, 0, …]`); with negative strides, others lie before it.
    /// It must keep the first element aligned for the dtype
    /// ([`build`](Self::build) refuses others: consumers, Rust slices
    /// included, read elements with aligned loads). For data that knows its
    /// own layout, it must be the data's own.
    #[inline]
    pub fn byte_offset(mut self, byte_offset: usize) -> Self {
        if self.layout_fixed {
            if byte_offset != self.byte_offset && self.conflict.is_none() {
                self.conflict = Some(contradicting_offset(self.byte_offset, byte_offset));
            }
        } else {
            self.byte_offset = byte_offset;
        }
        self
    }

    /// Vouches that no Rust code but the exported value reaches the memory
    /// while it is exported, for a `TensorData` value the exported value
    /// does not hold inline (the contents of a `Box` it holds, an element
    /// of a `Vec` of buffers). Without it such a description is exported
    /// read-only (and `Native::torch` refuses it: torch has no read-only
    /// tensors): the
    /// crate can only see that the value holds the buffer's handle inside
    /// its own bytes (a field, or the value itself); memory reached through
    /// anything else (the contents of a shared `Arc`) may be read by other
    /// Rust code while a consumer writes it.
    ///
    /// # Safety
    ///
    /// While the value is exported, no other Rust code holds a reference to
    /// the described memory or to the `TensorData` value (no other clone of
    /// an `Arc` around it, no `&'static` to it).
    pub unsafe fn unshared(mut self) -> Self {
        self.buffer_at = 0;
        self
    }

    /// Exports a buffer of Rust `bool`s (`Vec<bool>`, `AlignedBuffer<bool>`,
    /// …) writable: without it, such memory in a value of yours (a field of
    /// a derived type, a buffer your `IntoDLPack` describes) is exported
    /// read-only (NumPy and torch ≥ 2.9 import it, read-only; a legacy
    /// capsule request is refused), since a consumer may write any byte
    /// into it, and a `bool` other than 0 or 1 is undefined behaviour in the
    /// Rust code that reads it afterwards. A value that is the buffer
    /// itself (`DLPackTensor::new(vec_of_bools)`, `Native::torch(mask)`)
    /// has no such code and is exported writable without it.
    ///
    /// ```
    /// use pyo3_dlpack::{TensorInfo, Writability};
    ///
    /// let mask = vec![true, false, true];
    /// let info = TensorInfo::builder(&mask).build().unwrap();
    /// assert_eq!(info.writability(), Writability::ReadOnly);
    /// // SAFETY: nothing reads `mask` as bool once it is exported (a mask a
    /// // consumer fills, read back as bytes through its pointer).
    /// let info = unsafe { TensorInfo::builder(&mask).writable_bool() }.build().unwrap();
    /// assert_eq!(info.writability(), Writability::Writable);
    /// ```
    ///
    /// # Safety
    ///
    /// From the moment a consumer may write the memory (any export of the
    /// value) until it is dropped, no Rust code reads the memory as `bool`
    /// (or as a type holding one): its `Drop` included. Read it as `u8`.
    pub unsafe fn writable_bool(mut self) -> Self {
        self.bool_vouched = true;
        self
    }

    /// Exports a first element that is not aligned for its dtype (which
    /// [`build`](Self::build) otherwise refuses): for memory laid out by
    /// another program, such as a file format that packs tensors
    /// back to back.
    ///
    /// NumPy imports such memory as an array flagged unaligned and copies
    /// it where it needs alignment; torch, JAX and CuPy assume aligned
    /// elements, so their kernels may fault (CUDA does, on misaligned
    /// loads) or, on the host, read with loads the C standard leaves
    /// undefined; this crate's own views (`as_slice`) refuse it.
    ///
    /// # Safety
    ///
    /// Every consumer the value is exported to accepts unaligned elements
    /// (NumPy, or code of yours that reads them with unaligned loads).
    pub unsafe fn allow_misaligned(mut self) -> Self {
        self.misaligned_vouched = true;
        self
    }

    /// Exports read-only when `true`. A buffer that is read-only itself
    /// (`Arc<[T]>`) stays read-only whatever this says.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The CUDA stream pending work writes the memory on (by default the
    /// buffer's, [`TensorData::stream`]). Exports hand it to the CUDA driver
    /// (an event recorded on it, which consumers' streams wait for).
    ///
    /// # Safety
    ///
    /// `stream` is `None`, 1 or 2 (CUDA's legacy and per-thread default
    /// streams), or the handle of a live `CUstream` of the memory's device
    /// that stays alive while the value is exported: the driver cannot tell
    /// a made-up or destroyed handle, and crashes on one. With cudarc, take
    /// it from a live stream (`stream.cu_stream() as usize`).
    pub unsafe fn stream(mut self, stream: Option<usize>) -> Self {
        self.stream = stream;
        self
    }

    /// Checks the description against the buffer.
    pub fn build(mut self) -> Result<TensorInfo<'a>, DLPackError> {
        if let Some(what) = self.conflict.take() {
            return Err(contradicts(*what));
        }
        let dtype = self.resolve_dtype()?;
        protocol::check_dtype(dtype)?;
        let shape = match self.shape.take() {
            Some(shape) => shape,
            None => Dims::from([self.implied_length(dtype)?]),
        };
        let ndim = shape.len();
        if ndim > MAX_NDIM {
            return Err(LayoutError::TooManyDims {
                ndim,
                max: MAX_NDIM,
            }
            .into());
        }
        let mut dims = DimsBuf::pair(ndim);
        fill_dims(&mut dims, &shape, self.strides.as_ref())?;
        let numel = layout::numel(dims.split().0)?;
        if self.device != self.buffer_device {
            return Err(contradicts(Contradiction::Device {
                memory: self.buffer_device,
                given: self.device,
            }));
        }
        if !dtype.is_byte_sized() && self.strides.is_some() {
            return Err(LayoutError::StridedSubByte { dtype }.into());
        }
        let writability = if self.read_only {
            Writability::ReadOnly
        } else if self.bool_vouched {
            self.buffer_writability
        } else {
            protocol::element_writability(self.rust_elements, self.buffer_writability)
        };
        let info = TensorInfo {
            data: self.data.wrapping_byte_add(self.byte_offset),
            device: self.device,
            dtype,
            dims,
            numel,
            writability,
            length_known: self.byte_len.is_some(),
            stream: self.stream,
            buffer_at: self.buffer_at,
            bool_guarded: !self.read_only && writability != self.buffer_writability,
            buffer: PhantomData,
        };
        self.check_bounds(&info)?;
        if !self.misaligned_vouched {
            check_alignment(&info)?;
        }
        Ok(info)
    }

    fn resolve_dtype(&self) -> Result<DataType, DLPackError> {
        match (self.buffer_dtype, self.dtype) {
            (Some(buffer), Some(given)) if !protocol::storage_holds(buffer, given) => {
                Err(DLPackError::Contradicts {
                    field: None,
                    what: Contradiction::Dtype {
                        memory: buffer,
                        given,
                    },
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
            return Err(LayoutError::UnknownLength.into());
        };
        let available = byte_len.saturating_sub(self.byte_offset);
        let itemsize = dtype.itemsize().max(1);
        if !dtype.is_byte_sized() || available % itemsize != 0 {
            return Err(LayoutError::PartialElement { available, dtype }.into());
        }
        i64::try_from(available / itemsize)
            .map_err(|_| SizeOverflow::Bytes { bytes: available }.into())
    }

    /// The description as an error names it.
    fn describe(&self, info: &TensorInfo<'_>) -> Box<LayoutDesc> {
        let (shape, strides) = info.dims_slices();
        Box::new(LayoutDesc {
            shape: shape.to_vec(),
            strides: self.strides.as_ref().map(|_| strides.to_vec()),
            dtype: info.dtype,
        })
    }

    /// Every element inside `[0, byte_len)` of the buffer, when its length is
    /// known; no span beyond `isize::MAX` bytes either way.
    fn check_bounds(&self, info: &TensorInfo<'_>) -> Result<(), DLPackError> {
        if info.numel == 0 {
            return Ok(());
        }
        let (shape, strides) = info.dims_slices();
        let span = match layout::element_bytes(info.dtype, false) {
            Some(itemsize) if self.strides.is_some() => layout::reach(shape, strides, itemsize),
            // Row-major (packed sub-byte elements always are): the elements
            // and nothing else, the header's storage size.
            _ => {
                layout::storage_bytes(info.numel, info.dtype, false).map(|bytes| (0, bytes as i128))
            }
        };
        let Some((low, high)) = span else {
            let layout = self.describe(info);
            return Err(SizeOverflow::Span { layout }.into());
        };
        let Some(byte_len) = self.byte_len else {
            return Ok(());
        };
        let offset = self.byte_offset as i128;
        if offset + low < 0 {
            let layout = self.describe(info);
            let bytes = (-(offset + low)) as u64;
            return Err(LayoutError::BeforeStart { layout, bytes }.into());
        }
        if offset + high > byte_len as i128 {
            return Err(LayoutError::PastEnd {
                layout: self.describe(info),
                needed: u64::try_from(offset + high).unwrap_or(u64::MAX),
                available: byte_len,
            }
            .into());
        }
        Ok(())
    }
}

#[cold]
fn contradicts(what: Contradiction) -> DLPackError {
    DLPackError::Contradicts { field: None, what }
}

#[cold]
fn contradicting_offset(memory: usize, given: usize) -> Box<Contradiction> {
    Box::new(Contradiction::ByteOffset { memory, given })
}

/// The first element aligned for its dtype (a component of a complex
/// number, one lane of a vector type): consumers, and Rust slices over
/// the memory, load elements aligned. Nothing to check without elements,
/// or for devices whose `data` is a buffer handle rather than an address.
#[inline]
fn check_alignment(info: &TensorInfo<'_>) -> Result<(), DLPackError> {
    let align = element_align(info.dtype);
    let address = info.data as usize;
    if address % align == 0 || info.numel == 0 || info.device.device_type.holds_handles() {
        return Ok(());
    }
    Err(misaligned(address, info.dtype, align))
}

#[cold]
fn misaligned(address: usize, dtype: DataType, align: usize) -> DLPackError {
    LayoutError::Misaligned {
        address,
        dtype,
        align,
    }
    .into()
}

/// The alignment C gives one element of `dtype`: its scalar's size (a
/// complex number's component), as a power of two, at least 1.
fn element_align(dtype: DataType) -> usize {
    let bits = dtype.bits as usize;
    let scalar = if dtype.code == crate::DataTypeCode::COMPLEX {
        bits / 16
    } else {
        bits / 8
    };
    // The largest power of two dividing it (1 for sub-byte types).
    if scalar == 0 {
        1
    } else {
        1 << scalar.trailing_zeros()
    }
}

/// The address of a (possibly unsized) value, never 0 for a reference.
fn address_of<D: ?Sized>(data: &D) -> usize {
    std::ptr::from_ref(data).cast::<()>() as usize
}

/// Writes the extents and strides into `dims` (a pair of `shape.len()`
/// entries, at most `MAX_NDIM`) as `i64`s, checked for range (row-major
/// strides when none were given). Filled in place: the buffer is not moved
/// through a `Result`.
fn fill_dims(
    dims: &mut DimsBuf,
    shape: &Dims<'_>,
    strides: Option<&Dims<'_>>,
) -> Result<(), DLPackError> {
    let ndim = shape.len();
    let (extents, steps) = dims.split_mut();
    for (dim, slot) in extents.iter_mut().enumerate() {
        *slot = shape.get(dim).ok_or(SizeOverflow::Extent { dim })?;
        if *slot < 0 {
            return Err(LayoutError::NegativeExtent {
                shape: shape.to_vec(),
                dim,
                extent: *slot,
            }
            .into());
        }
    }
    match strides {
        None => layout::row_major(extents, steps),
        Some(strides) if strides.len() != ndim => {
            return Err(LayoutError::StridesRank {
                strides: strides.to_vec(),
                shape: shape.to_vec(),
            }
            .into());
        }
        Some(strides) => {
            for (i, slot) in steps.iter_mut().enumerate() {
                *slot = strides.get(i).ok_or_else(|| SizeOverflow::Strides {
                    strides: strides.to_vec(),
                })?;
            }
        }
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
            "strides [1] have 1 entry, but shape [2, 3] has 2 dimensions"
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
            DLPackError::Contradicts {
                field: None,
                what: Contradiction::Dtype {
                    memory: DataType::I32,
                    given: DataType::F32
                }
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
    fn host_memory_is_exported_as_host_memory() {
        let host = vec![0.0f32; 4];
        let err = TensorInfo::builder(&host)
            .device(Device::cuda(1))
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            DLPackError::Contradicts {
                field: None,
                what: Contradiction::Device {
                    memory: Device::cpu(),
                    given: Device::cuda(1)
                }
            }
        );
        // A RawBuffer vouches for its device; another index is refused too.
        // SAFETY: only described, never read.
        let raw =
            unsafe { crate::RawBuffer::new(host.as_ptr().cast_mut().cast(), 16, Device::cuda(0)) }
                .with_dtype(DataType::F32);
        assert!(
            TensorInfo::builder(&raw)
                .device(Device::cuda(1))
                .build()
                .is_err()
        );
        assert!(
            TensorInfo::builder(&raw)
                .device(Device::cpu())
                .build()
                .is_err()
        );
        // SAFETY: only described, never read.
        let vouched = unsafe { TensorInfo::builder(&host).device_unchecked(Device::cuda(1)) };
        assert_eq!(vouched.build().unwrap().device(), Device::cuda(1));
    }

    #[test]
    fn misaligned_elements_are_refused() {
        let data = vec![0.0f32; 4];
        let err = TensorInfo::builder(&data)
            .shape([2usize])
            .byte_offset(1)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, DLPackError::Layout(LayoutError::Misaligned { align: 4, dtype, .. }) if dtype == DataType::F32),
            "{err}"
        );
        assert!(
            TensorInfo::builder(&data)
                .shape([2usize])
                .byte_offset(4)
                .build()
                .is_ok()
        );
        // Bytes holding float64: the offset must keep 8-byte alignment.
        let bytes = crate::AlignedBuffer::<u8>::zeroed(32);
        let at = |offset| {
            TensorInfo::builder(&bytes)
                .dtype(DataType::F64)
                .shape([1usize])
                .byte_offset(offset)
                .build()
        };
        assert!(at(8).is_ok());
        assert!(matches!(
            at(4),
            Err(DLPackError::Layout(LayoutError::Misaligned {
                align: 8,
                ..
            }))
        ));
        // complex64 is two float32s: 4-byte aligned, as C and NumPy have it.
        let c = TensorInfo::builder(&bytes)
            .dtype(DataType::C64)
            .shape([1usize])
            .byte_offset(4)
            .build();
        assert!(c.is_ok());
        // No element, nothing to load.
        assert!(
            at(4).is_err()
                && TensorInfo::builder(&bytes)
                    .dtype(DataType::F64)
                    .shape([0usize])
                    .byte_offset(4)
                    .build()
                    .is_ok()
        );
    }

    #[test]
    fn a_dtype_typed_memory_does_not_hold_is_a_contradiction() {
        let data = vec![0.0f32; 4];
        let err = TensorInfo::builder(&data)
            .dtype(DataType::I32)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the description says dtype int32, but the memory holds float32 elements \
             (a runtime dtype is for untyped bytes: Vec<u8>, RawBuffer)"
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
