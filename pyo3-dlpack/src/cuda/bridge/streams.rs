//! Stream handles between cudarc and DLPack, and the waits between them.

use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUstream};
use cudarc::driver::{CudaStream, DriverError};

use crate::error::InterfaceError;
use crate::{DLPackError, Device};

/// A driver call of a stream wait that failed.
#[derive(Debug)]
pub(crate) struct WaitError {
    call: &'static str,
    pub(crate) error: DriverError,
}

impl From<WaitError> for DLPackError {
    fn from(err: WaitError) -> Self {
        InterfaceError::Cuda {
            call: err.call,
            code: err.error.0 as i32,
        }
        .into()
    }
}

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

/// The driver handle of DLPack's stream number: 1 and 2 are the driver's
/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`, other numbers handles.
fn cu_stream(stream: usize) -> CUstream {
    stream as CUstream
}

/// Makes `consumer` wait for the work queued so far on `producer` (a
/// DLPack stream number on `device`), when they differ: an event recorded
/// on `producer`, waited for on `consumer`, with nothing blocking the host.
///
/// # Safety
///
/// `producer` must be a live stream of `consumer`'s context (a producer's
/// current stream, or 1/2, valid in every context).
pub(crate) unsafe fn wait_for(
    device: Device,
    producer: Option<usize>,
    consumer: &Arc<CudaStream>,
) -> Result<(), WaitError> {
    let consumer_number = dlpack_stream(consumer.cu_stream()) as i64;
    let Some((producer, _)) = crate::cuda::streams::export_wait(device, producer, consumer_number)
    else {
        return Ok(());
    };
    // SAFETY: the caller promises the handle is a live stream of this
    // context; the wrapper is dropped before this returns (it borrows the
    // stream, never destroys it).
    let producer = unsafe { consumer.context().wrap_borrowed_stream(cu_stream(producer)) };
    join(&producer, consumer)
}

/// Makes the stream numbered `later` wait for the work queued so far on
/// `earlier`, when they differ (see [`wait_for`]).
///
/// # Safety
///
/// As [`wait_for`]: `later` is a live stream of `earlier`'s context.
pub(crate) unsafe fn make_wait(
    device: Device,
    earlier: &Arc<CudaStream>,
    later: Option<usize>,
) -> Result<(), WaitError> {
    let Some(later) = later else {
        return Ok(());
    };
    let earlier_number = dlpack_stream(earlier.cu_stream());
    let Some((_, later)) =
        crate::cuda::streams::export_wait(device, Some(earlier_number), later as i64)
    else {
        return Ok(());
    };
    // SAFETY: as in `wait_for`.
    let later = unsafe { earlier.context().wrap_borrowed_stream(cu_stream(later)) };
    join(earlier, &later)
}

/// `waiter` waits for what `producer` queued so far (an event without timing).
fn join(producer: &Arc<CudaStream>, waiter: &Arc<CudaStream>) -> Result<(), WaitError> {
    let failed = |call| move |error| WaitError { call, error };
    let event = producer
        .record_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(failed("cuEventRecord"))?;
    waiter.wait(&event).map_err(failed("cuStreamWaitEvent"))
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
        assert_eq!(cu_stream(1) as usize, 1);
        assert_eq!(cu_stream(0x7f00_1234) as usize, 0x7f00_1234);
    }
}
