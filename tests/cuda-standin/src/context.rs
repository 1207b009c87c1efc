//! Devices and their primary contexts: `cuInit`, the per-thread stack of
//! current contexts, and the calls that need one.

use std::cell::RefCell;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::{
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_INITIALIZED, CuResult, DEVICES, entry,
};

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// A primary context: its address is its handle.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) device: usize,
}

pub(crate) static CONTEXTS: [Context; DEVICES] = [Context { device: 0 }, Context { device: 1 }];

thread_local! {
    /// This thread's stack of current contexts (device ordinals).
    pub(crate) static CURRENT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// This thread's number (for its per-thread default streams).
    pub(crate) static THREAD: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
}

pub(crate) fn current_device() -> Option<usize> {
    // `try_with`: no panic once the thread's locals are torn down.
    CURRENT
        .try_with(|stack| stack.borrow().last().copied())
        .ok()
        .flatten()
}

pub(crate) fn initialized() -> Result<(), CuResult> {
    if INITIALIZED.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

/// # Safety
///
/// None (the C ABI of `cuInit`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CuResult {
    entry(|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // A machine whose driver finds no usable GPU (CUDA_ERROR_NO_DEVICE,
        // 100, say): `STANDIN_INIT_ERROR` is the code cuInit fails with,
        // read at each call.
        if let Some(code) = std::env::var("STANDIN_INIT_ERROR")
            .ok()
            .and_then(|code| code.parse::<CuResult>().ok())
        {
            return Err(code);
        }
        INITIALIZED.store(true, Ordering::Relaxed);
        Ok(())
    })
}

/// # Safety
///
/// `device` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    entry(|| {
        initialized()?;
        let index = usize::try_from(ordinal).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        if index >= DEVICES || device.is_null() {
            return Err(CUDA_ERROR_INVALID_DEVICE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { device.write(ordinal) };
        Ok(())
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    context: *mut *mut c_void,
    device: c_int,
) -> CuResult {
    entry(|| {
        initialized()?;
        let index = usize::try_from(device).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        let ctx = CONTEXTS.get(index).ok_or(CUDA_ERROR_INVALID_DEVICE)?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(std::ptr::from_ref(ctx).cast_mut().cast()) };
        Ok(())
    })
}

/// # Safety
///
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: c_int) -> CuResult {
    entry(|| {
        usize::try_from(device)
            .ok()
            .filter(|&d| d < DEVICES)
            .map(|_| ())
            .ok_or(CUDA_ERROR_INVALID_DEVICE)
    })
}

/// The device of a context handle.
pub(crate) fn context_device(context: *mut c_void) -> Option<usize> {
    CONTEXTS
        .iter()
        .find(|c| std::ptr::eq(*c, context.cast::<Context>()))
        .map(|c| c.device)
}

pub(crate) fn context_handle(device: usize) -> *mut c_void {
    CONTEXTS.get(device).map_or(std::ptr::null_mut(), |c| {
        std::ptr::from_ref(c).cast_mut().cast()
    })
}

/// # Safety
///
/// None (`context` is compared, never read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(context: *mut c_void) -> CuResult {
    entry(|| {
        let device = context_device(context).ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        CURRENT
            .try_with(|stack| stack.borrow_mut().push(device))
            .map_err(|_| CUDA_ERROR_INVALID_CONTEXT)
    })
}

/// # Safety
///
/// `context` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(context: *mut *mut c_void) -> CuResult {
    entry(|| {
        let device = CURRENT
            .try_with(|stack| stack.borrow_mut().pop())
            .ok()
            .flatten()
            .ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if !context.is_null() {
            // SAFETY: non-NULL and writable (the caller's contract).
            unsafe { context.write(context_handle(device)) };
        }
        Ok(())
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(context: *mut *mut c_void) -> CuResult {
    entry(|| {
        let current = current_device().map_or(std::ptr::null_mut(), context_handle);
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(current) };
        Ok(())
    })
}

/// # Safety
///
/// None (`context` is compared, never read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(context: *mut c_void) -> CuResult {
    entry(|| {
        // The driver: NULL pops the current context (if any); another
        // replaces the top of the stack, or is pushed on an empty one.
        let device = if context.is_null() {
            None
        } else {
            Some(context_device(context).ok_or(CUDA_ERROR_INVALID_CONTEXT)?)
        };
        CURRENT
            .try_with(|stack| {
                let mut stack = stack.borrow_mut();
                stack.pop();
                stack.extend(device);
            })
            .map_err(|_| CUDA_ERROR_INVALID_CONTEXT)
    })
}

const CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: c_int = 115;

/// Whether the devices have memory pools (`cuMemAllocAsync`): yes, unless
/// `STANDIN_MEMORY_POOLS=0` (a driver or GPU without them).
fn memory_pools() -> bool {
    std::env::var("STANDIN_MEMORY_POOLS").map_or(true, |v| v != "0")
}

/// The attributes asked of a device (cudarc: memory pools), others refused
/// with `CUDA_ERROR_INVALID_VALUE` so that a new caller shows.
///
/// # Safety
///
/// `value` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    device: c_int,
) -> CuResult {
    entry(|| {
        initialized()?;
        usize::try_from(device)
            .ok()
            .filter(|&d| d < DEVICES)
            .ok_or(CUDA_ERROR_INVALID_DEVICE)?;
        let answer = match attribute {
            CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED => c_int::from(memory_pools()),
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        if value.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { value.write(answer) };
        Ok(())
    })
}
