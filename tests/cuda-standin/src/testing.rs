//! The test-only entry points (`standin_*`): memory and streams made
//! without a context, simulated kernels, host reads, and the counts tests
//! assert (races, refusals, synchronisations, waits).

use std::ffi::{c_int, c_uint};
use std::sync::atomic::Ordering;

use crate::context::CURRENT;
use crate::memory::{allocate, driver_address, freed, live};
use crate::state::{Key, Work, with_state};
use crate::streams::new_stream;
use crate::{
    CU_STREAM_NON_BLOCKING, CUDA_ERROR_INVALID_VALUE, CuResult, DEVICES, REFUSALS, entry,
    test_entry,
};

/// Test entry: `bytes` of memory on `device`, of `kind` 0 (device memory,
/// mapped `PROT_NONE`: the host cannot touch it), 1 (pinned host memory) or
/// 2 (managed memory); 0 on failure. Never freed.
#[unsafe(no_mangle)]
pub extern "C" fn standin_alloc(device: c_int, bytes: usize, kind: c_int) -> usize {
    test_entry(0, || match usize::try_from(device) {
        Ok(device) if device < DEVICES && (0..=2).contains(&kind) => {
            allocate(device, bytes, kind).unwrap_or(0)
        }
        _ => 0,
    })
}

/// Test entry: a new blocking stream of `device` (no context needed); 0 for
/// no such device.
#[unsafe(no_mangle)]
pub extern "C" fn standin_stream_create(device: c_int) -> usize {
    standin_stream_create_with_flags(device, 0)
}

/// Test entry: a new stream of `device` with `cuStreamCreate`'s `flags`
/// (`CU_STREAM_NON_BLOCKING`, 1, or 0); 0 for no such device or flags.
#[unsafe(no_mangle)]
pub extern "C" fn standin_stream_create_with_flags(device: c_int, flags: c_uint) -> usize {
    test_entry(0, || match usize::try_from(device) {
        Ok(device) if device < DEVICES && flags & !CU_STREAM_NON_BLOCKING == 0 => {
            new_stream(device, flags != 0)
        }
        _ => 0,
    })
}

/// Test entry: enqueues on `stream` (a handle, as `cuStreamSynchronize`
/// takes it) a simulated kernel that writes the `len` bytes at `bytes`
/// (copied now) to `address` when it runs; a `CUresult`.
///
/// # Safety
///
/// `bytes` is readable for `len` bytes; `[address, address + len)` is
/// writable host memory (or stand-in memory, device memory written through
/// the driver's mapping) until the write has run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn standin_enqueue_write(
    stream: usize,
    address: usize,
    bytes: *const u8,
    len: usize,
) -> CuResult {
    entry(|| {
        if bytes.is_null() || len == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: readable for `len` bytes (the caller's contract).
        let data = unsafe { std::slice::from_raw_parts(bytes, len) }.to_vec();
        with_state(|state| {
            let queue = state.resolve(stream)?;
            state.enqueue(
                queue,
                None,
                &[(address, len, true)],
                Some(Work::Write {
                    to: address,
                    bytes: data,
                }),
            )
        })
    })
}

/// Test entry: enqueues on `stream` a simulated kernel that reads
/// `[address, address + len)` (it races with unordered writes); a `CUresult`.
#[unsafe(no_mangle)]
pub extern "C" fn standin_enqueue_read(stream: usize, address: usize, len: usize) -> CuResult {
    entry(|| {
        with_state(|state| {
            let queue = state.resolve(stream)?;
            state.enqueue(queue, None, &[(address, len, false)], None)
        })
    })
}

/// Test entry: the host reads `[address, address + len)` now; returns the
/// races this read makes (writes to it the host has not waited for), which
/// are also counted in `standin_races`.
#[unsafe(no_mangle)]
pub extern "C" fn standin_host_read(address: usize, len: usize) -> usize {
    test_entry(0, || {
        with_state(|state| state.host_access("a host read", address, len, false))
    })
}

/// Test entry: the host reads `[address, address + len)` through the
/// driver's mapping (device memory too: what a copy to the host would
/// give) into `out`, now; returns the races this read makes, as
/// `standin_host_read` does. Stand-in memory only: `usize::MAX` for an
/// address in no live allocation.
///
/// # Safety
///
/// `out` is writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn standin_read(address: usize, out: *mut u8, len: usize) -> usize {
    test_entry(usize::MAX, || {
        if out.is_null() || live(address, len).is_none() {
            return usize::MAX;
        }
        with_state(|state| {
            let races = state.host_access("a host read", address, len, false);
            let from = driver_address(address, len);
            // SAFETY: `from` is readable for `len` bytes (a live stand-in
            // allocation, through the driver's mapping), `out` writable
            // (the caller's contract).
            unsafe { std::ptr::copy(from as *const u8, out, len) };
            races
        })
    })
}

/// Test entry: whether `address` is the start of a live allocation (1), of
/// a freed one (0), or of none (`usize::MAX`).
#[unsafe(no_mangle)]
pub extern "C" fn standin_allocated(address: usize) -> usize {
    test_entry(usize::MAX, || match live(address, 0) {
        Some(a) if a.start == address => 1,
        _ if freed(address) => 0,
        _ => usize::MAX,
    })
}

/// Test entry: how many `cuCtxSynchronize` calls `device` had.
#[unsafe(no_mangle)]
pub extern "C" fn standin_context_syncs(device: c_int) -> usize {
    test_entry(usize::MAX, || {
        let device = usize::try_from(device).ok().filter(|&d| d < DEVICES);
        device.map_or(0, |d| with_state(|state| state.context_syncs[d]))
    })
}

/// Test entry: how many races were recorded, since the start.
#[unsafe(no_mangle)]
pub extern "C" fn standin_races() -> usize {
    test_entry(usize::MAX, || with_state(|state| state.races))
}

/// Test entry: how many enqueued writes to `[address, address + len)` have
/// not run yet.
#[unsafe(no_mangle)]
pub extern "C" fn standin_pending(address: usize, len: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            state
                .queues
                .iter()
                .flat_map(|q| &q.ops[q.done..])
                .filter_map(|op| match &op.work {
                    Some(Work::Write { to, bytes }) => Some((*to, bytes.len())),
                    Some(Work::Copy { to, len, .. }) => Some((*to, *len)),
                    None => None,
                })
                .filter(|&(start, written)| {
                    start < address.saturating_add(len) && address < start.saturating_add(written)
                })
                .count()
        })
    })
}

/// Test entry: how many `cuStreamSynchronize` calls `stream` had.
#[unsafe(no_mangle)]
pub extern "C" fn standin_syncs(handle: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            let queue = state.keys.get(&Key::Created(handle)).copied();
            queue.map_or(0, |q| state.queues[q].syncs)
        })
    })
}

/// Test entry: how many `cuStreamWaitEvent` calls made `stream` wait.
#[unsafe(no_mangle)]
pub extern "C" fn standin_waits(handle: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            let queue = state.keys.get(&Key::Created(handle)).copied();
            queue.map_or(0, |q| state.queues[q].waits)
        })
    })
}

/// Test entry: how many waits `device`'s default streams (0, 1, 2) made.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_waits(device: c_int) -> usize {
    test_entry(usize::MAX, || {
        let device = usize::try_from(device).ok().filter(|&d| d < DEVICES);
        device.map_or(0, |d| with_state(|state| state.default_waits[d]))
    })
}

/// Test entry: how many synchronisations of `device`'s default streams (0, 1, 2) ran.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_syncs(device: c_int) -> usize {
    test_entry(usize::MAX, || {
        let device = usize::try_from(device).ok().filter(|&d| d < DEVICES);
        device.map_or(0, |d| with_state(|state| state.default_syncs[d]))
    })
}

/// Test entry: how many calls were refused with an error, since the start.
#[unsafe(no_mangle)]
pub extern "C" fn standin_refusals() -> usize {
    REFUSALS.load(Ordering::Relaxed)
}

/// Test entry: the depth of this thread's context stack.
#[unsafe(no_mangle)]
pub extern "C" fn standin_context_depth() -> usize {
    CURRENT.try_with(|stack| stack.borrow().len()).unwrap_or(0)
}
