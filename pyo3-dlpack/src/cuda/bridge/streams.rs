//! Stream handles between cudarc and DLPack, and the waits between them
//! (through the crate's one event wait, [`crate::cuda::driver`]).

use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUstream;

use crate::error::InterfaceError;
use crate::{DLPackError, Device};

/// DLPack's number for a CUDA stream handle: the NULL handle is CUDA's
/// legacy default stream, which DLPack calls 1 (0 is not allowed for CUDA);
/// every other handle (`CU_STREAM_LEGACY` = 1, `CU_STREAM_PER_THREAD` = 2, a
/// created stream) is its own number.
pub(crate) fn dlpack_stream(handle: CUstream) -> usize {
    match handle as usize {
        0 => 1,
        other => other,
    }
}

/// Makes `consumer` wait for the work queued so far on `producer` (a
/// DLPack stream number on `device`), when they differ: an event recorded
/// on `producer`, waited for on `consumer`, with nothing blocking the host.
///
/// # Safety
///
/// `producer` must be a live stream of `consumer`'s device (a producer's
/// current stream, or 1/2, valid in every context).
pub(crate) unsafe fn wait_for(
    device: Device,
    producer: Option<usize>,
    consumer: &Arc<CudaStream>,
) -> Result<(), DLPackError> {
    let consumer = dlpack_stream(consumer.cu_stream()) as i64;
    wait(device, producer, consumer)
}

/// Makes the stream numbered `later` wait for the work queued so far on
/// `earlier`, when they differ (see [`wait_for`]).
///
/// # Safety
///
/// As [`wait_for`]: `later` is a live stream of `earlier`'s device.
pub(crate) unsafe fn make_wait(
    device: Device,
    earlier: &Arc<CudaStream>,
    later: usize,
) -> Result<(), DLPackError> {
    wait(
        device,
        Some(dlpack_stream(earlier.cu_stream())),
        later as i64,
    )
}

/// The one event wait ([`crate::cuda::driver::Cuda::wait`]), when the
/// stream rules ask for one.
fn wait(device: Device, producer: Option<usize>, consumer: i64) -> Result<(), DLPackError> {
    let Some((producer, consumer)) = crate::cuda::streams::export_wait(device, producer, consumer)
    else {
        return Ok(());
    };
    let driver: Result<_, InterfaceError> = crate::cuda::driver::driver("ordering a cudarc stream");
    Ok(driver?.wait(device.device_id, producer, consumer)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_null_handle_is_the_legacy_default_stream() {
        assert_eq!(dlpack_stream(std::ptr::null_mut()), 1);
        assert_eq!(dlpack_stream(1 as CUstream), 1);
        assert_eq!(dlpack_stream(2 as CUstream), 2);
        assert_eq!(dlpack_stream(0x7f00_1234 as CUstream), 0x7f00_1234);
    }
}
