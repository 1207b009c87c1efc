//! safetensors files as tensors (feature `safetensors`): each tensor of a
//! file exported read-only with no copy, the file's bytes kept alive by
//! every tensor taken from it.

use std::ffi::c_void;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use ::safetensors::{Dtype, SafeTensors, tensor::Metadata};

use crate::error::AdapterError;
use crate::export::{AlignedBuffer, IntoDLPack, TensorData, TensorInfo};
use crate::{DLPackError, DataType};

/// The DLPack dtype of a safetensors dtype.
///
/// The float8 names follow the safetensors Python package, which writes
/// `torch.float8_e4m3fn` as `F8_E4M3`, `torch.float8_e5m2` as `F8_E5M2` and
/// `torch.float8_e8m0fnu` as `F8_E8M0`; `F4` is MXFP4's `float4_e2m1fn`
/// and the `F6_*` types MXFP6's, packed (two `F4` elements per byte), as
/// DLPack packs sub-byte types.
///
/// ```
/// use pyo3_dlpack::{DataType, safetensors::Dtype, safetensors_dtype};
///
/// assert_eq!(safetensors_dtype(Dtype::BF16).unwrap(), DataType::BF16);
/// assert_eq!(safetensors_dtype(Dtype::F8_E4M3).unwrap(), DataType::F8_E4M3FN);
/// ```
pub fn safetensors_dtype(dtype: Dtype) -> Result<DataType, DLPackError> {
    Ok(match dtype {
        Dtype::BOOL => DataType::BOOL,
        Dtype::U8 => DataType::U8,
        Dtype::I8 => DataType::I8,
        Dtype::U16 => DataType::U16,
        Dtype::I16 => DataType::I16,
        Dtype::U32 => DataType::U32,
        Dtype::I32 => DataType::I32,
        Dtype::U64 => DataType::U64,
        Dtype::I64 => DataType::I64,
        Dtype::F16 => DataType::F16,
        Dtype::BF16 => DataType::BF16,
        Dtype::F32 => DataType::F32,
        Dtype::F64 => DataType::F64,
        Dtype::C64 => DataType::C64,
        Dtype::F8_E5M2 => DataType::F8_E5M2,
        Dtype::F8_E4M3 => DataType::F8_E4M3FN,
        Dtype::F8_E8M0 => DataType::F8_E8M0FNU,
        Dtype::F8_E4M3FNUZ => DataType::F8_E4M3FNUZ,
        Dtype::F8_E5M2FNUZ => DataType::F8_E5M2FNUZ,
        Dtype::F4 => DataType::F4_E2M1FN,
        Dtype::F6_E2M3 => DataType::F6_E2M3FN,
        Dtype::F6_E3M2 => DataType::F6_E3M2FN,
        // `Dtype` is non-exhaustive: a type a later safetensors adds.
        other => {
            return Err(AdapterError::UnsupportedDtype {
                dtype: format!("safetensors {other}"),
            }
            .into());
        }
    })
}

/// The bytes of a file, owned by whatever holds them (a memory map, a
/// `Vec<u8>`, an `Arc<[u8]>`), with the address and length read once.
struct Bytes {
    /// Held, not read again: it keeps the bytes at `base` alive.
    _owner: Box<dyn AsRef<[u8]> + Send + Sync>,
    /// `owner.as_ref()`'s address and length, read once when boxed.
    base: *const u8,
    len: usize,
}

// SAFETY: `base` points into the bytes `owner` holds, which is `Send + Sync`;
// the bytes are only ever read (never written through `base`, and `owner` is
// never borrowed mutably), so sharing or sending the pointer with its owner
// is as safe as sharing or sending the owner.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`: `&Bytes` gives read access only.
unsafe impl Sync for Bytes {}

impl Bytes {
    fn new(owner: Box<dyn AsRef<[u8]> + Send + Sync>) -> Self {
        // Read after boxing: the owner does not move again (an owner holding
        // its bytes inline would otherwise report an address it then leaves).
        let slice = (*owner).as_ref();
        let (base, len) = (slice.as_ptr(), slice.len());
        Self {
            _owner: owner,
            base,
            len,
        }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `base` and `len` are those of a `&[u8]` that `owner.as_ref()`
        // returned. Safe code cannot invalidate such a slice while its owner
        // is alive, unmoved and not borrowed mutably (a leaked owner's
        // `as_ref()` is a `&'static [u8]`, which safe code may keep while
        // calling every `&self` method of the owner); the owner is boxed
        // (never moved), never borrowed mutably, and dropped only with
        // `self`, whose borrow bounds the returned slice.
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }
}

struct Shared {
    bytes: Bytes,
    /// Offset of the data section (after the 8-byte length and the header).
    data_start: usize,
    metadata: Metadata,
    /// The tensors' names, sorted.
    names: Box<[Box<str>]>,
}

/// A safetensors file: its tensors, each a zero-copy, read-only
/// [`SafetensorView`] that keeps the file's bytes alive.
///
/// The bytes are the whole file: memory-mapped ([`open`](Self::open)), read
/// into this crate's 64-byte-aligned memory ([`read`](Self::read), one copy),
/// or any owner of bytes you give ([`from_bytes`](Self::from_bytes): a
/// `Vec<u8>`, an `Arc<[u8]>`, your own `memmap2::Mmap`). The header is
/// parsed and checked once, by the safetensors crate. Cloning is cheap (an
/// `Arc`); the bytes are dropped when the file and every view of it, in
/// Rust or held by a consumer in Python, are gone. A tensor whose bytes
/// are not aligned for its dtype (a writer that packed them out of
/// alignment; the safetensors writers never do) is refused when exported,
/// never exported misaligned.
///
/// ```
/// use pyo3_dlpack::{DataType, IntoDLPack, SafetensorsFile};
///
/// // A file of one tensor: the 8-byte little-endian header length, the
/// // JSON header (padded with spaces to a multiple of 8 bytes, as the
/// // safetensors writers do), the data (here two float32, 1.0 and 2.0).
/// let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  "#;
/// let mut file = (header.len() as u64).to_le_bytes().to_vec();
/// file.extend_from_slice(header);
/// file.extend_from_slice(&[0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
///
/// let weights = SafetensorsFile::from_bytes(file)?;
/// let w = weights.tensor("w")?;
/// assert_eq!((w.dtype(), w.shape()), (DataType::F32, &[2usize][..]));
/// let info = w.tensor_info()?;
/// assert!(info.is_read_only());
/// assert_eq!(info.data_ptr().cast_const(), w.data().as_ptr().cast());
/// # Ok::<(), pyo3_dlpack::DLPackError>(())
/// ```
///
/// From Python, through a `#[pyfunction]` of yours, every framework imports
/// the weights without a copy:
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{DLPackTensor, SafetensorsFile};
///
/// /// Python: `torch.from_dlpack(load("model.safetensors", "lm_head.weight"))`
/// #[pyfunction]
/// fn load(path: std::path::PathBuf, name: &str) -> PyResult<DLPackTensor> {
///     // SAFETY: the model files are not modified while the process runs.
///     let file = unsafe { SafetensorsFile::open(&path) }?;
///     Ok(DLPackTensor::new(file.tensor(name)?)?)
/// }
/// ```
#[derive(Clone)]
pub struct SafetensorsFile {
    shared: Arc<Shared>,
}

impl fmt::Debug for SafetensorsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafetensorsFile")
            .field("bytes", &self.shared.bytes.len)
            .field("tensors", &self.names())
            .finish()
    }
}

/// A `[u8]` owner of this crate's aligned memory.
struct AlignedBytes(AlignedBuffer<u8>);

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn io_error(path: &Path, err: std::io::Error) -> DLPackError {
    AdapterError::Io {
        path: path.display().to_string(),
        message: err.to_string(),
    }
    .into()
}

impl SafetensorsFile {
    /// Maps the file at `path` into memory and parses its header: no tensor
    /// byte is read (or counted in the process's resident memory) until a
    /// consumer reads it.
    ///
    /// The map is private and copy-on-write, with no swap reserved: a
    /// consumer that ignores the read-only flag (torch has no read-only
    /// tensors) and writes changes this process's copy of that page only,
    /// never the file (the copy is made when written; with no swap reserved
    /// for it, only an out-of-memory system refuses it).
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated, by this process or any
    /// other, while the map lives (until the `SafetensorsFile` and every view
    /// and export of its tensors are dropped): the map shows the file's
    /// current contents, so a change would change bytes that Rust code and
    /// consumers read as immutable, and a truncation makes reading them
    /// fault. This is [`memmap2::Mmap::map`]'s contract.
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self, DLPackError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|err| io_error(path, err))?;
        // SAFETY: the caller promises that the file is neither modified nor
        // truncated while the map lives; the map is private, so writes to
        // it never reach the file.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .no_reserve_swap()
                .map_copy(&file)
        }
        .map_err(|err| io_error(path, err))?;
        Self::from_bytes(map)
    }

    /// Reads the file at `path` into 64-byte-aligned memory (one copy; no
    /// promise about the file needed) and parses its header.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, DLPackError> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(|err| io_error(path, err))?;
        let len = file.metadata().map_err(|err| io_error(path, err))?.len();
        let len = usize::try_from(len).map_err(|_| {
            io_error(
                path,
                std::io::Error::other("the file is larger than memory"),
            )
        })?;
        let mut buffer = AlignedBuffer::<u8>::zeroed(len);
        file.read_exact(&mut buffer)
            .map_err(|err| io_error(path, err))?;
        Self::from_bytes(AlignedBytes(buffer))
    }

    /// Parses the header of the safetensors file `bytes` holds, keeping
    /// `bytes` alive until the file and every view of its tensors are gone.
    ///
    /// Any owner of bytes: `Vec<u8>`, `Box<[u8]>`, `Arc<[u8]>` (shared with
    /// other Rust code, which may keep reading it: the tensors are exported
    /// read-only), `&'static [u8]`, a `memmap2::Mmap` (a shared, read-only
    /// map: a consumer that writes anyway, as torch may, faults). A file
    /// that is not a valid safetensors file is an error naming what is wrong.
    pub fn from_bytes(
        bytes: impl AsRef<[u8]> + Send + Sync + 'static,
    ) -> Result<Self, DLPackError> {
        let bytes = Bytes::new(Box::new(bytes));
        let (header_len, metadata) =
            SafeTensors::read_metadata(bytes.as_slice()).map_err(|err| {
                AdapterError::Safetensors {
                    reason: err.to_string(),
                }
            })?;
        // `read_metadata` checked that the header fits the bytes.
        let data_start = header_len + size_of::<u64>();
        let mut names: Box<[Box<str>]> = metadata
            .tensors()
            .into_keys()
            .map(String::into_boxed_str)
            .collect();
        names.sort_unstable();
        Ok(Self {
            shared: Arc::new(Shared {
                bytes,
                data_start,
                metadata,
                names,
            }),
        })
    }

    /// The names of the tensors, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.shared.names.iter().map(|name| &**name).collect()
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.shared.names.len()
    }

    /// Whether the file holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's free-form `__metadata__` (string keys and values), sorted
    /// by key; empty when the file has none.
    pub fn metadata(&self) -> Vec<(&str, &str)> {
        let mut entries: Vec<(&str, &str)> = match self.shared.metadata.metadata() {
            Some(map) => map.iter().map(|(k, v)| (&**k, &**v)).collect(),
            None => Vec::new(),
        };
        entries.sort_unstable();
        entries
    }

    /// The whole file's bytes (header included).
    pub fn as_bytes(&self) -> &[u8] {
        self.shared.bytes.as_slice()
    }

    /// The tensor `name`: a view of its bytes, exported without a copy and
    /// read-only. A `BOOL` tensor's bytes are checked to be 0 or 1 (reading
    /// them: the only tensors this reads); no other tensor is read.
    pub fn tensor(&self, name: &str) -> Result<SafetensorView, DLPackError> {
        let Some(info) = self.shared.metadata.info(name) else {
            return Err(AdapterError::TensorNotFound {
                name: name.to_owned(),
                available: self.names().into_iter().map(str::to_owned).collect(),
            }
            .into());
        };
        let dtype = safetensors_dtype(info.dtype)?;
        let (begin, end) = info.data_offsets;
        // `read_metadata` checked that the offsets are ordered and lie in
        // the data section; checked again here, as this crate's own bound.
        let start = self.shared.data_start.checked_add(begin);
        let stop = self.shared.data_start.checked_add(end);
        let (start, stop) = match (start, stop) {
            (Some(start), Some(stop)) if start <= stop && stop <= self.shared.bytes.len => {
                (start, stop)
            }
            _ => {
                return Err(AdapterError::Safetensors {
                    reason: format!("invalid offset for tensor `{name}`"),
                }
                .into());
            }
        };
        let view = SafetensorView {
            file: self.clone(),
            name: name.into(),
            start,
            len: stop - start,
            dtype,
            shape: info.shape.clone().into_boxed_slice(),
        };
        if dtype == DataType::BOOL {
            if let Some(offset) = view.data().iter().position(|&b| b > 1) {
                return Err(AdapterError::InvalidBool {
                    name: name.to_owned(),
                    offset,
                    byte: view.data()[offset],
                }
                .into());
            }
        }
        Ok(view)
    }

    /// Every tensor, in the order of the names (sorted).
    pub fn tensors(&self) -> Result<Vec<SafetensorView>, DLPackError> {
        self.shared
            .names
            .iter()
            .map(|name| self.tensor(name))
            .collect()
    }
}

/// One tensor of a [`SafetensorsFile`]: its bytes in the file, its dtype and
/// shape. It keeps the file's bytes alive (an `Arc`), so it can be exported,
/// returned from a `#[pyfunction]` or stored as the `#[dlpack(data)]` field
/// of a derived type; exports are **read-only** and never copy.
///
/// NumPy gives a read-only array; torch has no read-only tensors and ignores
/// the flag: do not write to such a tensor (with [`SafetensorsFile::open`]'s
/// private map a write changes only this process's copy of a page; with a
/// shared read-only map of your own it faults).
///
/// ```
/// use pyo3_dlpack::{IntoDLPack, SafetensorView, SafetensorsFile};
///
/// /// A layer's weights with its name, returned to Python as one tensor.
/// #[derive(IntoDLPack)]
/// struct Weights {
///     #[dlpack(data)]
///     data: SafetensorView, // dtype and memory from the file
///     #[dlpack(shape)]
///     shape: Vec<usize>,
///     layer: String, // kept with the value
/// }
///
/// # let header = br#"{"w":{"dtype":"I16","shape":[2,2],"data_offsets":[0,8]}}"#;
/// # let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
/// # bytes.extend_from_slice(header);
/// # bytes.extend_from_slice(&[1, 0, 2, 0, 3, 0, 4, 0]);
/// let file = SafetensorsFile::from_bytes(bytes)?;
/// let data = file.tensor("w")?;
/// let weights = Weights { shape: data.shape().to_vec(), data, layer: "w".into() };
/// let info = weights.tensor_info()?;
/// assert_eq!((info.shape(), info.is_read_only()), (&[2i64, 2][..], true));
/// # Ok::<(), pyo3_dlpack::DLPackError>(())
/// ```
#[derive(Clone)]
pub struct SafetensorView {
    file: SafetensorsFile,
    name: Box<str>,
    /// Offset of the tensor's first byte in the file, and its length.
    start: usize,
    len: usize,
    dtype: DataType,
    shape: Box<[usize]>,
}

impl fmt::Debug for SafetensorView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafetensorView")
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .finish()
    }
}

impl SafetensorView {
    /// The tensor's name in the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Its shape (row-major, as safetensors stores every tensor).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Its bytes, in the file's memory.
    pub fn data(&self) -> &[u8] {
        &self.file.as_bytes()[self.start..self.start + self.len]
    }

    /// The file it belongs to.
    pub fn file(&self) -> &SafetensorsFile {
        &self.file
    }
}

// SAFETY: the address is the file's base (read once, see `Bytes`) plus a
// fixed offset, the same every time and unchanged when the view moves (the
// bytes are behind the view's `Arc`); `start + len` was checked to lie
// within the file's `len` bytes, which stay allocated and readable on the
// host while any clone of the `Arc` lives, this view's included. The view
// is read-only: nothing writes the bytes (Rust code reads them through
// shared references only). The dtype is the file's, and every bit pattern
// is a value of it but for `bool`, whose bytes `tensor` checked to be 0 or 1.
unsafe impl TensorData for SafetensorView {
    fn data_ptr(&self) -> *mut c_void {
        self.file
            .shared
            .bytes
            .base
            .wrapping_add(self.start)
            .cast_mut()
            .cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len)
    }
    fn dtype(&self) -> Option<DataType> {
        Some(self.dtype)
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

/// The tensor with its shape, read-only.
impl IntoDLPack for SafetensorView {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self).shape(&self.shape[..]).build()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use pyo3::prelude::*;

    use super::*;
    use crate::{CapsuleFormat, DLPackTensor, PyTensor};

    /// A safetensors file of `(name, dtype, shape, bytes)` entries, in that
    /// order, its header padded with spaces to a multiple of 8 bytes.
    fn file_of(entries: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
        let mut header = String::from("{");
        let mut offset = 0;
        for (i, (name, dtype, shape, data)) in entries.iter().enumerate() {
            if i > 0 {
                header.push(',');
            }
            header.push_str(&format!(
                r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{offset},{}]}}"#,
                offset + data.len()
            ));
            offset += data.len();
        }
        header.push('}');
        while header.len() % 8 != 0 {
            header.push(' ');
        }
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        for (_, _, _, data) in entries {
            file.extend_from_slice(data);
        }
        file
    }

    #[test]
    fn every_safetensors_dtype_has_its_dlpack_dtype() {
        let cases = [
            ("BOOL", DataType::BOOL),
            ("U8", DataType::U8),
            ("I8", DataType::I8),
            ("U16", DataType::U16),
            ("I16", DataType::I16),
            ("U32", DataType::U32),
            ("I32", DataType::I32),
            ("U64", DataType::U64),
            ("I64", DataType::I64),
            ("F16", DataType::F16),
            ("BF16", DataType::BF16),
            ("F32", DataType::F32),
            ("F64", DataType::F64),
            ("C64", DataType::C64),
            ("F8_E5M2", DataType::F8_E5M2),
            ("F8_E4M3", DataType::F8_E4M3FN),
            ("F8_E8M0", DataType::F8_E8M0FNU),
            ("F8_E4M3FNUZ", DataType::F8_E4M3FNUZ),
            ("F8_E5M2FNUZ", DataType::F8_E5M2FNUZ),
            ("F4", DataType::F4_E2M1FN),
            ("F6_E2M3", DataType::F6_E2M3FN),
            ("F6_E3M2", DataType::F6_E3M2FN),
        ];
        for (name, dtype) in cases {
            // Four elements (three bytes of float6, two of float4).
            let bytes = vec![1u8; (4 * dtype.bits as usize * dtype.lanes as usize).div_ceil(8)];
            let file = SafetensorsFile::from_bytes(file_of(&[("t", name, &[4], &bytes)]))
                .unwrap_or_else(|err| panic!("{name}: {err}"));
            let view = file.tensor("t").unwrap();
            assert_eq!(view.dtype(), dtype, "{name}");
            let info = view
                .tensor_info()
                .unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(
                (info.shape().to_vec(), info.dtype()),
                (vec![4], dtype),
                "{name}"
            );
            assert_eq!(
                info.data_ptr().cast_const(),
                view.data().as_ptr().cast(),
                "{name}"
            );
        }
    }

    #[test]
    fn views_point_into_the_files_bytes_read_only() {
        let a: Vec<u8> = (1..=8i16).flat_map(i16::to_le_bytes).collect();
        let b = 2.5f64.to_le_bytes();
        let file = SafetensorsFile::from_bytes(file_of(&[
            ("a", "I16", &[2, 4], &a),
            ("b", "F64", &[], &b),
        ]))
        .unwrap();
        assert_eq!(file.names(), vec!["a", "b"]);
        assert_eq!((file.len(), file.is_empty()), (2, false));
        let base = file.as_bytes().as_ptr() as usize;
        let header_end = file.as_bytes().len() - a.len() - b.len();

        let va = file.tensor("a").unwrap();
        let info = va.tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![2, 4], vec![4, 1])
        );
        assert_eq!(info.data_ptr() as usize, base + header_end);
        assert!(info.is_read_only());
        assert_eq!(va.data(), &a[..]);

        let vb = file.tensor("b").unwrap();
        let info = vb.tensor_info().unwrap();
        assert_eq!((info.ndim(), info.numel()), (0, 1));
        assert_eq!(info.data_ptr() as usize, base + header_end + a.len());
        let names: Vec<String> = file
            .tensors()
            .unwrap()
            .iter()
            .map(|v| v.name().into())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_tensor_packed_out_of_alignment_is_refused_not_exported() {
        // 6 bytes of int16, then a float64 at 6 mod 8: the safetensors
        // writer sorts tensors by alignment so that this never happens.
        let a: Vec<u8> = (1..=3i16).flat_map(i16::to_le_bytes).collect();
        let b = 2.5f64.to_le_bytes();
        let file =
            SafetensorsFile::from_bytes(file_of(&[("a", "I16", &[3], &a), ("b", "F64", &[], &b)]))
                .unwrap();
        let err = file.tensor("b").unwrap().tensor_info().unwrap_err();
        assert!(
            matches!(
                err,
                DLPackError::Layout(crate::error::LayoutError::Misaligned { align: 8, .. })
            ),
            "{err}"
        );
    }

    #[test]
    fn metadata_is_read() {
        let header = br#"{"__metadata__":{"format":"pt","b":"2"},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        bytes.push(7);
        let file = SafetensorsFile::from_bytes(bytes).unwrap();
        assert_eq!(file.metadata(), vec![("b", "2"), ("format", "pt")]);
        assert_eq!(file.tensor("x").unwrap().data(), &[7]);
    }

    #[test]
    fn errors_name_what_was_expected_and_found() {
        let file = SafetensorsFile::from_bytes(file_of(&[
            ("w", "U8", &[1], &[0]),
            ("v", "U8", &[1], &[0]),
        ]))
        .unwrap();
        assert_eq!(
            file.tensor("x").unwrap_err().to_string(),
            r#"expected a tensor named "x" in the safetensors file, which holds "v", "w""#
        );

        let err = SafetensorsFile::from_bytes(vec![1u8, 2, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected a safetensors file, got bytes that are not one: header too small"
        );
        let mut truncated = file_of(&[("w", "F32", &[2], &[0; 8])]);
        truncated.pop();
        let err = SafetensorsFile::from_bytes(truncated).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected a safetensors file, got bytes that are not one: \
             incomplete metadata, file not fully covered"
        );

        let bools = SafetensorsFile::from_bytes(file_of(&[("mask", "BOOL", &[3], &[1, 0, 2])]));
        assert_eq!(
            bools.unwrap().tensor("mask").unwrap_err().to_string(),
            r#"expected bytes 0 or 1 in the bool tensor "mask", got 2 at byte 2"#
        );

        // SAFETY: the path does not exist, so nothing is mapped.
        let err = unsafe { SafetensorsFile::open("/nonexistent/model.safetensors") }.unwrap_err();
        assert!(
            err.to_string()
                .starts_with(r#"cannot read "/nonexistent/model.safetensors": "#),
            "{err}"
        );
    }

    #[test]
    fn open_and_read_see_the_same_tensors() {
        let data: Vec<u8> = (0..64u8).collect();
        let bytes = file_of(&[("x", "U32", &[4, 4], &data)]);
        let path = std::env::temp_dir().join(format!(
            "pyo3-dlpack-adapter-{}.safetensors",
            std::process::id()
        ));
        std::fs::write(&path, &bytes).unwrap();
        // SAFETY: this test's own file, not modified while mapped.
        let mapped = unsafe { SafetensorsFile::open(&path) }.unwrap();
        let read = SafetensorsFile::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        for file in [&mapped, &read] {
            let x = file.tensor("x").unwrap();
            assert_eq!(
                (x.dtype(), x.shape(), x.data()),
                (DataType::U32, &[4, 4][..], &data[..])
            );
        }
        assert_eq!(read.as_bytes().as_ptr() as usize % crate::ALIGNMENT, 0);
    }

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    /// Bytes that count their drop.
    struct Counted(Vec<u8>);

    impl AsRef<[u8]> for Counted {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_bytes_live_until_the_last_consumer_lets_go() {
        let values: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let file =
            SafetensorsFile::from_bytes(Counted(file_of(&[("x", "F32", &[2], &values)]))).unwrap();
        let view = file.tensor("x").unwrap();
        let address = view.data().as_ptr() as usize;
        drop(file);
        Python::attach(|py| {
            let capsule = DLPackTensor::new(view)
                .unwrap()
                .to_capsule(py, CapsuleFormat::Versioned)
                .unwrap();
            let imported = PyTensor::from_capsule(&capsule).unwrap();
            drop(capsule);
            assert_eq!(
                DROPPED.load(Ordering::SeqCst),
                0,
                "the import holds the bytes"
            );
            assert_eq!(imported.data_ptr() as usize, address, "no copy");
            assert!(imported.is_read_only());
            assert_eq!(imported.as_slice::<f32>().unwrap(), &[1.5, -2.0]);
            drop(imported);
        });
        assert_eq!(DROPPED.load(Ordering::SeqCst), 1, "dropped exactly once");
    }
}
