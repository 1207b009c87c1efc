//! The one rule for when the host may read memory that a value describes:
//! plain host memory at once; CUDA pinned (`cuda_host`) and managed memory
//! only after the value's own stream (`TensorData::stream`), when it names
//! one, has finished its work (through the CUDA driver; pending work the
//! host must see is named there, not ordered in `IntoDLPack::synchronize`,
//! which is for consumers' streams); device memory never. The buffer
//! export, `copy=True`, `dl_device=cpu`, an export of pinned memory as it
//! is (its consumer reads it on the host: pinned memory has no stream
//! protocol), `Native::numpy` and the host views of an import (`as_slice`,
//! `to_vec`, `as_array`: after the stream the import's data is ready on,
//! [`PyTensor::stream`](crate::PyTensor::stream)) all ask it before the
//! host reads. ROCm's and
//! TPU's pinned memory name no stream this crate can wait on: they are read
//! at once.
//!
//! Host copies of the elements ([`copy_to_host`]): one routine for every
//! device, behind `PyTensor::to_vec` and `copy=True` exports: host memory
//! after the rule above, gathered in row-major order; CUDA device memory
//! through the driver (`cuMemcpyDtoHAsync` on the value's stream, which the
//! host then waits for), then gathered on the host.

use pyo3::Python;

use crate::error::SizeOverflow;
use crate::{DLPackError, DataType, Device, DeviceType};

/// CUDA's legacy default stream (`CU_STREAM_LEGACY`): where a copy of memory
/// that names no stream (ready on every stream) is queued.
const LEGACY_STREAM: usize = 1;

/// Makes memory on `device`, written by pending work on `stream` (if any),
/// safe for the host to read now, blocking without the GIL (work queued on
/// the stream may need it: host callbacks). Device memory the host cannot
/// reach is the callers' to refuse (each with its own message); here it is
/// no error.
pub(crate) fn make_host_readable(
    py: Python<'_>,
    device: Device,
    stream: Option<usize>,
) -> Result<(), DLPackError> {
    let ordered_by_cuda = matches!(
        device.device_type,
        DeviceType::CUDA_HOST | DeviceType::CUDA_MANAGED
    );
    match stream {
        Some(stream) if ordered_by_cuda => synchronize(py, device, stream),
        _ => Ok(()),
    }
}

/// Blocks without the GIL until the work queued on `stream` (of `device`'s
/// CUDA device) is done. Out of line: one copy for every caller of
/// [`make_host_readable`].
#[inline(never)]
fn synchronize(py: Python<'_>, device: Device, stream: usize) -> Result<(), DLPackError> {
    let cuda =
        super::driver::driver("reading pinned or managed memory on the host after its stream")?;
    py.detach(|| cuda.synchronize(device.device_id, stream))?;
    Ok(())
}

/// Copies the elements of a tensor (first element at `src`, extents `shape`
/// and element strides `strides`, of `dtype`, on `device`,
/// written by pending work on `stream` if any) to `dst` in row-major order:
/// host memory once the host may read it ([`make_host_readable`]), CUDA
/// device memory through the driver (the span the elements reach copied
/// after the work on `stream`, then gathered). Other devices are refused
/// ([`DLPackError::Device`]). Blocks without the GIL while it waits.
///
/// # Safety
///
/// Every element the layout reaches lies inside one live allocation on
/// `device` (an extent checked against it), which stays allocated until this
/// returns; `dtype` is a whole number of bytes; `dst` is valid for writes of
/// `numel * dtype.itemsize()` bytes and does not overlap the elements.
pub(crate) unsafe fn copy_to_host(
    device: Device,
    stream: Option<usize>,
    src: *const u8,
    shape: &[i64],
    strides: &[i64],
    dtype: DataType,
    dst: *mut u8,
) -> Result<(), DLPackError> {
    if device.device_type == DeviceType::CUDA {
        // SAFETY: the caller's contract, passed on.
        return unsafe { copy_from_cuda(device, stream, src, shape, strides, dtype, dst) };
    }
    if !device.is_host_accessible() {
        return Err(DLPackError::Device {
            expected: Device::cpu(),
            found: device,
        });
    }
    if device.device_type != DeviceType::CPU {
        Python::attach(|py| make_host_readable(py, device, stream))?;
    }
    // SAFETY: host-readable memory now (above) holding every element the
    // layout reaches (the caller's contract); `dst` as the caller promises.
    unsafe { crate::gather::to_row_major(src, shape, strides, dtype.itemsize(), dst) };
    Ok(())
}

/// [`copy_to_host`] for CUDA device memory: the bytes the elements reach,
/// straight into `dst` when they are the elements in row-major order, else
/// into a host buffer gathered from.
///
/// # Safety
///
/// As for [`copy_to_host`].
unsafe fn copy_from_cuda(
    device: Device,
    stream: Option<usize>,
    src: *const u8,
    shape: &[i64],
    strides: &[i64],
    dtype: DataType,
    dst: *mut u8,
) -> Result<(), DLPackError> {
    let itemsize = dtype.itemsize();
    let numel = crate::layout::numel(shape)?;
    if numel == 0 {
        return Ok(());
    }
    let (low, high) = crate::layout::reach(shape, strides, itemsize)
        .expect("a checked layout's reach fits in isize");
    // Within ±isize::MAX (`reach`), so these fit.
    let (before, span) = ((-low) as usize, (high - low) as usize);
    let start = (src as usize).wrapping_sub(before);
    let cuda = super::driver::driver("copying CUDA device memory to the host")?;
    let stream = stream.unwrap_or(LEGACY_STREAM);
    // Straight into `dst` when the span is the elements in row-major order;
    // else into a staging buffer, gathered from below. One copy call either
    // way (one instance of its attach and detach).
    let direct = span == numel * itemsize && crate::layout::is_contiguous(shape, strides);
    let mut staged = Vec::<u8>::new();
    let to = if direct {
        dst
    } else {
        staged
            .try_reserve_exact(span)
            .map_err(|_| SizeOverflow::Allocation {
                shape: shape.to_vec(),
                dtype,
            })?;
        staged.as_mut_ptr()
    };
    // An address, to cross into the closure run without the GIL.
    let to = to as usize;
    Python::attach(|py| {
        py.detach(|| {
            // SAFETY: `to` is `dst` (writable for the `numel * itemsize`
            // bytes that are the whole span here: the caller's contract) or
            // the staging buffer's `span` reserved bytes, untouched until
            // this returns; the driver reads device memory only, and
            // refuses a range that is not.
            unsafe { cuda.copy_to_host(device.device_id, start, span, stream, to as *mut u8) }
        })
    })?;
    if direct {
        return Ok(());
    }
    // SAFETY: the driver wrote all `span` bytes (the copy returned Ok).
    unsafe { staged.set_len(span) };
    // The first element's place in the staged span; every element the
    // layout reaches lies in `[0, span)` from the span's start.
    let first = staged.as_ptr().wrapping_add(before);
    // SAFETY: `first` and the layout reach only bytes of `staged` (above),
    // a host buffer alive for the call; `dst` as the caller promises, a
    // separate allocation.
    unsafe { crate::gather::to_row_major(first, shape, strides, itemsize, dst) };
    Ok(())
}
