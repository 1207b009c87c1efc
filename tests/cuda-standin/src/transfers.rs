//! Allocation and copies, as cudarc makes them: `cuMemAlloc_v2` and
//! `cuMemFree_v2` (the host's), `cuMemAllocAsync` and `cuMemFreeAsync`
//! (stream-ordered), and copies between host and device queued on a stream.
//!
//! Stream-ordered allocation and freeing are operations on their stream that
//! write the whole allocation: memory used on another stream not ordered
//! after the allocation, or not ordered before the free, is a race. A copy
//! reads its source and writes its destination when it runs (device memory
//! through the driver's mapping). Pageable host memory follows the driver's
//! rules: a copy from it first synchronises the stream and takes the bytes
//! at the call; a copy to it returns only once it ran.

use std::ffi::{c_int, c_void};

use crate::context::current_device;
use crate::memory::{allocate, free, live};
use crate::state::{State, Work, with_state};
use crate::{CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE, CuResult, entry};

/// Device memory (kind 0).
const DEVICE: c_int = 0;

/// New device memory of `bytes` on the current context's device.
fn allocate_device(bytes: usize) -> Result<usize, CuResult> {
    let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
    // The driver refuses 0 bytes with CUDA_ERROR_INVALID_VALUE.
    allocate(device, bytes, DEVICE).ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// An allocation entry point's body: a NULL `address` refused, else the
/// start of what `allocate` made written there.
///
/// # Safety
///
/// `address` is NULL or writable.
unsafe fn hand_out(
    address: *mut u64,
    allocate: impl FnOnce() -> Result<usize, CuResult>,
) -> CuResult {
    entry(|| {
        if address.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let start = allocate()?;
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { address.write(start as u64) };
        Ok(())
    })
}

/// # Safety
///
/// `address` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(address: *mut u64, bytes: usize) -> CuResult {
    // SAFETY: `address` is writable (the caller's contract).
    unsafe { hand_out(address, || allocate_device(bytes)) }
}

/// Pinned host memory (kind 1), as the current context's device allocates it.
///
/// # Safety
///
/// `address` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(address: *mut *mut c_void, bytes: usize) -> CuResult {
    let allocate_pinned = || {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        allocate(device, bytes, 1).ok_or(CUDA_ERROR_INVALID_VALUE)
    };
    // SAFETY: `address` is writable (the caller's contract), for a pointer,
    // which is a `u64` here.
    unsafe { hand_out(address.cast(), allocate_pinned) }
}

/// Managed memory (kind 2) of the current context's device.
///
/// # Safety
///
/// `address` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    address: *mut u64,
    bytes: usize,
    _flags: u32,
) -> CuResult {
    let allocate_managed = || {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        allocate(device, bytes, 2).ok_or(CUDA_ERROR_INVALID_VALUE)
    };
    // SAFETY: `address` is writable (the caller's contract).
    unsafe { hand_out(address, allocate_managed) }
}

/// Frees pinned host memory `cuMemAllocHost_v2` allocated.
///
/// # Safety
///
/// None (the address is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(address: *mut c_void) -> CuResult {
    // SAFETY: nothing is dereferenced.
    unsafe { cuMemFree_v2(address as u64) }
}

/// # Safety
///
/// `address` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(
    address: *mut u64,
    bytes: usize,
    stream: *mut c_void,
) -> CuResult {
    let allocate = || {
        with_state(|state| {
            let queue = state.resolve(stream as usize)?;
            let start = allocate_device(bytes)?;
            state.enqueue(queue, None, &[(start, bytes, true)], None)?;
            Ok(start)
        })
    };
    // SAFETY: `address` is writable (the caller's contract).
    unsafe { hand_out(address, allocate) }
}

/// The live allocation starting at `address`, freed now.
fn free_allocation(address: u64) -> Result<(usize, usize), CuResult> {
    let start = usize::try_from(address).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
    let found = free(start).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    Ok((found.start, found.len))
}

/// Frees memory at once: the stand-in's strict reading has the host write
/// it, so work using it that the host has not waited for is a race.
///
/// # Safety
///
/// None (the address is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(address: u64) -> CuResult {
    entry(|| {
        current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        with_state(|state| {
            let (start, len) = free_allocation(address)?;
            state.host_access("a cuMemFree", start, len, true);
            Ok(())
        })
    })
}

/// # Safety
///
/// None (the address and handle are looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(address: u64, stream: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            let queue = state.resolve(stream as usize)?;
            let start = usize::try_from(address).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
            let found = live(start, 0)
                .filter(|a| a.start == start)
                .ok_or(CUDA_ERROR_INVALID_VALUE)?;
            state.enqueue(queue, None, &[(found.start, found.len, true)], None)?;
            free_allocation(address).map(drop)
        })
    })
}

/// Whether `[address, address + len)` is pinned or managed memory (the
/// driver copies it asynchronously), not pageable host memory.
fn page_locked(address: usize, len: usize) -> bool {
    live(address, len).is_some_and(|a| a.kind != DEVICE)
}

/// `[address, address + len)` of stand-in memory the copy's device side
/// names (device, pinned or managed memory: unified addressing).
fn device_side(address: u64, len: usize) -> Result<usize, CuResult> {
    let address = usize::try_from(address).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
    live(address, len)
        .map(|_| address)
        .ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// A copy's checks, in the driver's order: a current context and a stream;
/// nothing to copy for 0 bytes (`None`); the device side live stand-in
/// memory; the host side non-NULL. The stream's queue, the device address
/// and the host address.
fn copy_sides(
    state: &mut State,
    stream: *mut c_void,
    device: u64,
    host: *const c_void,
    bytes: usize,
) -> Result<Option<(usize, usize, usize)>, CuResult> {
    current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
    let queue = state.resolve(stream as usize)?;
    if bytes == 0 {
        return Ok(None);
    }
    let device = device_side(device, bytes)?;
    if host.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(Some((queue, device, host as usize)))
}

/// # Safety
///
/// `source` is readable for `bytes` bytes: pageable memory during the call,
/// pinned memory until the copy has run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    destination: u64,
    source: *const c_void,
    bytes: usize,
    stream: *mut c_void,
) -> CuResult {
    entry(|| {
        with_state(|state| {
            let Some((queue, to, from)) = copy_sides(state, stream, destination, source, bytes)?
            else {
                return Ok(());
            };
            if page_locked(from, bytes) {
                let accesses = [(from, bytes, false), (to, bytes, true)];
                let work = Work::Copy {
                    from,
                    to,
                    len: bytes,
                };
                return state.enqueue(queue, None, &accesses, Some(work));
            }
            // Pageable: the stream is synchronised first, and the bytes are
            // staged before the call returns.
            state.synchronize(queue)?;
            // SAFETY: readable for `bytes` bytes during the call (the
            // caller's contract).
            let staged = unsafe { std::slice::from_raw_parts(source.cast::<u8>(), bytes) };
            let work = Work::Write {
                to,
                bytes: staged.to_vec(),
            };
            state.enqueue(queue, None, &[(to, bytes, true)], Some(work))
        })
    })
}

/// # Safety
///
/// `destination` is writable for `bytes` bytes: pageable memory during the
/// call, pinned memory until the copy has run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    destination: *mut c_void,
    source: u64,
    bytes: usize,
    stream: *mut c_void,
) -> CuResult {
    entry(|| {
        with_state(|state| {
            let sides = copy_sides(state, stream, source, destination.cast_const(), bytes)?;
            let Some((queue, from, to)) = sides else {
                return Ok(());
            };
            let pinned = page_locked(to, bytes);
            let mut accesses = vec![(from, bytes, false)];
            if pinned {
                accesses.push((to, bytes, true));
            }
            let work = Work::Copy {
                from,
                to,
                len: bytes,
            };
            state.enqueue(queue, None, &accesses, Some(work))?;
            if pinned {
                Ok(())
            } else {
                // Pageable: the call returns once the copy has run.
                state.synchronize(queue)
            }
        })
    })
}
