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
//!   read or write of it crashes the test at once; pinned (1) and managed (2)
//!   memory is readable; `cuPointerGetAttribute` answers the device ordinal,
//!   whether memory is managed, and its memory type.
//!
//! Stream work is not simulated yet: synchronisations and waits are
//! counted per stream (`standin_syncs`, `standin_waits`), and every refused
//! call is counted (`standin_refusals`), so tests assert what was ordered
//! and that nothing was refused. Test-only entry points are named
//! `standin_*`. Loaded by explicit path only (never from the library path),
//! so no framework's CUDA runtime finds it.

use std::cell::RefCell;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

type CuResult = c_int;
const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
const CUDA_ERROR_NOT_INITIALIZED: CuResult = 3;
const CUDA_ERROR_INVALID_DEVICE: CuResult = 101;
const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;
const CUDA_ERROR_INVALID_HANDLE: CuResult = 400;

const DEVICES: usize = 2;
const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;

static INITIALIZED: AtomicBool = AtomicBool::new(false);
/// Waits made on each device's legacy or per-thread default stream.
static DEFAULT_STREAM_WAITS: [AtomicUsize; DEVICES] = [const { AtomicUsize::new(0) }; DEVICES];
/// Synchronisations of each device's legacy or per-thread default stream.
static DEFAULT_STREAM_SYNCS: [AtomicUsize; DEVICES] = [const { AtomicUsize::new(0) }; DEVICES];
static REFUSALS: AtomicUsize = AtomicUsize::new(0);

/// A primary context: its address is its handle.
#[derive(Debug)]
struct Context {
    device: usize,
}

static CONTEXTS: [Context; DEVICES] = [Context { device: 0 }, Context { device: 1 }];

/// A stream made by `cuStreamCreate` or `standin_stream_create`; leaked, its
/// address is its handle.
#[derive(Debug)]
struct Stream {
    device: usize,
    syncs: AtomicUsize,
    waits: AtomicUsize,
}

/// An event; leaked, its address is its handle (destroyed ones are marked).
#[derive(Debug)]
struct Event {
    device: usize,
    destroyed: AtomicBool,
}

/// An allocation: `[start, start + len)`, its device and kind.
#[derive(Debug, Clone, Copy)]
struct Allocation {
    start: usize,
    len: usize,
    device: usize,
    kind: c_int,
}

static STREAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static EVENTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static ALLOCATIONS: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's stack of current contexts (device ordinals).
    static CURRENT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// `code`, counted as a refusal when it is an error.
fn refuse(code: CuResult) -> CuResult {
    if code != CUDA_SUCCESS {
        REFUSALS.fetch_add(1, Ordering::Relaxed);
    }
    code
}

fn current_device() -> Option<usize> {
    // `try_with`: no panic once the thread's locals are torn down.
    CURRENT
        .try_with(|stack| stack.borrow().last().copied())
        .ok()
        .flatten()
}

/// The known stream at `handle`.
fn stream(handle: usize) -> Option<&'static Stream> {
    let known = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    known.contains(&handle).then(|| {
        // SAFETY: a handle this library made from a leaked `Box<Stream>`.
        unsafe { &*(handle as *const Stream) }
    })
}

/// The device a stream handle's work runs on: the current context's for the
/// legacy (0, 1) and per-thread (2) default streams, else the stream's own.
fn stream_device(handle: usize) -> Result<usize, CuResult> {
    if handle <= 2 {
        return current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT);
    }
    stream(handle)
        .map(|s| s.device)
        .ok_or(CUDA_ERROR_INVALID_HANDLE)
}

fn event(handle: usize) -> Option<&'static Event> {
    let known = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
    known
        .contains(&handle)
        .then(|| {
            // SAFETY: a handle this library made from a leaked `Box<Event>`.
            unsafe { &*(handle as *const Event) }
        })
        .filter(|e| !e.destroyed.load(Ordering::Relaxed))
}

fn initialized() -> Result<(), CuResult> {
    if INITIALIZED.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

fn result(r: Result<(), CuResult>) -> CuResult {
    refuse(r.err().unwrap_or(CUDA_SUCCESS))
}

/// # Safety
///
/// None (the C ABI of `cuInit`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CuResult {
    if flags != 0 {
        return refuse(CUDA_ERROR_INVALID_VALUE);
    }
    INITIALIZED.store(true, Ordering::Relaxed);
    CUDA_SUCCESS
}

/// # Safety
///
/// `device` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    result((|| {
        initialized()?;
        let index = usize::try_from(ordinal).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        if index >= DEVICES || device.is_null() {
            return Err(CUDA_ERROR_INVALID_DEVICE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { device.write(ordinal) };
        Ok(())
    })())
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    context: *mut *mut c_void,
    device: c_int,
) -> CuResult {
    result((|| {
        initialized()?;
        let index = usize::try_from(device).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        let ctx = CONTEXTS.get(index).ok_or(CUDA_ERROR_INVALID_DEVICE)?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(std::ptr::from_ref(ctx).cast_mut().cast()) };
        Ok(())
    })())
}

/// # Safety
///
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: c_int) -> CuResult {
    let valid = usize::try_from(device).is_ok_and(|d| d < DEVICES);
    refuse(if valid {
        CUDA_SUCCESS
    } else {
        CUDA_ERROR_INVALID_DEVICE
    })
}

/// The device of a context handle.
fn context_device(context: *mut c_void) -> Option<usize> {
    CONTEXTS
        .iter()
        .find(|c| std::ptr::eq(*c, context.cast::<Context>()))
        .map(|c| c.device)
}

/// # Safety
///
/// None (`context` is compared, never read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(context: *mut c_void) -> CuResult {
    let Some(device) = context_device(context) else {
        return refuse(CUDA_ERROR_INVALID_CONTEXT);
    };
    match CURRENT.try_with(|stack| stack.borrow_mut().push(device)) {
        Ok(()) => CUDA_SUCCESS,
        Err(_) => refuse(CUDA_ERROR_INVALID_CONTEXT),
    }
}

/// # Safety
///
/// `context` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(context: *mut *mut c_void) -> CuResult {
    let Some(device) = CURRENT
        .try_with(|stack| stack.borrow_mut().pop())
        .ok()
        .flatten()
    else {
        return refuse(CUDA_ERROR_INVALID_CONTEXT);
    };
    if !context.is_null() {
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(std::ptr::from_ref(&CONTEXTS[device]).cast_mut().cast()) };
    }
    CUDA_SUCCESS
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(context: *mut *mut c_void) -> CuResult {
    let current = current_device().map_or(std::ptr::null_mut(), |device| {
        std::ptr::from_ref(&CONTEXTS[device]).cast_mut().cast()
    });
    if context.is_null() {
        return refuse(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-NULL and writable (the caller's contract).
    unsafe { context.write(current) };
    CUDA_SUCCESS
}

/// # Safety
///
/// `data` is writable for the attribute's size (an int or unsigned int).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: c_int,
    pointer: u64,
) -> CuResult {
    result((|| {
        initialized()?;
        let address = pointer as usize;
        let allocations = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
        let found = allocations
            .iter()
            .find(|a| a.start <= address && address < a.start + a.len)
            .copied()
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let value: c_uint = match attribute {
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL => found.device as c_uint,
            CU_POINTER_ATTRIBUTE_IS_MANAGED => c_uint::from(found.kind == 2),
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE if found.kind == 1 => CU_MEMORYTYPE_HOST,
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE => CU_MEMORYTYPE_DEVICE,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        if data.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: writable for an int (the caller's contract); int and
        // unsigned int have one size.
        unsafe { data.cast::<c_uint>().write(value) };
        Ok(())
    })())
}

/// A new stream of `device`, leaked (its address is its handle).
fn new_stream(device: usize) -> usize {
    let handle = Box::into_raw(Box::new(Stream {
        device,
        syncs: AtomicUsize::new(0),
        waits: AtomicUsize::new(0),
    })) as usize;
    STREAMS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(handle);
    handle
}

/// # Safety
///
/// `stream` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, _flags: c_uint) -> CuResult {
    result((|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if stream.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { stream.write(new_stream(device) as *mut c_void) };
        Ok(())
    })())
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced unless known).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(handle: *mut c_void) -> CuResult {
    result((|| {
        let handle = handle as usize;
        let device = stream_device(handle)?;
        match stream(handle) {
            Some(stream) => stream.syncs.fetch_add(1, Ordering::Relaxed),
            None => DEFAULT_STREAM_SYNCS[device].fetch_add(1, Ordering::Relaxed),
        };
        Ok(())
    })())
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(
    handle: *mut c_void,
    context: *mut *mut c_void,
) -> CuResult {
    result((|| {
        let device = stream_device(handle as usize)?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(std::ptr::from_ref(&CONTEXTS[device]).cast_mut().cast()) };
        Ok(())
    })())
}

/// # Safety
///
/// `event` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(event: *mut *mut c_void, _flags: c_uint) -> CuResult {
    result((|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if event.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let handle = Box::into_raw(Box::new(Event {
            device,
            destroyed: AtomicBool::new(false),
        })) as usize;
        EVENTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(handle);
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { event.write(handle as *mut c_void) };
        Ok(())
    })())
}

/// # Safety
///
/// None (handles are looked up, never dereferenced unless known).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(event_handle: *mut c_void, stream: *mut c_void) -> CuResult {
    result((|| {
        let event = event(event_handle as usize).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        // The driver: "the event and stream must be in the same context".
        if stream_device(stream as usize)? != event.device {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        Ok(())
    })())
}

/// # Safety
///
/// None (handles are looked up, never dereferenced unless known).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(
    handle: *mut c_void,
    event_handle: *mut c_void,
    flags: c_uint,
) -> CuResult {
    result((|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        event(event_handle as usize).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        // A stream may wait on an event of another device.
        let device = stream_device(handle as usize)?;
        match stream(handle as usize) {
            Some(stream) => stream.waits.fetch_add(1, Ordering::Relaxed),
            None => DEFAULT_STREAM_WAITS[device].fetch_add(1, Ordering::Relaxed),
        };
        Ok(())
    })())
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced unless known).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(event_handle: *mut c_void) -> CuResult {
    result((|| {
        let event = event(event_handle as usize).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        event.destroyed.store(true, Ordering::Relaxed);
        Ok(())
    })())
}

unsafe extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
}

/// Test entry: `bytes` of memory on `device`, of `kind` 0 (device memory,
/// mapped `PROT_NONE`: the host cannot touch it), 1 (pinned host memory) or
/// 2 (managed memory); 0 on failure. Never freed.
#[unsafe(no_mangle)]
pub extern "C" fn standin_alloc(device: c_int, bytes: usize, kind: c_int) -> usize {
    const PROT_NONE: c_int = 0;
    const PROT_READ_WRITE: c_int = 3;
    const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    let Ok(device) = usize::try_from(device) else {
        return 0;
    };
    if device >= DEVICES || !(0..=2).contains(&kind) || bytes == 0 {
        return 0;
    }
    let prot = if kind == 0 {
        PROT_NONE
    } else {
        PROT_READ_WRITE
    };
    // SAFETY: an anonymous private mapping of `bytes`, kept for the process.
    let start = unsafe {
        mmap(
            std::ptr::null_mut(),
            bytes,
            prot,
            MAP_PRIVATE_ANONYMOUS,
            -1,
            0,
        )
    };
    if start as isize == -1 {
        return 0;
    }
    let start = start as usize;
    ALLOCATIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Allocation {
            start,
            len: bytes,
            device,
            kind,
        });
    start
}

/// Test entry: a new stream of `device` (no context needed); 0 for no such device.
#[unsafe(no_mangle)]
pub extern "C" fn standin_stream_create(device: c_int) -> usize {
    match usize::try_from(device) {
        Ok(device) if device < DEVICES => new_stream(device),
        _ => 0,
    }
}

/// Test entry: how many `cuStreamSynchronize` calls `stream` had.
#[unsafe(no_mangle)]
pub extern "C" fn standin_syncs(handle: usize) -> usize {
    stream(handle).map_or(0, |s| s.syncs.load(Ordering::Relaxed))
}

/// Test entry: how many `cuStreamWaitEvent` calls made `stream` wait.
#[unsafe(no_mangle)]
pub extern "C" fn standin_waits(handle: usize) -> usize {
    stream(handle).map_or(0, |s| s.waits.load(Ordering::Relaxed))
}

/// Test entry: how many waits `device`'s default streams (0, 1, 2) made.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_waits(device: c_int) -> usize {
    usize::try_from(device)
        .ok()
        .and_then(|d| DEFAULT_STREAM_WAITS.get(d))
        .map_or(0, |waits| waits.load(Ordering::Relaxed))
}

/// Test entry: how many synchronisations of `device`'s default streams (0, 1, 2) ran.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_syncs(device: c_int) -> usize {
    usize::try_from(device)
        .ok()
        .and_then(|d| DEFAULT_STREAM_SYNCS.get(d))
        .map_or(0, |syncs| syncs.load(Ordering::Relaxed))
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
