//! Stream entry points: creation and destruction, host synchronisation (of
//! a stream, of a context's device), a stream's context.

use std::ffi::{c_uint, c_void};

use crate::context::{context_handle, current_device};
use crate::state::{Key, stream_device, with_state};
use crate::{
    CU_STREAM_NON_BLOCKING, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CuResult, entry,
};

/// A new stream of `device` (non-blocking: it does not synchronise with the
/// legacy default stream); its handle, a leaked allocation's address.
pub(crate) fn new_stream(device: usize, non_blocking: bool) -> usize {
    let handle = Box::into_raw(Box::new(device)) as usize;
    with_state(|state| state.queue_of(Key::Created(handle), device, non_blocking));
    handle
}

/// # Safety
///
/// `stream` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> CuResult {
    entry(|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if stream.is_null() || flags & !CU_STREAM_NON_BLOCKING != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let handle = new_stream(device, flags & CU_STREAM_NON_BLOCKING != 0);
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { stream.write(handle as *mut c_void) };
        Ok(())
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            state.synchronize(queue)?;
            let q = &mut state.queues[queue];
            match q.key {
                Key::Created(_) => q.syncs += 1,
                _ => state.default_syncs[q.device] += 1,
            }
            Ok(())
        })
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(
    handle: *mut c_void,
    context: *mut *mut c_void,
) -> CuResult {
    entry(|| {
        let device = with_state(|state| stream_device(state, handle as usize))?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(context_handle(device)) };
        Ok(())
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamDestroy_v2(handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            // Only created streams (a default stream's handle is refused).
            let handle = handle as usize;
            if handle <= 2 {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            let queue = state.resolve(handle)?;
            // The driver: work already queued still runs.
            state.queues[queue].destroyed = true;
            Ok(())
        })
    })
}

/// Waits for all work of the current context's device: every stream of it
/// runs, and the host has waited for each (refused while one captures).
///
/// # Safety
///
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize() -> CuResult {
    entry(|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        with_state(|state| {
            let queues: Vec<usize> = (0..state.queues.len())
                .filter(|&q| state.queues[q].device == device)
                .collect();
            let capturing: Vec<usize> = queues
                .iter()
                .filter_map(|&q| state.queues[q].capture)
                .collect();
            if !capturing.is_empty() {
                for capture in capturing {
                    state.invalidate(capture);
                }
                return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            }
            state.context_syncs[device] += 1;
            for queue in queues {
                let count = state.queues[queue].ops.len();
                state.run(queue, count);
                let tail = state.queues[queue].tail.clone();
                state.observe(&tail);
            }
            Ok(())
        })
    })
}
