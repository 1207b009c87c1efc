//! The structured details of [`DLPackError`](super::DLPackError)'s variants:
//! each says what was expected and what was found, as fields a caller can
//! read, and formats its message from them.

use std::fmt;

use crate::{DataType, Device};

/// A list of extents or strides, formatted like a Python list: `[2, 3]`.
pub(super) fn list(entries: &[i64]) -> impl fmt::Display + '_ {
    struct List<'a>(&'a [i64]);
    impl fmt::Display for List<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(self.0, f)
        }
    }
    List(entries)
}

/// A count of dimensions in words: `1 dimension`, `3 dimensions`.
pub(crate) fn dimensions(count: usize) -> Counted {
    counted(count, "dimension", "dimensions")
}

/// A count in words, the noun agreeing with it: `1 entry`, `2 entries`.
fn counted(count: usize, one: &'static str, many: &'static str) -> Counted {
    Counted {
        count,
        noun: if count == 1 { one } else { many },
    }
}

/// A count and its noun, formatted without a `String` of its own.
pub(crate) struct Counted {
    count: usize,
    noun: &'static str,
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.count, self.noun)
    }
}

/// A tensor layout named in an error: shape, strides (when given) and dtype.
///
/// Displays as `shape [2, 3] with strides [3, 1] of float32`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutDesc {
    /// Extents.
    pub shape: Vec<i64>,
    /// Strides in elements; `None` when the description gave none (row-major).
    pub strides: Option<Vec<i64>>,
    /// Element type.
    pub dtype: DataType,
}

impl fmt::Display for LayoutDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shape {}", list(&self.shape))?;
        if let Some(strides) = &self.strides {
            write!(f, " with strides {}", list(strides))?;
        }
        write!(f, " of {}", self.dtype)
    }
}

/// Which list of a tensor's description an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimsKind {
    /// The extents.
    Shape,
    /// The strides.
    Strides,
}

impl fmt::Display for DimsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shape => "shape",
            Self::Strides => "strides",
        })
    }
}

/// Shape, strides and offset do not describe memory inside the buffer, or
/// the layout is not the one required.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// More dimensions than this crate handles.
    TooManyDims {
        /// The rank asked for.
        ndim: usize,
        /// [`MAX_NDIM`](crate::MAX_NDIM).
        max: usize,
    },
    /// An extent below zero.
    NegativeExtent {
        /// The whole shape.
        shape: Vec<i64>,
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i64,
    },
    /// Strides of another rank than the shape.
    StridesRank {
        /// The strides given.
        strides: Vec<i64>,
        /// The shape given.
        shape: Vec<i64>,
    },
    /// Elements past the end of the buffer.
    PastEnd {
        /// The description.
        layout: Box<LayoutDesc>,
        /// Bytes from the start of the buffer the elements need; `u64::MAX`
        /// for 2^64 − 1 or more (an offset near `u64::MAX` plus the
        /// elements' reach).
        needed: u64,
        /// Bytes the buffer holds.
        available: usize,
    },
    /// Elements before the start of the buffer (negative strides without an offset).
    BeforeStart {
        /// The description.
        layout: Box<LayoutDesc>,
        /// How many bytes before the start the lowest element lies.
        bytes: u64,
    },
    /// A buffer of unknown length described without a shape.
    UnknownLength,
    /// A buffer whose length is not a whole number of elements, described without a shape.
    PartialElement {
        /// Bytes available after the offset.
        available: usize,
        /// Element type.
        dtype: DataType,
    },
    /// Strides given for a type that packs several elements per byte.
    StridedSubByte {
        /// Element type.
        dtype: DataType,
    },
    /// Sub-byte elements padded to a byte each (DLPack's
    /// `IS_SUBBYTE_TYPE_PADDED`), which this crate exports only packed.
    PaddedSubByte {
        /// Element type.
        dtype: DataType,
    },
    /// A row-major contiguous tensor was required.
    NotContiguous {
        /// The tensor's shape.
        shape: Vec<i64>,
        /// Its strides.
        strides: Vec<i64>,
    },
    /// A mutable view was asked for while another live import shares the
    /// memory, or a view while another live import over it has handed out a
    /// mutable one.
    Shared,
    /// A mutable view was asked for over strides that reach an element twice.
    Overlapping {
        /// The tensor's shape.
        shape: Vec<i64>,
        /// Its strides.
        strides: Vec<i64>,
    },
    /// The first element is not aligned for the element type asked for.
    Misaligned {
        /// Its address.
        address: usize,
        /// Element type.
        dtype: DataType,
        /// Alignment in bytes the Rust type needs.
        align: usize,
    },
    /// A borrowed view's elements were asked for.
    Borrowed,
    /// Negative entries for a field of unsigned integers.
    NegativeEntries {
        /// Shape or strides.
        kind: DimsKind,
        /// The entries.
        entries: Vec<i64>,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyDims { ndim, max } => write!(
                f,
                "{ndim} dimensions are more than the {max} this crate exports"
            ),
            Self::NegativeExtent { shape, dim, extent } => write!(
                f,
                "shape {} has a negative extent {extent} in dimension {dim}",
                list(shape)
            ),
            Self::StridesRank { strides, shape } => write!(
                f,
                "strides {} have {}, but shape {} has {}",
                list(strides),
                counted(strides.len(), "entry", "entries"),
                list(shape),
                dimensions(shape.len())
            ),
            Self::PastEnd {
                layout,
                needed: u64::MAX,
                available,
            } => write!(
                f,
                "{layout} needs 2^64 - 1 bytes or more, but the buffer holds {available} bytes"
            ),
            Self::PastEnd {
                layout,
                needed,
                available,
            } => write!(
                f,
                "{layout} needs {needed} bytes, but the buffer holds {available} bytes"
            ),
            Self::BeforeStart { layout, bytes } => write!(
                f,
                "{layout} reaches {bytes} bytes before the start of the buffer"
            ),
            Self::UnknownLength => {
                f.write_str("a buffer of unknown length needs an explicit shape")
            }
            Self::PartialElement { available, dtype } => write!(
                f,
                "a buffer of {available} bytes is not a whole number of {dtype} elements; \
                 give an explicit shape"
            ),
            Self::StridedSubByte { dtype } => write!(
                f,
                "{dtype} packs several elements per byte: it cannot be exported with strides"
            ),
            Self::PaddedSubByte { dtype } => write!(
                f,
                "the {dtype} elements are padded to a byte each, \
                 but this crate exports sub-byte types packed only"
            ),
            Self::NotContiguous { shape, strides } => write!(
                f,
                "expected a contiguous (row-major) tensor, got shape {} with strides {}",
                list(shape),
                list(strides)
            ),
            Self::Shared => f.write_str(
                "another imported tensor shares this memory (the same array passed twice, \
                 or imported meanwhile by another thread?): \
                 a mutable view needs it alone, and excludes views through other imports \
                 until its tensor is dropped",
            ),
            Self::Overlapping { shape, strides } => write!(
                f,
                "a mutable view needs distinct elements, but shape {} with strides {} reaches some twice",
                list(shape),
                list(strides)
            ),
            Self::Misaligned {
                address,
                dtype,
                align,
            } => write!(
                f,
                "the data at {address:#x} is not aligned for {dtype} ({align} bytes)"
            ),
            Self::Borrowed => f.write_str(
                "a borrowed view (PyTensor::with_borrowed) holds no reference to the memory, \
                 so its elements cannot be read safely: import the tensor to read them",
            ),
            Self::NegativeEntries { kind, entries } => write!(
                f,
                "the {kind} {} {} negative entries, which a usize field cannot hold",
                list(entries),
                if matches!(kind, DimsKind::Strides) {
                    "have"
                } else {
                    "has"
                }
            ),
        }
    }
}

/// A size or address computation that does not fit.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeOverflow {
    /// An extent that does not fit an `int64`.
    Extent {
        /// The dimension.
        dim: usize,
    },
    /// Strides that do not fit `int64`.
    Strides {
        /// The strides, saturated to `i64`.
        strides: Vec<i64>,
    },
    /// More elements than fit in memory.
    Elements {
        /// The shape.
        shape: Vec<i64>,
    },
    /// A layout that spans more bytes than fit in memory.
    Span {
        /// The description.
        layout: Box<LayoutDesc>,
    },
    /// More bytes of storage than fit in memory.
    Storage {
        /// Element count.
        numel: usize,
        /// Element type.
        dtype: DataType,
    },
    /// A buffer's byte count that does not fit an element count.
    Bytes {
        /// The byte count.
        bytes: usize,
    },
    /// A producer's layout that reaches outside the address space.
    AddressSpace {
        /// The shape.
        shape: Vec<i64>,
        /// The strides.
        strides: Vec<i64>,
        /// The producer's `byte_offset`.
        byte_offset: u64,
    },
    /// A tensor this crate was asked to allocate that does not fit in memory.
    Allocation {
        /// The shape.
        shape: Vec<i64>,
        /// Element type.
        dtype: DataType,
    },
}

impl fmt::Display for SizeOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Extent { dim } => write!(f, "extent of dimension {dim} does not fit an int64"),
            Self::Strides { strides } => write!(f, "strides {} do not fit int64", list(strides)),
            Self::Elements { shape } => write!(
                f,
                "shape {} has more elements than fit in memory",
                list(shape)
            ),
            Self::Span { layout } => write!(f, "{layout} spans more bytes than fit in memory"),
            Self::Storage { numel, dtype } => write!(f, "{numel} elements of {dtype}"),
            Self::Bytes { bytes } => write!(f, "{bytes} bytes"),
            Self::AddressSpace {
                shape,
                strides,
                byte_offset,
            } => write!(
                f,
                "shape {} with strides {} and byte_offset {byte_offset} reaches outside the address space",
                list(shape),
                list(strides)
            ),
            Self::Allocation { shape, dtype } => write!(f, "shape {} of {dtype}", list(shape)),
        }
    }
}

/// A dtype the DLPack 1.3 header does not allow, or this crate does not handle.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DtypeError {
    /// A type code outside the header.
    UnknownCode {
        /// The dtype.
        dtype: DataType,
    },
    /// A code whose width the header fixes, with another width (float8 is 8
    /// bits, float6 6, float4 4, bool 8); or 0 bits.
    Bits {
        /// The dtype.
        dtype: DataType,
        /// The width the code requires; `None` when any non-zero width is allowed.
        required: Option<u8>,
    },
    /// Lanes other than 1 (vector types).
    Lanes {
        /// The dtype.
        dtype: DataType,
    },
}

impl fmt::Display for DtypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownCode { dtype } => write!(
                f,
                "unknown DLPack dtype code {} (bits {}): this crate knows the codes of DLPack 1.3 and bcomplex (18)",
                dtype.code.code(),
                dtype.bits
            ),
            Self::Bits {
                dtype,
                required: None,
            } => write!(f, "dtype {dtype} has 0 bits per element"),
            Self::Bits {
                dtype,
                required: Some(bits),
            } => write!(
                f,
                "dtype {} must have {bits} bits per element, got {}",
                DataType::new(dtype.code, *bits, dtype.lanes),
                dtype.bits
            ),
            Self::Lanes { dtype } => write!(
                f,
                "dtype {dtype} has {} lanes: vector dtypes (lanes != 1) are not supported, but for float4_e2m1fn_x2",
                dtype.lanes
            ),
        }
    }
}

/// A capsule or a producer's struct that is malformed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapsuleError {
    /// A capsule of another name.
    Name {
        /// The name found; `None` for an unnamed capsule.
        found: Option<String>,
    },
    /// A capsule whose pointer is NULL.
    NullPointer,
    /// The capsule could not be renamed `used_…`.
    Rename,
    /// A rank outside `0..=MAX_NDIM`.
    Ndim {
        /// The producer's `ndim`.
        ndim: i32,
        /// [`MAX_NDIM`](crate::MAX_NDIM).
        max: usize,
    },
    /// `ndim > 0` with a NULL shape.
    NullShape {
        /// The rank.
        ndim: usize,
        /// Whether the struct is an allocator's prototype rather than a tensor.
        prototype: bool,
    },
    /// Elements with a NULL data pointer.
    NullData {
        /// The shape.
        shape: Vec<i64>,
    },
    /// A field that breaks the layout rules.
    Layout(LayoutError),
    /// A dtype the header does not allow.
    Dtype(DtypeError),
    /// `__dlpack_device__` returned something else than a `(device_type, device_id)` pair.
    DeviceTuple {
        /// The producer's type name.
        type_name: String,
        /// `repr` of what it returned.
        found: String,
    },
}

impl fmt::Display for CapsuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name { found: None } => f.write_str(
                "expected a capsule named \"dltensor\" or \"dltensor_versioned\", got an unnamed capsule",
            ),
            Self::Name { found: Some(name) } => write!(
                f,
                "expected a capsule named \"dltensor\" or \"dltensor_versioned\", got {name:?}"
            ),
            Self::NullPointer => f.write_str("the DLPack capsule holds a NULL pointer"),
            Self::Rename => f.write_str("could not rename the DLPack capsule to mark it consumed"),
            Self::Ndim { ndim, max } => write!(f, "ndim {ndim} is outside 0..={max}"),
            Self::NullShape {
                ndim,
                prototype: false,
            } => write!(f, "the tensor has {} but a NULL shape", dimensions(*ndim)),
            Self::NullShape {
                ndim,
                prototype: true,
            } => write!(f, "a prototype of {} with a NULL shape", dimensions(*ndim)),
            Self::NullData { shape } => write!(
                f,
                "the tensor has shape {} but a NULL data pointer",
                list(shape)
            ),
            Self::Layout(err) => err.fmt(f),
            Self::Dtype(err) => err.fmt(f),
            Self::DeviceTuple { type_name, found } => write!(
                f,
                "{type_name}.__dlpack_device__() returned {found}, expected a (device_type, device_id) tuple"
            ),
        }
    }
}

/// A tensor that cannot be exported (or imported) as the other side asked.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportError {
    /// A read-only tensor asked for as a legacy capsule, which cannot say so.
    ReadOnlyLegacy,
    /// A device the tensor is not on, and cannot be exported to in place.
    CrossDevice {
        /// The tensor's device.
        source: Device,
        /// The device asked for.
        target: Device,
    },
    /// `copy=True` for memory the host cannot read.
    CopyNeedsHost {
        /// The tensor's device.
        source: Device,
    },
    /// `copy=True` to a device other than the CPU.
    CopyTarget {
        /// The device asked for.
        target: Device,
    },
    /// `copy=True` for a buffer of unknown length.
    CopyUnknownLength,
    /// A stream the specification does not allow for the device.
    Stream {
        /// The stream asked for (`None` for Python's `None`).
        stream: Option<i64>,
        /// The tensor's device.
        device: Device,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The value's description failed when an export described it again.
    Description(Box<super::DLPackError>),
    /// A torch tensor whose lazy conjugate or negative bit is set.
    LazyBit {
        /// `"conjugate"` or `"negative"`.
        bit: &'static str,
        /// The torch method that resolves it.
        resolve: &'static str,
    },
    /// An imported tensor of a device whose `data` is a buffer handle
    /// (Metal, OpenCL, Vulkan, WebGPU), re-exported when its first element
    /// is not at the handle itself: the offset would have to be folded into
    /// the handle, which is no address.
    HandleOffset {
        /// The tensor's device.
        device: Device,
        /// Bytes from the handle's start to the lowest element the tensor reaches.
        offset: i128,
    },
    /// A torch tensor that requires gradient (torch's `__dlpack__` refuses
    /// it; its C exchange API does not).
    RequiresGrad,
    /// A NULL managed tensor handed to the exchange API.
    NullTensor,
    /// A read-only tensor asked for as a borrowed `DLTensor`, which cannot say so.
    ReadOnlyBorrowed,
    /// A tensor this crate was asked to allocate on a device other than the CPU.
    AllocationDevice {
        /// The device asked for.
        device: Device,
    },
    /// A tensor this crate was asked to allocate from a prototype it refuses.
    Allocation {
        /// The prototype's dtype.
        dtype: DataType,
        /// What is wrong with the prototype.
        source: Box<super::DLPackError>,
    },
    /// A producer's exchange-API function failed without setting an exception.
    NoErrorSet,
    /// A NULL out-parameter (or prototype) passed to the exchange API.
    NullOut {
        /// The parameter's name.
        name: &'static str,
    },
    /// A framework-native result asked of memory that framework cannot hold
    /// (a `numpy.ndarray` of device memory).
    FrameworkDevice {
        /// The framework's array type, as Python names it.
        array: &'static str,
        /// The value's device.
        device: Device,
    },
    /// A framework cannot hold a tensor of this dtype, device or layout
    /// (its own reason, first line only, when it gave one).
    FrameworkRefused {
        /// The framework's array type, as Python names it.
        array: String,
        /// The value's dtype.
        dtype: DataType,
        /// The value's device, where there is a value.
        device: Option<Device>,
        /// What the framework said, or what it lacks.
        reason: String,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReadOnlyLegacy => f.write_str(
                "the tensor is read-only and the legacy (unversioned) DLPack capsule cannot say so; \
                 call __dlpack__ with max_version=(1, 0) or later, or copy=True (a consumer that \
                 asks for legacy capsules only, as JAX up to 0.12 and TensorFlow do, can take a \
                 copy through NumPy: jnp.asarray(np.from_dlpack(x)))",
            ),
            Self::CrossDevice { source, target } => write!(
                f,
                "cannot export a tensor on {source} to {target}: \
                 pyo3-dlpack copies across devices only from CUDA device memory to \
                 the CPU, and not with copy=False"
            ),
            Self::CopyNeedsHost { source } => write!(
                f,
                "copy=True copies to the host only, but the tensor is on {source} \
                 and dl_device does not ask for the CPU; pass dl_device=(1, 0) for \
                 a host copy of CUDA memory, or export without copy and copy it in \
                 the consumer"
            ),
            Self::CopyTarget { target } => write!(
                f,
                "copy=True makes a cpu:0 copy, but dl_device asks for {target}"
            ),
            Self::CopyUnknownLength => f.write_str(
                "copy=True cannot copy this tensor: the length of its memory is unknown \
                 (raw memory exported without one); import it without copy=True",
            ),
            Self::Stream {
                stream,
                device,
                reason,
            } => {
                f.write_str("stream=")?;
                match stream {
                    Some(stream) => write!(f, "{stream}")?,
                    None => f.write_str("None")?,
                }
                write!(f, " is not valid for a tensor on {device}: {reason}")
            }
            Self::Description(source) => source.fmt(f),
            Self::LazyBit { bit, resolve } => write!(
                f,
                "the torch tensor has its lazy {bit} bit set, so its memory does not hold its values: \
                 call .{resolve}() before passing it"
            ),
            // torch's own message (`Tensor.__dlpack__`), advice included.
            Self::FrameworkDevice { array, device } => write!(
                f,
                "a {array} holds host memory only, but the value is on {device}; \
                 return it as a DLPackTensor or in a framework for that device"
            ),
            Self::HandleOffset { device, offset } => write!(
                f,
                "cannot re-export this {device} tensor: its data is a buffer handle, not an \
                 address, and its elements start {offset} bytes from it, which only \
                 byte_offset can say (this crate re-exports such tensors at offset 0 only)"
            ),
            Self::FrameworkRefused {
                array,
                dtype,
                device,
                reason,
            } => match device {
                Some(device) => write!(
                    f,
                    "a {array} cannot hold this {dtype} tensor on {device}: {reason}"
                ),
                None => write!(
                    f,
                    "a {array} cannot hold {} tensor: {reason}",
                    super::WithArticle(dtype)
                ),
            },
            Self::RequiresGrad => {
                f.write_str("Can't export tensors that require gradient, use tensor.detach()")
            }
            Self::NullTensor => f.write_str("a NULL managed tensor"),
            Self::ReadOnlyBorrowed => f.write_str(
                "the tensor is read-only, which a borrowed DLTensor cannot say; \
                 use managed_tensor_from_py_object_no_sync",
            ),
            Self::AllocationDevice { device } => {
                write!(f, "DLPackTensor allocates CPU tensors only, not {device}")
            }
            Self::Allocation { dtype, source } => {
                write!(f, "cannot allocate a tensor of {dtype}: {source}")
            }
            Self::NoErrorSet => {
                f.write_str("the producer's exchange API failed without setting an error")
            }
            Self::NullOut { name } => write!(
                f,
                "the DLPack exchange API was called with a NULL {name} pointer"
            ),
        }
    }
}

/// An argument value outside what the protocol allows.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentError {
    /// Not an integer (or `None`).
    NotInteger {
        /// The argument's name.
        name: &'static str,
        /// `repr` and type of the value.
        found: String,
    },
    /// Not a pair of integers.
    NotPair {
        /// The argument's name.
        name: &'static str,
        /// The expected form, such as `(major, minor)`.
        form: &'static str,
        /// `repr` and type of the value.
        found: String,
    },
    /// An integer outside the range of the field it is for (`stream` an
    /// `int64`, the `max_version` numbers `uint32`, device codes `int32`).
    OutOfRange {
        /// What the integer is, such as `stream` or `the major of max_version`.
        what: String,
        /// The smallest value the field holds.
        min: i64,
        /// The largest value the field holds.
        max: i64,
        /// The integer given, in decimal.
        found: String,
    },
    /// Not `True`, `False` or `None`.
    NotBool {
        /// The argument's name.
        name: &'static str,
        /// `repr` and type of the value.
        found: String,
    },
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInteger { name, found } => {
                write!(f, "{name} must be an integer or None, got {found}")
            }
            Self::NotPair { name, form, found } => {
                write!(f, "{name} must be a {form} tuple of integers, got {found}")
            }
            Self::OutOfRange {
                what,
                min,
                max,
                found,
            } => write!(
                f,
                "{what} must be an integer in range [{min}, {max}], got {found}"
            ),
            Self::NotBool { name, found } => {
                write!(f, "{name} must be True, False or None, got {found}")
            }
        }
    }
}

/// A failure of an adapter to another crate's types (features `safetensors`,
/// `nalgebra`, `image`, `candle`): a layout the other crate's type cannot express, or
/// a file that is not what it claims.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterError {
    /// The tensor's layout is one the target type cannot express.
    Inexpressible {
        /// The type asked for, such as `nalgebra::DMatrixView<f32>`.
        target: String,
        /// What it needs, such as `strides of 0 or more`.
        expected: String,
        /// The tensor's shape.
        shape: Vec<i64>,
        /// Its strides.
        strides: Vec<i64>,
    },
    /// The bytes are not a valid safetensors file.
    Safetensors {
        /// What is wrong, in the safetensors crate's words.
        reason: String,
    },
    /// No tensor of that name in the safetensors file.
    TensorNotFound {
        /// The name asked for.
        name: String,
        /// The names the file holds, sorted.
        available: Vec<String>,
    },
    /// A dtype of the other crate with no DLPack counterpart.
    UnsupportedDtype {
        /// The other crate's name for it, such as `safetensors F8_E4M3`.
        dtype: String,
    },
    /// A dtype the other crate's type cannot hold.
    DtypeNotHeld {
        /// The type asked for, such as `candle_core::Tensor`.
        target: String,
        /// The tensor's dtype.
        found: DataType,
    },
    /// A bool tensor with a byte other than 0 or 1, which no consumer may read as a bool.
    InvalidBool {
        /// The tensor's name.
        name: String,
        /// The offset of the first such byte in the tensor.
        offset: usize,
        /// Its value.
        byte: u8,
    },
    /// A file that could not be opened or read.
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl fmt::Display for AdapterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inexpressible {
                target,
                expected,
                shape,
                strides,
            } => write!(
                f,
                "{target} cannot hold shape {} with strides {}: expected {expected}",
                list(shape),
                list(strides)
            ),
            Self::Safetensors { reason } => write!(
                f,
                "expected a safetensors file, got bytes that are not one: {reason}"
            ),
            Self::TensorNotFound { name, available } => {
                write!(
                    f,
                    "expected a tensor named {name:?} in the safetensors file, "
                )?;
                const SHOWN: usize = 8;
                match available.len() {
                    0 => f.write_str("which holds none"),
                    n => {
                        f.write_str("which holds ")?;
                        for (i, name) in available.iter().take(SHOWN).enumerate() {
                            if i > 0 {
                                f.write_str(", ")?;
                            }
                            write!(f, "{name:?}")?;
                        }
                        if n > SHOWN {
                            write!(f, " and {} more", n - SHOWN)?;
                        }
                        Ok(())
                    }
                }
            }
            Self::UnsupportedDtype { dtype } => {
                write!(f, "expected a dtype DLPack can describe, got {dtype}")
            }
            Self::DtypeNotHeld { target, found } => {
                write!(f, "expected a dtype {target} can hold, got {found}")
            }
            Self::InvalidBool { name, offset, byte } => write!(
                f,
                "expected bytes 0 or 1 in the bool tensor {name:?}, got {byte} at byte {offset}"
            ),
            Self::Io { path, message } => write!(f, "cannot read {path:?}: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tensor_names_at_most_eight_of_the_files_tensors() {
        let missing = |count: usize| AdapterError::TensorNotFound {
            name: "x".into(),
            available: (b'a'..)
                .take(count)
                .map(|c| (c as char).to_string())
                .collect(),
        };
        let start = "expected a tensor named \"x\" in the safetensors file, which holds";
        assert_eq!(missing(0).to_string(), format!("{start} none"));
        assert_eq!(missing(1).to_string(), format!("{start} \"a\""));
        assert_eq!(
            missing(8).to_string(),
            format!("{start} \"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\"")
        );
        assert_eq!(
            missing(11).to_string(),
            format!("{start} \"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\" and 3 more")
        );
    }
}
