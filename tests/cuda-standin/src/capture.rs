//! Stream capture: captured work is recorded, never run; the driver's
//! restrictions (no synchronisation of a capturing stream, no legacy stream
//! while a blocking stream captures, no waits across a capture's boundary)
//! are refused and invalidate the capture.

use std::collections::BTreeSet;
use std::ffi::{c_int, c_void};

use crate::state::{State, with_state};
use crate::{
    CUDA_ERROR_ILLEGAL_STATE, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CuResult, entry,
};

const CU_STREAM_CAPTURE_STATUS_NONE: c_int = 0;
const CU_STREAM_CAPTURE_STATUS_ACTIVE: c_int = 1;
const CU_STREAM_CAPTURE_STATUS_INVALIDATED: c_int = 2;

#[derive(Debug)]
pub(crate) struct Capture {
    pub(crate) origin: usize,
    pub(crate) members: Vec<usize>,
    /// Streams that joined the capture and have not been joined back into
    /// the origin stream.
    pub(crate) unjoined: BTreeSet<usize>,
    pub(crate) invalidated: bool,
}

impl State {
    pub(crate) fn invalidate(&mut self, capture: usize) {
        if let Some(c) = self.captures.get_mut(capture) {
            c.invalidated = true;
        }
    }

    /// The captures of blocking streams of `queue`'s context, if `queue` is
    /// its legacy stream.
    pub(crate) fn legacy_conflicts(&self, queue: usize) -> Vec<usize> {
        if !self.is_legacy(queue) {
            return Vec::new();
        }
        let device = self.queues[queue].device;
        (0..self.queues.len())
            .filter(|&q| self.queues[q].device == device && self.is_blocking(q))
            .filter_map(|q| self.queues[q].capture)
            .collect()
    }

    /// Using the legacy stream of `queue`'s device while a blocking stream
    /// of it captures: `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`, and the captures
    /// are invalidated.
    pub(crate) fn check_legacy_use(&mut self, queue: usize) -> Result<(), CuResult> {
        let capturing = self.legacy_conflicts(queue);
        if capturing.is_empty() {
            return Ok(());
        }
        for capture in capturing {
            self.invalidate(capture);
        }
        Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    }
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(handle: *mut c_void, mode: c_int) -> CuResult {
    entry(|| {
        if !(0..=2).contains(&mode) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            if state.is_legacy(queue) {
                return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            }
            if state.queues[queue].capture.is_some() {
                return Err(CUDA_ERROR_ILLEGAL_STATE);
            }
            state.queues[queue].capture = Some(state.captures.len());
            state.captures.push(Capture {
                origin: queue,
                members: vec![queue],
                unjoined: BTreeSet::new(),
                invalidated: false,
            });
            Ok(())
        })
    })
}

/// # Safety
///
/// `graph` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(
    handle: *mut c_void,
    graph: *mut *mut c_void,
) -> CuResult {
    entry(|| {
        if graph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let outcome = with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            let capture = state.queues[queue]
                .capture
                .ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
            if state.captures[capture].origin != queue {
                state.invalidate(capture);
                return Err(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
            }
            let members = std::mem::take(&mut state.captures[capture].members);
            for member in members {
                state.queues[member].capture = None;
            }
            let c = &state.captures[capture];
            if c.invalidated {
                Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            } else if !c.unjoined.is_empty() {
                Err(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
            } else {
                Ok(())
            }
        });
        let made = match outcome {
            Ok(()) => Box::into_raw(Box::new(0u8)).cast(),
            Err(_) => std::ptr::null_mut(),
        };
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { graph.write(made) };
        outcome
    })
}

/// # Safety
///
/// `status` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(handle: *mut c_void, status: *mut c_int) -> CuResult {
    entry(|| {
        if status.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let answer = with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            // A query: the legacy stream's answer is an error, which
            // invalidates nothing.
            if !state.legacy_conflicts(queue).is_empty() {
                return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
            }
            Ok::<_, CuResult>(match state.queues[queue].capture {
                None => CU_STREAM_CAPTURE_STATUS_NONE,
                Some(c) if state.captures[c].invalidated => CU_STREAM_CAPTURE_STATUS_INVALIDATED,
                Some(_) => CU_STREAM_CAPTURE_STATUS_ACTIVE,
            })
        })?;
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { status.write(answer) };
        Ok(())
    })
}

/// # Safety
///
/// None (the graph is never read; the stand-in keeps no graphs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(graph: *mut c_void) -> CuResult {
    entry(|| {
        if graph.is_null() {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}
