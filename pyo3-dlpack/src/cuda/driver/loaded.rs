//! The driver itself (feature `cuda-driver`): its functions resolved from
//! the library at run time, and the [`Cuda`] calls made with them.

use std::ffi::{CStr, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "pickle")]
use super::Memory;
use super::{Cuda, library};
use crate::error::InterfaceError;

type CuResult = c_int;
const CUDA_SUCCESS: CuResult = 0;
#[cfg(feature = "non-dlpack-import")]
const CU_POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
#[cfg(feature = "non-dlpack-import")]
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_EVENT_DISABLE_TIMING: c_uint = 2;

/// Devices whose primary context is remembered (ordinals 0 to 63).
const CONTEXTS: usize = 64;

/// The driver functions used, resolved once, and the primary contexts
/// retained so far.
pub(super) struct Driver {
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    ctx_push: unsafe extern "C" fn(*mut c_void) -> CuResult,
    ctx_pop: unsafe extern "C" fn(*mut *mut c_void) -> CuResult,
    stream_get_ctx: unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> CuResult,
    /// Each device's retained primary context (by ordinal; 0 until
    /// retained), kept for the process.
    contexts: [AtomicUsize; CONTEXTS],
    #[cfg(feature = "non-dlpack-import")]
    pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, u64) -> CuResult,
    stream_synchronize: unsafe extern "C" fn(*mut c_void) -> CuResult,
    stream_is_capturing: unsafe extern "C" fn(*mut c_void, *mut c_int) -> CuResult,
    event_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CuResult,
    event_record: unsafe extern "C" fn(*mut c_void, *mut c_void) -> CuResult,
    stream_wait_event: unsafe extern "C" fn(*mut c_void, *mut c_void, c_uint) -> CuResult,
    event_destroy: unsafe extern "C" fn(*mut c_void) -> CuResult,
    memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, u64, usize, *mut c_void) -> CuResult,
    #[cfg(feature = "pickle")]
    mem_alloc: unsafe extern "C" fn(*mut u64, usize) -> CuResult,
    #[cfg(feature = "pickle")]
    mem_free: unsafe extern "C" fn(u64) -> CuResult,
    #[cfg(feature = "pickle")]
    mem_alloc_host: unsafe extern "C" fn(*mut *mut c_void, usize) -> CuResult,
    #[cfg(feature = "pickle")]
    mem_free_host: unsafe extern "C" fn(*mut c_void) -> CuResult,
    #[cfg(feature = "pickle")]
    mem_alloc_managed: unsafe extern "C" fn(*mut u64, usize, c_uint) -> CuResult,
    #[cfg(feature = "pickle")]
    memcpy_htod_async: unsafe extern "C" fn(u64, *const c_void, usize, *mut c_void) -> CuResult,
}

fn check(call: &'static str, code: CuResult) -> Result<(), InterfaceError> {
    if code == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(InterfaceError::Cuda { call, code })
    }
}

impl Driver {
    /// Device `ordinal`'s primary context, retained once and kept. No lock
    /// is held around the driver's calls (a `fork` meanwhile would copy it
    /// held: DESIGN.md invariant 10): threads racing for a device may each
    /// retain it, and all use the first context stored (a primary context is
    /// one per device; the extra retains are kept for the process, as the
    /// first is). Devices past [`CONTEXTS`] are retained at each call.
    fn primary_context(&self, ordinal: i32) -> Result<*mut c_void, InterfaceError> {
        let slot = usize::try_from(ordinal)
            .ok()
            .and_then(|index| self.contexts.get(index));
        let known = slot.map_or(0, |slot| slot.load(Ordering::Acquire));
        if known != 0 {
            return Ok(known as *mut c_void);
        }
        let mut device: c_int = 0;
        // SAFETY: a resolved `cuDeviceGet` writing a live local.
        check("cuDeviceGet", unsafe {
            (self.device_get)(&raw mut device, ordinal)
        })?;
        let mut context: *mut c_void = std::ptr::null_mut();
        // SAFETY: a resolved `cuDevicePrimaryCtxRetain` writing a live local;
        // the context stays retained for the process (never released).
        let code = unsafe { (self.primary_ctx_retain)(&raw mut context, device) };
        check("cuDevicePrimaryCtxRetain", code)?;
        let Some(slot) = slot else {
            return Ok(context);
        };
        Ok(
            match slot.compare_exchange(0, context as usize, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => context,
                Err(first) => first as *mut c_void,
            },
        )
    }

    /// The context work on `stream` belongs to: a stream's own (it may be
    /// another device's than the memory's, or not a primary context), or for
    /// CUDA's legacy and per-thread default streams (0, 1, 2) device
    /// `ordinal`'s primary context.
    fn context_of(&self, ordinal: i32, stream: usize) -> Result<*mut c_void, InterfaceError> {
        if stream <= 2 {
            return self.primary_context(ordinal);
        }
        let mut context: *mut c_void = std::ptr::null_mut();
        // SAFETY: a resolved `cuStreamGetCtx` writing a live local; the
        // handle is the producer's promise (a live stream: the driver cannot
        // tell a stale or made-up handle).
        let code = unsafe { (self.stream_get_ctx)(stream as *mut c_void, &raw mut context) };
        check("cuStreamGetCtx", code)?;
        Ok(context)
    }

    /// Runs `calls` with the context of `stream` (see `context_of`) current
    /// on this thread, then makes current again whatever was (also when
    /// they fail). Inlined around `calls` only: the pushing and popping are
    /// one copy for every call of the driver.
    #[inline]
    fn in_context(
        &self,
        ordinal: i32,
        stream: usize,
        calls: impl FnOnce() -> Result<(), InterfaceError>,
    ) -> Result<(), InterfaceError> {
        let context = self.push_context(ordinal, stream)?;
        self.pop_context(context, calls())
    }

    /// Makes the context of `stream` (see `context_of`) current on this
    /// thread: the context pushed.
    #[inline(never)]
    fn push_context(&self, ordinal: i32, stream: usize) -> Result<*mut c_void, InterfaceError> {
        let context = self.context_of(ordinal, stream)?;
        // SAFETY: a resolved `cuCtxPushCurrent_v2` with a live context (a
        // retained primary one, or a live stream's).
        check("cuCtxPushCurrent_v2", unsafe { (self.ctx_push)(context) })?;
        Ok(context)
    }

    /// Pops `context`, which [`push_context`](Self::push_context) pushed,
    /// making current again whatever was before it, after `calls` (what the
    /// calls made in it returned): their error first, else the pop's. Takes
    /// their result, so that the choice and the dropping of the other error
    /// are here once, not inlined around every call.
    #[inline(never)]
    fn pop_context(
        &self,
        context: *mut c_void,
        calls: Result<(), InterfaceError>,
    ) -> Result<(), InterfaceError> {
        calls.and(self.pop(context))
    }

    /// The pop itself of [`pop_context`](Self::pop_context).
    fn pop(&self, context: *mut c_void) -> Result<(), InterfaceError> {
        let mut popped: *mut c_void = std::ptr::null_mut();
        // SAFETY: a resolved `cuCtxPopCurrent_v2` writing a live local.
        check("cuCtxPopCurrent_v2", unsafe {
            (self.ctx_pop)(&raw mut popped)
        })?;
        // The calls push and pop nothing themselves: what is popped is ours.
        if popped != context {
            return Err(InterfaceError::Cuda {
                call: "cuCtxPopCurrent_v2 (another context than the one pushed)",
                code: -1,
            });
        }
        Ok(())
    }
}

impl Cuda for Driver {
    #[cfg(feature = "non-dlpack-import")]
    fn pointer_device(&self, ptr: usize) -> Result<(i32, bool), InterfaceError> {
        let mut ordinal: c_int = -1;
        // SAFETY: a resolved `cuPointerGetAttribute`; the output is a live
        // int, the size this attribute writes; the pointer is only looked up
        // by the driver, never read.
        let code = unsafe {
            (self.pointer_get_attribute)(
                (&raw mut ordinal).cast(),
                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr as u64,
            )
        };
        check("cuPointerGetAttribute", code)?;
        let mut managed: c_uint = 0;
        // SAFETY: as above; this attribute writes an unsigned int.
        let code = unsafe {
            (self.pointer_get_attribute)(
                (&raw mut managed).cast(),
                CU_POINTER_ATTRIBUTE_IS_MANAGED,
                ptr as u64,
            )
        };
        check("cuPointerGetAttribute", code)?;
        Ok((ordinal, managed != 0))
    }

    fn synchronize(&self, device: i32, stream: usize) -> Result<(), InterfaceError> {
        self.in_context(device, stream, || {
            // The handle is the producer's promise (a live stream as its
            // interface gave it; 1 and 2 are CUDA's legacy and per-thread
            // default streams of the current context, the device's).
            self.refuse_if_capturing(stream, "cuStreamSynchronize")?;
            // SAFETY: a resolved `cuStreamSynchronize`; the handle as above.
            let code = unsafe { (self.stream_synchronize)(stream as *mut c_void) };
            check("cuStreamSynchronize", code)
        })
    }

    fn wait(&self, device: i32, producer: usize, consumer: usize) -> Result<(), InterfaceError> {
        // The event is made in the producer stream's context, as the driver
        // records an event only on a stream of its own context.
        self.in_context(device, producer, || {
            // Within one capture the wait is a graph edge; across its edge it
            // would pull the other stream into the capture, or fail and
            // invalidate it: refused before the driver sees it.
            let (from, to) = (self.capturing(producer)?, self.capturing(consumer)?);
            if from != to {
                let stream = if from { producer } else { consumer };
                return Err(InterfaceError::CudaCapturing {
                    call: "cuStreamWaitEvent",
                    stream,
                });
            }
            self.wait_in_context(producer, consumer)
        })
    }

    #[cfg(feature = "exchange-api")]
    fn stream_capturing(&self, device: i32, stream: usize) -> Result<bool, InterfaceError> {
        let mut capturing = false;
        self.in_context(device, stream, || {
            capturing = self.capturing(stream)?;
            Ok(())
        })?;
        Ok(capturing)
    }

    unsafe fn copy_to_host(
        &self,
        device: i32,
        src: usize,
        len: usize,
        stream: usize,
        dst: *mut u8,
    ) -> Result<(), InterfaceError> {
        self.in_context(device, stream, || {
            // Synchronising a capturing stream would invalidate the capture.
            self.refuse_if_capturing(stream, "cuMemcpyDtoHAsync_v2")?;
            // SAFETY: a resolved `cuMemcpyDtoHAsync_v2`; `dst` is writable
            // for `len` bytes and untouched until this returns (the caller's
            // contract), which is after the stream synchronisation below;
            // the driver checks that `src` is device memory of `len` bytes;
            // the stream handle is the value's promise (1 and 2: the default
            // streams of the current context).
            let code = unsafe {
                (self.memcpy_dtoh_async)(dst.cast(), src as u64, len, stream as *mut c_void)
            };
            check("cuMemcpyDtoHAsync_v2", code)?;
            // SAFETY: a resolved `cuStreamSynchronize`; the handle as above.
            let code = unsafe { (self.stream_synchronize)(stream as *mut c_void) };
            check("cuStreamSynchronize", code)
        })
    }

    #[cfg(feature = "pickle")]
    fn upload(&self, kind: Memory, device: i32, src: &[u8]) -> Result<u64, InterfaceError> {
        // The legacy default stream (1) of the device's primary context.
        const LEGACY: usize = 1;
        let mut address: u64 = 0;
        self.in_context(device, LEGACY, || {
            address = self.allocate(kind, src.len())?;
            let copied = match kind {
                Memory::Device => self.copy_to_device(address, src, LEGACY),
                // Host-accessible memory, fresh (no work queued on it).
                Memory::Pinned | Memory::Managed => {
                    // SAFETY: `address` was just allocated with `src.len()`
                    // bytes the host may write; `src` is another buffer.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.as_ptr(),
                            address as usize as *mut u8,
                            src.len(),
                        );
                    }
                    Ok(())
                }
            };
            if copied.is_err() {
                // SAFETY: allocated above as `kind`, never handed out.
                let _ = unsafe { self.release(kind, address) };
            }
            copied
        })?;
        Ok(address)
    }

    #[cfg(feature = "pickle")]
    unsafe fn free(&self, kind: Memory, device: i32, ptr: u64) -> Result<(), InterfaceError> {
        // SAFETY: the caller's contract, passed on.
        self.in_context(device, 1, || unsafe { self.release(kind, ptr) })
    }
}

#[cfg(feature = "pickle")]
impl Driver {
    /// `len` (> 0) bytes of `kind` in the current context.
    fn allocate(&self, kind: Memory, len: usize) -> Result<u64, InterfaceError> {
        const CU_MEM_ATTACH_GLOBAL: c_uint = 1;
        let mut address: u64 = 0;
        match kind {
            // SAFETY: a resolved `cuMemAlloc_v2` writing a live local.
            Memory::Device => check("cuMemAlloc_v2", unsafe {
                (self.mem_alloc)(&raw mut address, len)
            }),
            Memory::Pinned => {
                let mut host: *mut c_void = std::ptr::null_mut();
                // SAFETY: a resolved `cuMemAllocHost_v2` writing a live local.
                let code = unsafe { (self.mem_alloc_host)(&raw mut host, len) };
                address = host as usize as u64;
                check("cuMemAllocHost_v2", code)
            }
            // SAFETY: a resolved `cuMemAllocManaged` writing a live local.
            Memory::Managed => check("cuMemAllocManaged", unsafe {
                (self.mem_alloc_managed)(&raw mut address, len, CU_MEM_ATTACH_GLOBAL)
            }),
        }?;
        Ok(address)
    }

    /// Copies `src` to device memory at `address`, on `stream`, and waits.
    fn copy_to_device(
        &self,
        address: u64,
        src: &[u8],
        stream: usize,
    ) -> Result<(), InterfaceError> {
        // SAFETY: a resolved `cuMemcpyHtoDAsync_v2`: `address` holds
        // `src.len()` bytes of device memory; `src` is readable for as many
        // and borrowed until this returns, after the synchronisation below.
        let code = unsafe {
            (self.memcpy_htod_async)(
                address,
                src.as_ptr().cast(),
                src.len(),
                stream as *mut c_void,
            )
        };
        check("cuMemcpyHtoDAsync_v2", code)?;
        // SAFETY: a resolved `cuStreamSynchronize` on a stream of the current context.
        let code = unsafe { (self.stream_synchronize)(stream as *mut c_void) };
        check("cuStreamSynchronize", code)
    }

    /// Frees memory of `kind` in the current context.
    ///
    /// # Safety
    ///
    /// `address` was allocated as `kind` by [`Self::allocate`] and is freed once.
    unsafe fn release(&self, kind: Memory, address: u64) -> Result<(), InterfaceError> {
        match kind {
            Memory::Device | Memory::Managed => {
                // SAFETY: a resolved `cuMemFree_v2` of memory `allocate`
                // made as device or managed memory, freed once (the
                // caller's contract).
                let code = unsafe { (self.mem_free)(address) };
                check("cuMemFree_v2", code)
            }
            Memory::Pinned => {
                // SAFETY: a resolved `cuMemFreeHost` of memory `allocate`
                // made as pinned memory, freed once (the caller's contract).
                let code = unsafe { (self.mem_free_host)(address as usize as *mut c_void) };
                check("cuMemFreeHost", code)
            }
        }
    }
}

impl Driver {
    /// Whether `stream` is being captured into a CUDA graph (a query: it
    /// changes no capture; on the legacy stream while another stream of the
    /// context captures, the driver answers with an error, 906).
    fn capturing(&self, stream: usize) -> Result<bool, InterfaceError> {
        let mut status: c_int = 0;
        // SAFETY: a resolved `cuStreamIsCapturing` writing a live local; the
        // handle is the producer's or consumer's promise (1 and 2: the
        // default streams of the current context).
        let code = unsafe { (self.stream_is_capturing)(stream as *mut c_void, &raw mut status) };
        check("cuStreamIsCapturing", code)?;
        // CU_STREAM_CAPTURE_STATUS_NONE is 0; ACTIVE and INVALIDATED are captures.
        Ok(status != 0)
    }

    /// Refuses `call` on a stream being captured, which the driver would
    /// refuse too, but only after invalidating the user's capture.
    fn refuse_if_capturing(&self, stream: usize, call: &'static str) -> Result<(), InterfaceError> {
        if self.capturing(stream)? {
            return Err(InterfaceError::CudaCapturing { call, stream });
        }
        Ok(())
    }

    /// [`Cuda::wait`] with the device's context current (events are made in
    /// the current context, and recorded on streams of its device).
    fn wait_in_context(&self, producer: usize, consumer: usize) -> Result<(), InterfaceError> {
        let mut event: *mut c_void = std::ptr::null_mut();
        // SAFETY: a resolved `cuEventCreate` writing a handle into a live local.
        let code = unsafe { (self.event_create)(&raw mut event, CU_EVENT_DISABLE_TIMING) };
        check("cuEventCreate", code)?;
        // SAFETY: a resolved `cuEventRecord`; `event` was just created (in
        // the producer stream's context) and is destroyed below whatever this
        // returns; the stream handle is the producer's promise.
        let recorded = unsafe { (self.event_record)(event, producer as *mut c_void) };
        let ordered = check("cuEventRecord", recorded).and_then(|()| {
            // SAFETY: as above, with the consumer's stream.
            let code = unsafe { (self.stream_wait_event)(consumer as *mut c_void, event, 0) };
            check("cuStreamWaitEvent", code)
        });
        // SAFETY: the event created above, destroyed once (CUDA keeps it
        // alive until a pending wait on it is satisfied).
        let destroyed = check("cuEventDestroy_v2", unsafe { (self.event_destroy)(event) });
        ordered.and(destroyed)
    }
}

/// The driver functions [`load`] resolves, in this order (the first missing
/// one is the error).
const FUNCTIONS: &[&CStr] = &[
    c"cuInit",
    c"cuDeviceGet",
    c"cuDevicePrimaryCtxRetain",
    c"cuCtxPushCurrent_v2",
    c"cuCtxPopCurrent_v2",
    c"cuStreamGetCtx",
    #[cfg(feature = "non-dlpack-import")]
    c"cuPointerGetAttribute",
    c"cuStreamSynchronize",
    // CUDA 10 and later.
    c"cuStreamIsCapturing",
    c"cuEventCreate",
    c"cuEventRecord",
    c"cuStreamWaitEvent",
    c"cuEventDestroy_v2",
    c"cuMemcpyDtoHAsync_v2",
    #[cfg(feature = "pickle")]
    c"cuMemAlloc_v2",
    #[cfg(feature = "pickle")]
    c"cuMemFree_v2",
    #[cfg(feature = "pickle")]
    c"cuMemcpyHtoDAsync_v2",
    #[cfg(feature = "pickle")]
    c"cuMemAllocHost_v2",
    #[cfg(feature = "pickle")]
    c"cuMemFreeHost",
    // CUDA 6 and later.
    #[cfg(feature = "pickle")]
    c"cuMemAllocManaged",
];

/// `name`'s place in [`FUNCTIONS`], found when the crate compiles (a name
/// not listed there fails the build, though not `cargo check`).
const fn index_of(name: &CStr) -> usize {
    let name = name.to_bytes();
    let mut index = 0;
    while index < FUNCTIONS.len() {
        let listed = FUNCTIONS[index].to_bytes();
        let mut same = listed.len() == name.len();
        let mut byte = 0;
        while same && byte < name.len() {
            same = listed[byte] == name[byte];
            byte += 1;
        }
        if same {
            return index;
        }
        index += 1;
    }
    panic!("a driver function that FUNCTIONS does not list")
}

/// Opens the driver (`super::library`) and resolves the functions used;
/// why it cannot be used otherwise (the library, a function missing, or
/// `cuInit` failing).
pub(super) fn load() -> Result<Driver, String> {
    let library = library::open_driver()?;
    // Every address first, in one loop (the first missing function is the
    // error), then each function's by its name.
    let mut addresses = [std::ptr::null_mut(); FUNCTIONS.len()];
    for (address, name) in addresses.iter_mut().zip(FUNCTIONS) {
        *address = library.symbol(name)?;
    }
    // The address resolved for the function named, by its place found at
    // compile time.
    macro_rules! address {
        ($name:literal) => {
            addresses[const { index_of($name) }]
        };
    }
    /// `address` as a function of the C signature `F`.
    ///
    /// # Safety
    ///
    /// `F` is the `unsafe extern "C" fn` type of the driver function at `address`.
    unsafe fn function<F: Copy>(address: *mut c_void) -> F {
        debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        // SAFETY: the caller's promise: a function pointer type, of the
        // symbol's C signature; function and data pointers have one size here.
        unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) }
    }
    // SAFETY (here and for each field below): the address is that of the
    // driver API function named, whose C signature in CUDA's cuda.h (stable
    // since CUDA 4) is the declared type.
    let init: unsafe extern "C" fn(c_uint) -> CuResult =
        // SAFETY: see above.
        unsafe { function(address!(c"cuInit")) };
    let driver = Driver {
        // SAFETY: see above.
        device_get: unsafe { function(address!(c"cuDeviceGet")) },
        // SAFETY: see above.
        primary_ctx_retain: unsafe { function(address!(c"cuDevicePrimaryCtxRetain")) },
        // SAFETY: see above.
        ctx_push: unsafe { function(address!(c"cuCtxPushCurrent_v2")) },
        // SAFETY: see above.
        ctx_pop: unsafe { function(address!(c"cuCtxPopCurrent_v2")) },
        // SAFETY: see above.
        stream_get_ctx: unsafe { function(address!(c"cuStreamGetCtx")) },
        contexts: [const { AtomicUsize::new(0) }; CONTEXTS],
        #[cfg(feature = "non-dlpack-import")]
        // SAFETY: see above.
        pointer_get_attribute: unsafe { function(address!(c"cuPointerGetAttribute")) },
        // SAFETY: see above.
        stream_synchronize: unsafe { function(address!(c"cuStreamSynchronize")) },
        // SAFETY: see above.
        stream_is_capturing: unsafe { function(address!(c"cuStreamIsCapturing")) },
        // SAFETY: see above.
        event_create: unsafe { function(address!(c"cuEventCreate")) },
        // SAFETY: see above.
        event_record: unsafe { function(address!(c"cuEventRecord")) },
        // SAFETY: see above.
        stream_wait_event: unsafe { function(address!(c"cuStreamWaitEvent")) },
        // SAFETY: see above.
        event_destroy: unsafe { function(address!(c"cuEventDestroy_v2")) },
        // SAFETY: see above.
        memcpy_dtoh_async: unsafe { function(address!(c"cuMemcpyDtoHAsync_v2")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        mem_alloc: unsafe { function(address!(c"cuMemAlloc_v2")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        mem_free: unsafe { function(address!(c"cuMemFree_v2")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        memcpy_htod_async: unsafe { function(address!(c"cuMemcpyHtoDAsync_v2")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        mem_alloc_host: unsafe { function(address!(c"cuMemAllocHost_v2")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        mem_free_host: unsafe { function(address!(c"cuMemFreeHost")) },
        #[cfg(feature = "pickle")]
        // SAFETY: see above.
        mem_alloc_managed: unsafe { function(address!(c"cuMemAllocManaged")) },
    };
    // SAFETY: `cuInit(0)` may be called any number of times.
    let code = unsafe { init(0) };
    if code != CUDA_SUCCESS {
        let failed = InterfaceError::Cuda {
            call: "cuInit",
            code,
        };
        return Err(format!("{}: {failed}", library.name()));
    }
    Ok(driver)
}
