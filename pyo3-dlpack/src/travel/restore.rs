//! Unpickling: a `DLPackTensor` rebuilt from a checked payload, its bytes
//! kept in place when they may be (an out-of-band buffer aligned for the
//! dtype, such as Ray's object store hands out; the `bytes` object an
//! in-band pickle made, as NumPy keeps it), else copied once into an
//! aligned buffer; device tensors uploaded to their device.

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::payload::{Header, PayloadError, StateError};
use crate::cuda::driver::Memory;
use crate::export::{ALIGNMENT, AlignedBuffer, DLPackTensor, IntoDLPack, RawBuffer, TensorInfo};
use crate::{DLPackError, DataType, Device, DeviceType};

/// `pickle.UnpicklingError` with `error`'s text.
#[cold]
pub(crate) fn unpickling_error(py: Python<'_>, error: PayloadError) -> PyErr {
    pickle_error(py, pyo3::intern!(py, "UnpicklingError"), format!("{error}"))
}

/// `pickle.<class>(message)`, called as Python code would raise it:
/// whatever that class of `pickle` is now (a program may have replaced
/// it); where that fails, the failure. Never a panic.
#[cold]
pub(crate) fn pickle_error(py: Python<'_>, class: &Bound<'_, PyString>, message: String) -> PyErr {
    py.import(pyo3::intern!(py, "pickle"))
        .and_then(|pickle| pickle.getattr(class))
        .and_then(|class| class.call1((message,)))
        .map_or_else(|err| err, PyErr::from_value)
}

/// What keeps a restored tensor's memory alive.
#[allow(dead_code)] // only held
enum Keep {
    /// The pickle's own buffer, held as a buffer-protocol view (released
    /// without recursion: it may be the last link of a chain of restores).
    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    View(super::chain::KeptView),
    /// The pickle's `bytes` (builds without `Py_buffer`: the limited API
    /// before 3.11), released attached.
    #[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
    Bytes(Option<Py<PyAny>>),
    /// A copy of the bytes of our own.
    Copy(AlignedBuffer<u8>),
    /// Device memory the driver allocated, freed on drop.
    Device(DeviceMemory),
}

#[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
impl Drop for Keep {
    fn drop(&mut self) {
        if let Self::Bytes(bytes) = self {
            if let Some(bytes) = bytes.take() {
                crate::import::consume::release_now(bytes);
            }
        }
    }
}

/// A restored tensor: row-major elements at `memory`.
struct Restored {
    memory: RawBuffer,
    shape: Vec<i64>,
    dtype: DataType,
    _keep: Keep,
}

impl IntoDLPack for Restored {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.memory)
            .shape(&self.shape)
            .dtype(self.dtype)
            .build()
    }
}

/// Host bytes of a payload, where they are, and what keeps them.
struct HostBytes {
    ptr: *mut u8,
    len: usize,
    read_only: bool,
    keep: Keep,
}

/// The alignment a dtype's elements are kept at without a copy: their size
/// rounded up to a power of two, at most 16 bytes (`complex128`).
fn alignment(dtype: DataType) -> usize {
    dtype.itemsize().next_power_of_two().min(16)
}

/// Rebuilds the tensor a state tuple describes (the reconstructor's work).
pub(crate) fn restore(py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<DLPackTensor> {
    let (header, data) = Header::from_state(state).map_err(|err| match err {
        StateError::Invalid(err) => unpickling_error(py, err),
        StateError::Interrupted(err) => err,
    })?;
    let bytes = take_bytes(&data, &header)?;
    rebuild(py, header, bytes, |py, message| {
        unpickling_error(py, PayloadError(message))
    })
}

/// Whether tensors on `device` can be rebuilt from their bytes (the CPU's,
/// and CUDA's device, pinned and managed memory, through the driver).
pub(crate) fn restorable(device: Device) -> bool {
    matches!(
        device.device_type,
        DeviceType::CPU | DeviceType::CUDA | DeviceType::CUDA_HOST | DeviceType::CUDA_MANAGED
    )
}

/// What to tell of a device [`rebuild`] cannot restore tensors on.
pub(crate) fn unrestorable(device: Device) -> String {
    format!(
        "a tensor on {device} cannot be restored here: pyo3-dlpack restores tensors of the \
         CPU and of CUDA (device, pinned and managed memory); pickle a host copy instead: \
         np.from_dlpack(t, device='cpu')"
    )
}

/// A tensor of `header` from its row-major host bytes: in place on the
/// CPU, uploaded for CUDA; other devices refused (never host memory
/// labelled as a device), with `fail`'s error (unpickling's, or a copy's).
fn rebuild(
    py: Python<'_>,
    header: Header,
    bytes: HostBytes,
    fail: fn(Python<'_>, String) -> PyErr,
) -> PyResult<DLPackTensor> {
    let device = header.device;
    let (memory, keep) = match device.device_type {
        DeviceType::CPU => {
            // SAFETY: `len` bytes of host memory from `ptr`, kept allocated
            // (and unchanged in place) by `keep`, stored beside it; writable
            // only where the buffer's exporter allows it.
            let mut memory = unsafe { RawBuffer::new(bytes.ptr.cast(), bytes.len, device) };
            if bytes.read_only || header.read_only {
                memory = memory.read_only();
            }
            (memory, bytes.keep)
        }
        DeviceType::CUDA | DeviceType::CUDA_HOST | DeviceType::CUDA_MANAGED => {
            let kind = match device.device_type {
                DeviceType::CUDA => Memory::Device,
                DeviceType::CUDA_HOST => Memory::Pinned,
                _ => Memory::Managed,
            };
            // SAFETY: as above, read during the upload only.
            let host = unsafe { bytes_of(&bytes) };
            let uploaded = DeviceMemory::upload(kind, device, host)
                .map_err(|err| fail(py, format!("restoring a tensor on {device} failed: {err}")))?;
            // SAFETY: `len` bytes of CUDA memory the driver allocated for
            // this value, on `device` (its kind), freed when `keep` drops.
            let mut memory = unsafe { RawBuffer::new(uploaded.ptr as *mut _, host.len(), device) };
            if header.read_only {
                memory = memory.read_only();
            }
            (memory, Keep::Device(uploaded))
        }
        _ => return Err(fail(py, unrestorable(device))),
    };
    let restored = Restored {
        memory,
        shape: header.shape,
        dtype: header.dtype,
        _keep: keep,
    };
    // `DLPackTensor::new` without its generic copy for this type: a fresh
    // `Arc`, not shared (and a `Restored` is no `bool` container).
    Ok(DLPackTensor::from_arc(std::sync::Arc::new(restored))?)
}

/// The bytes a `HostBytes` points to.
///
/// # Safety
///
/// `bytes` points to `len` readable host bytes (as every `HostBytes` does
/// while alive), not written while the slice is used.
unsafe fn bytes_of(bytes: &HostBytes) -> &[u8] {
    if bytes.len == 0 {
        return &[];
    }
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts(bytes.ptr, bytes.len) }
}

/// The error for a payload's `data` whose bytes could not be read (`err`):
/// an `UnpicklingError` naming its type and `err`, or `err` itself where it
/// is an interruption.
#[cold]
fn not_a_buffer(data: &Bound<'_, PyAny>, err: PyErr) -> PyErr {
    let py = data.py();
    match crate::python::error_text(py, err) {
        Ok(err) => unpickling_error(
            py,
            PayloadError(format!(
                "expected the tensor's bytes as a buffer, got {}: {err}",
                crate::python::type_name(data)
            )),
        ),
        Err(interruption) => interruption,
    }
}

/// The payload's bytes, checked to be exactly the tensor's: kept in place
/// when aligned for the dtype, else copied once into an aligned buffer.
#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
fn take_bytes(data: &Bound<'_, PyAny>, header: &Header) -> PyResult<HostBytes> {
    use crate::import::protocols::view::BufferView;

    let py = data.py();
    let view = BufferView::get(data).map_err(|err| not_a_buffer(data, err))?;
    let raw = view.raw();
    // SAFETY: a filled view, read while held.
    let contiguous = unsafe { pyo3::ffi::PyBuffer_IsContiguous(raw, b'C' as _) } == 1;
    if !contiguous {
        return Err(unpickling_error(
            py,
            PayloadError("expected the tensor's bytes in one contiguous buffer".to_owned()),
        ));
    }
    let (ptr, len) = (raw.buf.cast::<u8>(), raw.len as usize);
    check_length(len, header).map_err(|err| unpickling_error(py, err))?;
    if let Some(read_only) = kept(data, header, raw.readonly != 0, ptr) {
        let keep = Keep::View(super::chain::KeptView::new(view));
        return Ok(HostBytes {
            ptr,
            len,
            read_only,
            keep,
        });
    }
    // SAFETY: the view's `len` readable bytes, held until the copy is made.
    copied(
        unsafe { std::slice::from_raw_parts(ptr, len) },
        header.read_only,
    )
}

/// As above, for the limited API before Python 3.11 (no `Py_buffer`): the
/// data as `bytes` (itself, or `memoryview(data).tobytes()`: one copy),
/// kept when aligned.
#[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
fn take_bytes(data: &Bound<'_, PyAny>, header: &Header) -> PyResult<HostBytes> {
    use pyo3::types::{PyBytes, PyMemoryView};

    let py = data.py();
    let bytes = match data.cast::<PyBytes>() {
        Ok(bytes) => bytes.clone(),
        Err(_) => PyMemoryView::from(data)
            .and_then(|view| view.call_method0(pyo3::intern!(py, "tobytes")))
            .and_then(|b| Ok(b.cast_into::<PyBytes>()?))
            .map_err(|err| not_a_buffer(data, err))?,
    };
    let slice = bytes.as_bytes();
    check_length(slice.len(), header).map_err(|err| unpickling_error(py, err))?;
    if let Some(read_only) = kept(data, header, true, slice.as_ptr()) {
        return Ok(HostBytes {
            ptr: slice.as_ptr().cast_mut(),
            len: slice.len(),
            read_only,
            keep: Keep::Bytes(Some(bytes.into_any().unbind())),
        });
    }
    copied(slice, header.read_only)
}

/// Whether the payload's buffer becomes the tensor's memory, and then
/// whether that memory is read-only: it is kept when aligned for the dtype.
/// An out-of-band buffer keeps its own writability (Ray's object store
/// hands out read-only memory: a read-only tensor). The read-only `bytes`
/// of an in-band pickle (protocols before 5, or 5 without out-of-band
/// buffers) are kept writable when [`adoptable`], as NumPy keeps them
/// (its unpickled arrays are writable), else a writable tensor copies them.
fn kept(data: &Bound<'_, PyAny>, header: &Header, read_only: bool, ptr: *const u8) -> Option<bool> {
    let aligned = (ptr as usize) % alignment(header.dtype) == 0 || header.nbytes == 0;
    if !aligned {
        return None;
    }
    if !read_only || header.read_only {
        return Some(read_only || header.read_only);
    }
    if !data.is_exact_instance_of::<pyo3::types::PyBytes>() {
        return Some(true);
    }
    adoptable(data, header.nbytes).then_some(false)
}

/// More bytes than this are kept writable in place; fewer are copied (NumPy's
/// threshold: the copy costs less than the `bytes` object kept alive, and
/// the interpreter shares its empty and one-byte `bytes` objects).
const ADOPT_ABOVE: usize = 1000;

/// Whether a `bytes` object of `len` bytes may become a writable tensor's
/// memory: it is large, and held by no more than the state tuple and one
/// other (in a pickle, the unpickler's memo), as an unpickled `bytes`
/// object is. One held more widely (by two variables or containers, the
/// interpreter's caches, an immortal object) is copied instead, so that
/// no one else sees its bytes change. Writing into a `bytes` object's own
/// storage is sound: heap memory the object owns for its lifetime (never
/// a read-only mapping), kept alive by the tensor's reference to it; only
/// its immutability as a Python value is given up, as NumPy's
/// `ndarray.__setstate__` gives it up (a direct call of the reconstructor
/// with one's own `bytes` gives them to the tensor, as that call does).
fn adoptable(bytes: &Bound<'_, PyAny>, len: usize) -> bool {
    // Two references are ours while this runs: the state's item, and the
    // view (or `bytes`) `take_bytes` holds; two more may be the state
    // tuple's and the memo's. Tests pin the count both ways.
    const OURS_AND_THE_PICKLES: isize = 4;
    // SAFETY: `bytes` is a live object (the borrow holds a reference).
    let count = unsafe { pyo3::ffi::Py_REFCNT(bytes.as_ptr()) };
    len > ADOPT_ABOVE && count <= OURS_AND_THE_PICKLES
}

fn check_length(len: usize, header: &Header) -> Result<(), PayloadError> {
    if len == header.nbytes {
        return Ok(());
    }
    Err(PayloadError(format!(
        "expected {} bytes for a {} tensor of shape {:?}, got {len}",
        header.nbytes, header.dtype, header.shape
    )))
}

/// `bytes` copied once into a 64-byte-aligned buffer of our own. (Not
/// inlined: one copy of the allocation and copy for unpickling and
/// `copy.copy`.)
#[inline(never)]
fn copied(bytes: &[u8], read_only: bool) -> PyResult<HostBytes> {
    let len = bytes.len();
    let write = |dst: *mut u8| {
        // SAFETY: `dst` is a fresh allocation of `len` bytes; `bytes` is
        // another object's memory, so they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len) };
        Ok::<(), DLPackError>(())
    };
    // SAFETY: `write` writes exactly the `len` bytes; any byte is a `u8`.
    let mut copy = unsafe { AlignedBuffer::<u8>::from_writer(len, write) }?;
    debug_assert_eq!(copy.as_slice().as_ptr() as usize % ALIGNMENT, 0);
    Ok(HostBytes {
        ptr: copy.as_mut_slice().as_mut_ptr(),
        len,
        read_only,
        keep: Keep::Copy(copy),
    })
}

/// CUDA memory the driver allocated for a restored tensor.
struct DeviceMemory {
    ptr: u64,
    kind: Memory,
    device: Device,
}

impl DeviceMemory {
    /// `host`'s bytes in new memory of `kind` for `device` (no allocation
    /// when empty).
    fn upload(
        kind: Memory,
        device: Device,
        host: &[u8],
    ) -> Result<Self, crate::error::InterfaceError> {
        let ptr = if host.is_empty() {
            0
        } else {
            let driver = crate::cuda::driver::driver("restoring a pickled CUDA tensor")?;
            driver.upload(kind, device.device_id, host)?
        };
        Ok(Self { ptr, kind, device })
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if let Ok(driver) = crate::cuda::driver::driver("freeing a restored CUDA tensor") {
            // SAFETY: memory `upload` allocated on this device, freed once:
            // here, when the last owner is gone (no export outlives it).
            let _ = unsafe { driver.free(self.kind, self.device.device_id, self.ptr) };
        }
    }
}

/// A host copy of `tensor` for `copy.copy` and `copy.deepcopy`: the same
/// dtype, shape, device and read-only flag, memory of its own. Memory this
/// crate cannot copy (a device it cannot restore on) is a `BufferError`,
/// refused before its bytes are asked for.
pub(crate) fn copy_of(tensor: &Bound<'_, DLPackTensor>) -> PyResult<DLPackTensor> {
    let py = tensor.py();
    let info = tensor.get().info();
    let header = Header::of(info);
    if !restorable(header.device) {
        return Err(cannot_copy(py, unrestorable(header.device)));
    }
    let bytes = super::bytes::TensorBytes::of(tensor, header.nbytes)?;
    let host = copied(bytes.as_slice(), false)?;
    rebuild(py, header, host, cannot_copy)
}

/// Why a copy could not be made: a `BufferError`.
fn cannot_copy(_py: Python<'_>, message: String) -> PyErr {
    crate::error::PythonKind::Buffer.new_err(format!("cannot copy: {message}"))
}
