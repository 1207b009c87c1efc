//! The CUDA driver API, loaded at run time from `libcuda.so.1` (`nvcuda.dll`
//! on Windows; `library` is the one platform-specific part), never linked:
//! the crate has no build-time CUDA dependency, and a machine without a GPU
//! gets a clear error only where CUDA is needed. The variable
//! `PYO3_DLPACK_CUDA_DRIVER` names another library to load instead (a driver in
//! an unusual place; the tests' stand-in driver).
//!
//! Used by `__cuda_array_interface__` imports (the device of a pointer,
//! ordering the consumer after the producer's stream), exports of device
//! memory that names its stream, exchange-API imports, and host copies of
//! device memory. Every call that
//! needs a context runs with the device's primary context current (retained
//! once per device, pushed before, popped after), on whatever thread: a
//! Rust thread or a fresh Python thread has none, and on a machine of
//! several GPUs the current one may be another device's.
//!
//! The loader and the calls are feature `cuda-driver` (on by default).
//! Without it every use finds no driver, as on a machine without one: the
//! same clear error where CUDA is needed, and no code for it in the binary.

#[cfg(feature = "cuda-driver")]
mod library;
#[cfg(feature = "cuda-driver")]
mod loaded;

use crate::error::InterfaceError;

/// What a `__cuda_array_interface__` import needs from CUDA. A trait so the
/// decisions around it are tested on machines without a GPU.
pub(crate) trait Cuda: Sync {
    /// The device ordinal of a device pointer, and whether it is managed
    /// (unified) memory.
    #[cfg(feature = "non-dlpack-import")]
    fn pointer_device(&self, ptr: usize) -> Result<(i32, bool), InterfaceError>;
    /// Blocks until the work queued on `stream`, a stream of device
    /// `device`, is done.
    fn synchronize(&self, device: i32, stream: usize) -> Result<(), InterfaceError>;
    /// Makes `consumer` wait for the work queued on `producer` so far (both
    /// streams of device `device`), without blocking the host (an event
    /// recorded on one, waited on by the other).
    fn wait(&self, device: i32, producer: usize, consumer: usize) -> Result<(), InterfaceError>;
    /// Whether `stream`, a stream of device `device`, is being captured into
    /// a CUDA graph.
    #[cfg(feature = "exchange-api")]
    fn stream_capturing(&self, device: i32, stream: usize) -> Result<bool, InterfaceError>;
    /// Copies `len` bytes of device `device`'s memory at `src` to the host
    /// memory at `dst`, after the work queued on `stream` (a stream of that
    /// device) so far, and returns once they are there.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `len` bytes and nothing else accesses
    /// it until this returns.
    unsafe fn copy_to_host(
        &self,
        device: i32,
        src: usize,
        len: usize,
        stream: usize,
        dst: *mut u8,
    ) -> Result<(), InterfaceError>;
    /// Allocates `src.len()` (> 0) bytes of `kind` with device `device`'s
    /// context and copies `src` there; returns the pointer once the bytes
    /// are there (the copy is synchronous: nothing else is ordered after it).
    #[cfg(feature = "pickle")]
    fn upload(&self, kind: Memory, device: i32, src: &[u8]) -> Result<u64, InterfaceError>;
    /// Frees memory [`upload`](Self::upload) allocated.
    ///
    /// # Safety
    ///
    /// `ptr` came from `upload` with the same `kind` and `device`, is freed
    /// once, and nothing uses it afterwards.
    #[cfg(feature = "pickle")]
    unsafe fn free(&self, kind: Memory, device: i32, ptr: u64) -> Result<(), InterfaceError>;
}

/// The kinds of CUDA memory the crate allocates (restoring pickled tensors).
#[cfg(feature = "pickle")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Memory {
    /// Device memory (`cuMemAlloc_v2`): `cuda:N`.
    Device,
    /// Page-locked host memory (`cuMemAllocHost_v2`): `cuda_host:0`.
    Pinned,
    /// Managed memory (`cuMemAllocManaged`): `cuda_managed:N`.
    Managed,
}

/// The loaded driver, or why it could not be loaded (remembered: the first
/// answer stored is kept for the process); `purpose` says what needed it,
/// for the error. No lock is held while loading (a `fork` meanwhile would
/// copy it held: DESIGN.md invariant 10): threads racing here may each
/// load, and all keep the first answer stored (the others are leaked: a
/// table of function pointers, the library stays loaded anyway).
#[cfg(feature = "cuda-driver")]
pub(crate) fn driver(purpose: &'static str) -> Result<&'static dyn Cuda, InterfaceError> {
    use std::sync::atomic::{AtomicPtr, Ordering};
    type Loaded = Result<loaded::Driver, String>;
    static DRIVER: AtomicPtr<Loaded> = AtomicPtr::new(std::ptr::null_mut());
    let mut found = DRIVER.load(Ordering::Acquire);
    if found.is_null() {
        let mine = Box::into_raw(Box::new(loaded::load()));
        found = match DRIVER.compare_exchange(
            std::ptr::null_mut(),
            mine,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => mine,
            Err(first) => first,
        };
    }
    // SAFETY: a non-NULL pointer in `DRIVER` came from `Box::into_raw`, was
    // published with Release (read with Acquire) and is never freed.
    match unsafe { &*found } {
        Ok(driver) => Ok(driver),
        Err(reason) => Err(InterfaceError::NoCudaDriver {
            purpose,
            reason: reason.clone(),
        }),
    }
}

/// No driver: this build has none (feature `cuda-driver` off); `purpose`
/// says what needed it, for the error.
#[cfg(not(feature = "cuda-driver"))]
#[inline(always)]
pub(crate) fn driver(purpose: &'static str) -> Result<&'static dyn Cuda, InterfaceError> {
    Err(no_driver(purpose))
}

#[cfg(not(feature = "cuda-driver"))]
#[cold]
#[inline(never)]
fn no_driver(purpose: &'static str) -> InterfaceError {
    InterfaceError::NoCudaDriver {
        purpose,
        reason: "this build has no CUDA support (pyo3-dlpack's feature `cuda-driver` is off)"
            .to_owned(),
    }
}
