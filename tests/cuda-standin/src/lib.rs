//! A stand-in for the CUDA driver API (`libcuda`), for tests on machines
//! without a GPU. It implements the entry points pyo3-dlpack calls, with the
//! driver's rules and error codes where the crate can get them wrong:
//!
//! - two devices, each with a primary context; a per-thread stack of
//!   current contexts (`cuCtxPushCurrent_v2`/`cuCtxPopCurrent_v2`);
//! - calls that need a current context (`cuEventCreate`, `cuStreamCreate`,
//!   anything on the legacy or per-thread default stream, handles 0, 1, 2)
//!   fail with `CUDA_ERROR_INVALID_CONTEXT` without one;
//! - an event belongs to the device of the context current when it was made;
//!   recording it on a stream of another device fails with
//!   `CUDA_ERROR_INVALID_HANDLE`, as the driver does;
//! - device memory (`standin_alloc`, kind 0) is mapped `PROT_NONE`: any host
//!   read or write of it crashes the test at once (the driver's work reaches
//!   it through a second, readable mapping of the same pages, which
//!   `standin_read` reads); pinned (1) and managed (2) memory is readable; `cuPointerGetAttribute` answers the device ordinal,
//!   whether memory is managed, and its memory type.
//!
//! **Stream work.** Every stream is a queue: each created stream, and per
//! device the legacy default stream (handles 0 and 1) and each thread's
//! per-thread default stream (2). Tests enqueue simulated kernels
//! (`standin_enqueue_write`: "write these bytes there"; `standin_enqueue_read`).
//! Work runs only when something orders it: `cuStreamSynchronize` runs its
//! stream's queue and everything that queue depends on, `cuEventSynchronize`
//! what the event's recorded point depends on. With `STANDIN_SEED` set, a
//! seeded scheduler also runs ready work early, at any driver call.
//! Dependencies are vector clocks (per stream, how many of its operations
//! are ordered before): an operation depends on its stream's earlier ones;
//! `cuEventRecord` takes the stream's clock so far, and `cuStreamWaitEvent`
//! enqueues a wait that depends on it. The legacy default stream's implicit
//! synchronisation: an operation on it depends on all earlier work of the
//! blocking streams of its context (created without `CU_STREAM_NON_BLOCKING`,
//! and the per-thread default streams), and an operation on a blocking stream
//! on all earlier work of the legacy stream; non-blocking streams take part
//! in neither. (A *synchronisation* of the legacy stream is no operation on
//! it: it waits for the legacy stream's own queue only, the weaker reading.)
//! Work the host has waited for (a stream or event synchronisation) is
//! ordered before everything enqueued afterwards.
//!
//! **Races.** An access (an enqueued write or read, or a host read the test
//! reports with `standin_host_read` at the point the host reads) races with
//! an earlier write (or, for a write, an earlier read) of overlapping memory
//! on another stream that it is not ordered after; each race is counted
//! (`standin_races`) and described on standard error. Whether the work
//! happened to run already does not matter, only the ordering does.
//!
//! **Capture.** `cuStreamBeginCapture_v2` makes a stream capture: its work is
//! recorded, not run (the graph is never launched); synchronising a capturing
//! stream fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; any use of the
//! legacy stream while a blocking stream of its context captures fails with
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`; a stream waiting for an event recorded
//! in a capture joins it (and must be joined back into the origin stream
//! before `cuStreamEndCapture`, else `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`); a
//! capturing stream waiting for an event recorded outside it fails with
//! `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`. Each of these errors invalidates the
//! capture: later work on its streams fails with
//! `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, and so does `cuStreamEndCapture`.
//! The capture modes' restrictions on other threads' calls are not modelled.
//!
//! `STANDIN_INIT_ERROR` set to a `CUresult` makes `cuInit` fail with it (a
//! driver that finds no usable GPU: 100, `CUDA_ERROR_NO_DEVICE`), read at
//! each call, so a process can load the stand-in first and fail later.
//!
//! Every refused call is counted (`standin_refusals`), and synchronisations
//! and waits per stream (`standin_syncs`, `standin_waits`), so tests assert
//! what was ordered and that nothing was refused. Test-only entry points are
//! named `standin_*`. No entry point unwinds: a panic becomes
//! `CUDA_ERROR_UNKNOWN`. Loaded by explicit path only (never from the library
//! path), so no framework's CUDA runtime finds it.
//!
//! Modules: `context` (devices, primary contexts, the current-context
//! stack), `memory` (allocations, pointer attributes), `state` (streams
//! as queues, enqueueing) and `scheduler` (running them), `clock` (vector
//! clocks and race detection), `streams`, `events`, `capture` (the
//! entry points of each), `transfers` (allocation, freeing and copies, as
//! cudarc makes them), and `testing` (the `standin_*` entry points).

use std::ffi::{c_int, c_uint};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

mod capture;
mod clock;
mod context;
mod events;
mod memory;
mod scheduler;
mod state;
mod streams;
mod testing;
mod transfers;

pub(crate) type CuResult = c_int;
pub(crate) const CUDA_SUCCESS: CuResult = 0;
pub(crate) const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
pub(crate) const CUDA_ERROR_NOT_INITIALIZED: CuResult = 3;
pub(crate) const CUDA_ERROR_INVALID_DEVICE: CuResult = 101;
pub(crate) const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;
pub(crate) const CUDA_ERROR_INVALID_HANDLE: CuResult = 400;
pub(crate) const CUDA_ERROR_ILLEGAL_STATE: CuResult = 401;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CuResult = 900;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: CuResult = 901;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_MERGE: CuResult = 902;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: CuResult = 903;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_UNJOINED: CuResult = 904;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_ISOLATION: CuResult = 905;
pub(crate) const CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: CuResult = 906;
pub(crate) const CUDA_ERROR_CAPTURED_EVENT: CuResult = 907;
pub(crate) const CUDA_ERROR_UNKNOWN: CuResult = 999;

/// The devices the stand-in has (ordinals 0 and 1).
pub(crate) const DEVICES: usize = 2;
pub(crate) const CU_STREAM_NON_BLOCKING: c_uint = 1;

/// Calls refused with an error, since the start (`standin_refusals`).
pub(crate) static REFUSALS: AtomicUsize = AtomicUsize::new(0);

/// `code`, counted as a refusal when it is an error.
pub(crate) fn refuse(code: CuResult) -> CuResult {
    if code != CUDA_SUCCESS {
        REFUSALS.fetch_add(1, Ordering::Relaxed);
    }
    code
}

/// Runs an entry point's body: its error counted, a panic made
/// `CUDA_ERROR_UNKNOWN` (nothing unwinds across the C ABI).
pub(crate) fn entry(body: impl FnOnce() -> Result<(), CuResult>) -> CuResult {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(CUDA_ERROR_UNKNOWN));
    refuse(outcome.err().unwrap_or(CUDA_SUCCESS))
}

/// A test entry's body, `fallback` if it panics.
pub(crate) fn test_entry<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}
