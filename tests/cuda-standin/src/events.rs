//! Events: made on the current context's device, recorded on a stream of
//! it (a point of that stream's clock, or a point in a capture), waited for
//! by streams of any device, or by the host.

use std::ffi::{c_uint, c_void};

use crate::clock::Clock;
use crate::context::current_device;
use crate::state::{Key, State, with_state};
use crate::{
    CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
    CUDA_ERROR_STREAM_CAPTURE_MERGE, CuResult, entry,
};

/// Where an event was last recorded.
#[derive(Debug, Clone)]
pub(crate) enum Recorded {
    Never,
    /// Outside any capture: the recording stream's clock at that point.
    At(Clock),
    /// In capture `capture`, on stream `stream` (a queue index).
    Captured {
        capture: usize,
        stream: usize,
    },
}

#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) device: usize,
    pub(crate) destroyed: bool,
    pub(crate) recorded: Recorded,
}

/// # Safety
///
/// `event` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(event: *mut *mut c_void, _flags: c_uint) -> CuResult {
    entry(|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if event.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let handle = Box::into_raw(Box::new(device)) as usize;
        with_state(|state| {
            state.events.insert(
                handle,
                Event {
                    device,
                    destroyed: false,
                    recorded: Recorded::Never,
                },
            )
        });
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { event.write(handle as *mut c_void) };
        Ok(())
    })
}

pub(crate) fn live_event(state: &mut State, handle: usize) -> Result<&mut Event, CuResult> {
    state
        .events
        .get_mut(&handle)
        .filter(|e| !e.destroyed)
        .ok_or(CUDA_ERROR_INVALID_HANDLE)
}

/// # Safety
///
/// None (handles are looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(event_handle: *mut c_void, stream: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            let device = live_event(state, event_handle as usize)?.device;
            let queue = state.resolve(stream as usize)?;
            // The driver: "the event and stream must be in the same context".
            if state.queues[queue].device != device {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            state.check_legacy_use(queue)?;
            let recorded = match state.queues[queue].capture {
                Some(capture) if state.captures[capture].invalidated => {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                }
                Some(capture) => Recorded::Captured {
                    capture,
                    stream: queue,
                },
                None => Recorded::At(state.queues[queue].tail.clone()),
            };
            live_event(state, event_handle as usize)?.recorded = recorded;
            Ok(())
        })
    })
}

/// # Safety
///
/// None (handles are looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(
    handle: *mut c_void,
    event_handle: *mut c_void,
    flags: c_uint,
) -> CuResult {
    entry(|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        with_state(|state| {
            let recorded = live_event(state, event_handle as usize)?.recorded.clone();
            // A stream may wait on an event of another device.
            let queue = state.resolve(handle as usize)?;
            state.check_legacy_use(queue)?;
            let own = state.queues[queue].capture;
            match (recorded, own) {
                (Recorded::Never, _) => {}
                (Recorded::At(clock), None) => state.enqueue(queue, Some(&clock), &[], None)?,
                (Recorded::At(_), Some(capture)) => {
                    // An event from outside the capture.
                    state.invalidate(capture);
                    return Err(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
                }
                (Recorded::Captured { capture, .. }, _) if state.captures[capture].invalidated => {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                }
                (Recorded::Captured { capture, .. }, None) => {
                    if state.is_legacy(queue) {
                        // The legacy stream cannot join a capture.
                        state.invalidate(capture);
                        return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
                    }
                    // The stream joins the capture (a fork, to be joined back).
                    state.queues[queue].capture = Some(capture);
                    let c = &mut state.captures[capture];
                    c.members.push(queue);
                    c.unjoined.insert(queue);
                }
                (Recorded::Captured { capture, stream }, Some(own)) if capture == own => {
                    let c = &mut state.captures[capture];
                    if c.invalidated {
                        return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                    }
                    if queue == c.origin {
                        c.unjoined.remove(&stream);
                    }
                }
                (Recorded::Captured { capture, .. }, Some(own)) => {
                    state.invalidate(capture);
                    state.invalidate(own);
                    return Err(CUDA_ERROR_STREAM_CAPTURE_MERGE);
                }
            }
            let q = &mut state.queues[queue];
            match q.key {
                Key::Created(_) => q.waits += 1,
                _ => state.default_waits[q.device] += 1,
            }
            Ok(())
        })
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventSynchronize(event_handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(
            |state| match live_event(state, event_handle as usize)?.recorded.clone() {
                Recorded::Never => Ok(()),
                Recorded::Captured { .. } => Err(CUDA_ERROR_CAPTURED_EVENT),
                Recorded::At(clock) => {
                    for (&queue, &count) in &clock {
                        state.run(queue, count);
                    }
                    state.observe(&clock);
                    Ok(())
                }
            },
        )
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(event_handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            // A pending wait on it keeps what it recorded (the driver's rule).
            live_event(state, event_handle as usize)?.destroyed = true;
            Ok(())
        })
    })
}
