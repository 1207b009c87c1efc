//! `TensorData`: memory that can back an exported tensor.

use std::ffi::c_void;
use std::sync::Arc;

use crate::{DataType, Device, Element, Writability};

/// A buffer whose address does not change when the value moves and stays
/// valid until the value is dropped: the memory behind an exported tensor.
///
/// Implemented for `Vec<T>`, `Box<[T]>`, `Arc<[T]>` and `Arc<Vec<T>>`
/// (exported read-only: other `Arc`s may be reading it),
/// [`AlignedBuffer<T>`](crate::AlignedBuffer),
/// [`RawBuffer`](crate::RawBuffer) (any pointer on any device) and, with the
/// `ndarray` feature, `ndarray::Array<T, D>`; with the `memmap2` feature,
/// `memmap2::Mmap` (bytes, read-only); with the `bytes` feature,
/// `bytes::Bytes` (read-only).
///
/// Memory that is not owned by the value (`Rc<…>`, which cannot cross
/// threads; `&[T]`, which a consumer may outlive) is none of these: own it
/// (`Vec<T>`, `Arc<[T]>`), or vouch for a pointer with
/// [`RawBuffer::new`](crate::RawBuffer::new) next to the field that owns it.
///
/// Exported memory is **shared**: while a consumer (a NumPy array, a torch
/// tensor) holds it, Python code may write to it unless it was exported
/// read-only. Rust code that keeps reading the value must expect that, as it
/// would with a NumPy array.
///
/// # Safety
///
/// An implementation promises, for as long as the value lives and whether or
/// not it is moved:
/// - [`data_ptr`](Self::data_ptr) returns the same address every time, and
///   [`byte_len`](Self::byte_len) the same length (exports keep a checked
///   description of the value);
/// - when [`byte_len`](Self::byte_len) is `Some(n)`, the `n` bytes from that
///   address are allocated memory on [`device`](Self::device) (readable, and
///   writable when [`writability`](Self::writability) is
///   [`Writable`](Writability::Writable), which it is only when
///   [`is_read_only`](Self::is_read_only) is false), and no
///   other Rust code holds a reference to them that a consumer's writes would
///   invalidate;
/// - when [`dtype`](Self::dtype) is `Some`, the memory holds elements of that
///   type;
/// - [`stream`](Self::stream) is `None`, 1, 2 or the handle of a live CUDA
///   stream of the memory's device (the CUDA driver is handed it);
/// - memory holding Rust `bool`s has `STATIC_DTYPE = Some(DataType::BOOL)`
///   (as `Vec<bool>`'s impl has), which keeps it read-only in exports
///   unless vouched ([`TensorInfoBuilder::writable_bool`](crate::TensorInfoBuilder::writable_bool)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not tensor memory: it does not implement `TensorData`",
    label = "a #[dlpack(data)] field must hold the tensor's memory",
    note = "TensorData is implemented for Vec<T>, Box<[T]>, Arc<[T]>, Arc<Vec<T>>, AlignedBuffer<T> and RawBuffer, with T an Element, and with pyo3-dlpack's features for ndarray::Array<T, D> (`ndarray`), memmap2::Mmap (`memmap2`) and bytes::Bytes (`bytes`)",
    note = "write `Arc<Vec<T>>` or `Arc<[T]>` for `Rc<Vec<T>>` or `Rc<[T]>` (an export is freed on whichever thread lets go of it last), and own borrowed memory (`Vec<T>` for `&[T]`, or `Arc<[T]>` to share it)"
)]
pub unsafe trait TensorData {
    /// The element type every value of this type holds, when the type says
    /// (`Vec<f32>` → `float32`); `None` for raw memory. Lets the derive check
    /// `#[dlpack(dtype = …)]` at compile time.
    #[doc(hidden)]
    const STATIC_DTYPE: Option<DataType> = None;

    /// Address of the first byte of the buffer (dangling but non-null when empty).
    fn data_ptr(&self) -> *mut c_void;

    /// Length of the buffer in bytes, when known. Exports are checked against it.
    /// Memory of unknown length (`None`) is exported as described, and never
    /// read by this crate: `copy=True`, pickling, `copy.copy` and the buffer
    /// protocol refuse it (`BufferError`).
    fn byte_len(&self) -> Option<usize>;

    /// Device of the memory; `cpu:0` unless overridden.
    fn device(&self) -> Device {
        Device::cpu()
    }

    /// Element type of typed buffers (`Vec<f32>` → `float32`); `None` for raw bytes.
    fn dtype(&self) -> Option<DataType> {
        None
    }

    /// Whether consumers must not write (for example, memory other `Arc`s share).
    fn is_read_only(&self) -> bool {
        false
    }

    /// The CUDA stream on which pending work may still write this memory
    /// (a `cudaStream_t` as an integer; 1 for CUDA's legacy default stream),
    /// or `None` (the default) when no pending work writes it. An export to
    /// a consumer on another stream makes that stream wait for this one (an
    /// event, through the CUDA driver loaded at run time).
    fn stream(&self) -> Option<usize> {
        None
    }

    /// Whether consumers may write, when the answer may be unknown (memory
    /// imported from a legacy capsule, see [`Writability`]): an unknown
    /// writability is exported as a legacy capsule when asked for one, and
    /// as `READ_ONLY` otherwise. By default [`ReadOnly`](Writability::ReadOnly)
    /// when [`is_read_only`](Self::is_read_only), else
    /// [`Writable`](Writability::Writable); an override may say `Writable`
    /// only when `is_read_only` is false (a safety promise, see the trait).
    fn writability(&self) -> Writability {
        if self.is_read_only() {
            Writability::ReadOnly
        } else {
            Writability::Writable
        }
    }

    /// The shape, strides and first element of memory that knows its own
    /// layout (an `ndarray` array, a `nalgebra` matrix); `None` (the
    /// default) for a flat buffer. A description of such memory has this
    /// layout: a shape, strides or byte offset given besides must agree
    /// ([`TensorInfoBuilder::build`](crate::TensorInfoBuilder::build)
    /// refuses others), so the memory is never described in another order.
    #[doc(hidden)]
    fn own_layout(&self) -> Option<OwnLayout<'_>> {
        None
    }
}

/// The layout memory brings itself ([`TensorData::own_layout`]): checked
/// against the buffer like any description.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct OwnLayout<'a> {
    /// Extents.
    pub shape: crate::Dims<'a>,
    /// Strides in elements.
    pub strides: crate::Dims<'a>,
    /// Bytes from [`TensorData::data_ptr`] to the element at `[0, 0, …]`.
    pub byte_offset: usize,
}

// SAFETY: a Vec's heap buffer does not move when the Vec moves and lives until
// the Vec is dropped or grown; exported values are never grown (the exporter
// holds them behind a shared reference). `as_ptr` returns the Vec's own raw
// pointer without creating a reference to the elements, so writes through it
// are allowed. `len * size_of::<T>()` bytes are initialized elements of `T`.
unsafe impl<T: Element> TensorData for Vec<T> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len() * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
}

// SAFETY: a boxed slice's heap buffer does not move when the box moves and lives
// until the box is dropped; it holds `len` initialized `T`s.
unsafe impl<T: Element> TensorData for Box<[T]> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len() * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
}

// SAFETY: an Arc's allocation does not move and lives while this Arc does. It
// is reported read-only, because other clones of the Arc may read it through
// shared references that a consumer's write would violate.
unsafe impl<T: Element> TensorData for Arc<[T]> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len() * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

// SAFETY: as for `Arc<[T]>`: the `Vec`'s heap buffer does not move and
// lives while this Arc does (the `Vec` cannot be grown through a shared
// `Arc`); reported read-only, since other clones may read it.
unsafe impl<T: Element> TensorData for Arc<Vec<T>> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len() * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

/// `TensorData` for a handle to immutable host bytes, exported as `uint8`,
/// read-only. Each use argues its own safety above it.
macro_rules! read_only_host_bytes {
    ($(#[$attr:meta])* $ty:ty) => {
        $(#[$attr])*
        // SAFETY: the argument above each use of this macro: the handle's
        // `len()` bytes stay at `as_ptr()` until it is dropped, and they are
        // never written (reported read-only).
        unsafe impl TensorData for $ty {
            const STATIC_DTYPE: Option<DataType> = Some(DataType::U8);
            fn data_ptr(&self) -> *mut c_void {
                self.as_ptr().cast_mut().cast()
            }
            fn byte_len(&self) -> Option<usize> {
                Some(self.len())
            }
            fn dtype(&self) -> Option<DataType> {
                Some(DataType::U8)
            }
            fn is_read_only(&self) -> bool {
                true
            }
        }
    };
}

// SAFETY: a read-only mapping stays at its address until the `Mmap` is
// dropped; its `len` bytes are mapped. Creating an `Mmap` is `unsafe`: its
// creator promised that the file is not modified while it is mapped (the
// one promise about the memory this crate cannot check). It is exported
// read-only: the mapping cannot be written (a write would fault), and Rust
// code may hold `&[u8]`s into it.
read_only_host_bytes!(
    #[cfg(feature = "memmap2")]
    memmap2::Mmap
);

// SAFETY: a `Bytes` points at memory it keeps alive (a shared, reference
// counted or static buffer) until it is dropped, and moving the handle moves
// no bytes: its `len` bytes stay at the same address. The memory is
// immutable and may be shared with other `Bytes` clones, so it is exported
// read-only.
read_only_host_bytes!(
    #[cfg(feature = "bytes")]
    bytes::Bytes
);

/// A pointer to memory this crate does not own, on any device: a CUDA
/// allocation, a pinned host buffer, memory owned by another library.
///
/// The `unsafe` sits in the constructor, where the promise about the pointer
/// is made; everything that exports a `RawBuffer` afterwards is safe code.
/// Keep whatever owns the memory alive next to the `RawBuffer` (another field
/// of the same struct): it is dropped together with the exported value.
///
/// ```
/// use pyo3_dlpack::{DataType, Device, RawBuffer};
///
/// let memory = vec![0.0f32; 6];
/// // SAFETY: `memory` outlives `buffer` (both are dropped at the end of this
/// // example) and nothing else reads or writes it meanwhile.
/// let buffer = unsafe {
///     RawBuffer::new(memory.as_ptr().cast_mut().cast(), 24, Device::cpu())
/// }
/// .with_dtype(DataType::F32);
/// assert_eq!(buffer.len(), 24);
/// ```
#[derive(Debug, Clone)]
pub struct RawBuffer {
    ptr: *mut c_void,
    byte_len: usize,
    device: Device,
    dtype: Option<DataType>,
    read_only: bool,
    stream: Option<usize>,
}

// SAFETY: `RawBuffer::new`'s contract makes the memory usable from any thread
// for as long as the buffer lives; the struct itself is plain data.
unsafe impl Send for RawBuffer {}
// SAFETY: as above; `&RawBuffer` only reads the plain fields.
unsafe impl Sync for RawBuffer {}

impl RawBuffer {
    /// Wraps `byte_len` bytes at `ptr` on `device`.
    ///
    /// # Safety
    ///
    /// Until the `RawBuffer` (and every clone of it) is dropped, the `byte_len`
    /// bytes at `ptr` must stay allocated on `device`, usable from any thread,
    /// and writable unless [`read_only`](Self::read_only) is called; nothing
    /// else may hold a Rust reference to them that a consumer's writes would
    /// violate. `ptr` must not be null unless `byte_len` is 0.
    pub unsafe fn new(ptr: *mut c_void, byte_len: usize, device: Device) -> Self {
        Self {
            ptr,
            byte_len,
            device,
            dtype: None,
            read_only: false,
            stream: None,
        }
    }

    /// Names the CUDA stream on which pending work writes the memory (a
    /// `cudaStream_t` as an integer; 1 for the legacy default stream):
    /// consumers on other streams are made to wait for it when exported
    /// (see [`TensorData::stream`]).
    ///
    /// # Safety
    ///
    /// `stream` is 1 or 2 (CUDA's legacy and per-thread default streams) or
    /// the handle of a live `CUstream` of the memory's device that stays
    /// alive while the buffer lives: exports hand it to the CUDA driver,
    /// which cannot tell a made-up or destroyed handle and crashes on one.
    pub unsafe fn with_stream(mut self, stream: usize) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Declares the element type of the memory.
    pub fn with_dtype(mut self, dtype: DataType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// Exports the memory read-only.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.byte_len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.byte_len == 0
    }

    /// The device of the memory.
    pub fn device(&self) -> Device {
        self.device
    }
}

// SAFETY: `RawBuffer::new`'s caller promised exactly what `TensorData` requires.
unsafe impl TensorData for RawBuffer {
    fn data_ptr(&self) -> *mut c_void {
        self.ptr
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.byte_len)
    }
    fn device(&self) -> Device {
        self.device
    }
    fn dtype(&self) -> Option<DataType> {
        self.dtype
    }
    fn is_read_only(&self) -> bool {
        self.read_only
    }
    fn stream(&self) -> Option<usize> {
        self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_buffers_report_pointer_length_and_dtype() {
        let v = vec![1.0f64, 2.0, 3.0];
        assert_eq!(v.data_ptr(), v.as_ptr().cast_mut().cast());
        assert_eq!(v.byte_len(), Some(24));
        assert_eq!(TensorData::dtype(&v), Some(DataType::F64));
        assert!(!v.is_read_only());

        let b: Box<[i16]> = vec![1, 2].into_boxed_slice();
        assert_eq!(b.byte_len(), Some(4));
        assert_eq!(TensorData::dtype(&b), Some(DataType::I16));

        let a: Arc<[u8]> = Arc::from(&b"abc"[..]);
        assert_eq!(a.byte_len(), Some(3));
        assert!(a.is_read_only(), "other Arcs may be reading the memory");

        let shared = Arc::new(vec![1.0f32, 2.0]);
        let info = crate::TensorInfo::builder(&shared).build().unwrap();
        assert_eq!((info.shape(), info.dtype()), (&[2i64][..], DataType::F32));
        assert_eq!(info.data_ptr(), shared.as_ptr().cast_mut().cast());
        assert!(info.is_read_only(), "other Arcs may be reading the memory");
    }

    #[cfg(feature = "memmap2")]
    #[test]
    fn a_mapped_file_is_read_only_bytes_of_any_dtype() {
        let path = std::env::temp_dir().join(format!("pyo3-dlpack-mmap-{}", std::process::id()));
        std::fs::write(&path, 1.5f32.to_le_bytes().repeat(4)).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is this test's own, not modified while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        std::fs::remove_file(&path).unwrap();
        let info = crate::TensorInfo::builder(&map)
            .dtype(DataType::F32)
            .build()
            .unwrap();
        assert_eq!((info.shape(), info.is_read_only()), (&[4i64][..], true));
        assert_eq!(info.data_ptr(), map.as_ptr().cast_mut().cast());
    }

    #[cfg(feature = "bytes")]
    #[test]
    fn shared_bytes_are_read_only_bytes_of_any_dtype() {
        let bytes = bytes::Bytes::from(2.5f32.to_le_bytes().repeat(3));
        let clone = bytes.clone();
        let info = crate::TensorInfo::builder(&bytes)
            .dtype(DataType::F32)
            .build()
            .unwrap();
        assert_eq!((info.shape(), info.is_read_only()), (&[3i64][..], true));
        assert_eq!(info.data_ptr(), clone.as_ptr().cast_mut().cast());
        let plain = crate::TensorInfo::builder(&bytes).build().unwrap();
        assert_eq!((plain.shape(), plain.dtype()), (&[12i64][..], DataType::U8));
    }

    #[test]
    fn the_pointer_survives_a_move() {
        let v = vec![7u32; 100];
        let before = v.data_ptr();
        let moved = Box::new(v);
        assert_eq!(moved.data_ptr(), before);
    }

    #[test]
    fn raw_buffer_carries_what_the_caller_declared() {
        let memory = [0u8; 16];
        // SAFETY: `memory` outlives `raw` and is not otherwise used.
        let raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), 16, Device::cuda(1)) }
            .with_dtype(DataType::F32)
            .read_only();
        assert_eq!(raw.byte_len(), Some(16));
        assert_eq!(TensorData::device(&raw), Device::cuda(1));
        assert_eq!(TensorData::dtype(&raw), Some(DataType::F32));
        assert!(raw.is_read_only());
        assert!(!raw.is_empty());
    }
}
