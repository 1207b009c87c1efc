//! Memory: allocations of device (`PROT_NONE` to the host), pinned and
//! managed memory, and their pointer attributes.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;

use crate::context::initialized;
use crate::{CUDA_ERROR_INVALID_VALUE, CuResult, entry};

const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;

/// An allocation: `[start, start + len)`, its device and kind (0 device,
/// 1 pinned, 2 managed), and where the driver reads and writes it: device
/// memory is a second, readable mapping of the same pages (the host's is
/// `PROT_NONE`); pinned and managed memory is its own address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allocation {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) device: usize,
    pub(crate) kind: c_int,
    pub(crate) driver: usize,
    /// Freed (`cuMemFree_v2`, `cuMemFreeAsync`): no longer a valid pointer
    /// for the API, though its mappings stay (addresses are never reused).
    pub(crate) freed: bool,
}

impl Allocation {
    fn contains(&self, address: usize, len: usize) -> bool {
        self.start <= address && address.saturating_add(len) <= self.start + self.len
    }
}

pub(crate) static ALLOCATIONS: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

fn allocations() -> std::sync::MutexGuard<'static, Vec<Allocation>> {
    ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live allocation `[address, address + len)` lies in (`len` 0: the one
/// `address` is in).
pub(crate) fn live(address: usize, len: usize) -> Option<Allocation> {
    allocations()
        .iter()
        .find(|a| !a.freed && a.contains(address, len.max(1)))
        .copied()
}

/// Where the driver accesses `[address, address + len)`: through the
/// readable mapping of device memory, else the address itself (pinned,
/// managed or pageable host memory).
pub(crate) fn driver_address(address: usize, len: usize) -> usize {
    allocations()
        .iter()
        .find(|a| a.contains(address, len))
        .map_or(address, |a| a.driver + (address - a.start))
}

/// Whether an allocation starting at `start` was freed.
pub(crate) fn freed(start: usize) -> bool {
    allocations().iter().any(|a| a.freed && a.start == start)
}

/// Marks the allocation starting at `start` freed; the allocation, or
/// `None` when no live allocation starts there.
pub(crate) fn free(start: usize) -> Option<Allocation> {
    let mut allocations = allocations();
    let found = allocations
        .iter_mut()
        .find(|a| !a.freed && a.start == start)?;
    found.freed = true;
    Some(*found)
}

unsafe extern "C" {
    // The C library's memfd_create(2), ftruncate(2), mmap(2) and close(2).
    fn memfd_create(name: *const std::ffi::c_char, flags: c_uint) -> c_int;
    fn ftruncate(fd: c_int, len: i64) -> c_int;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn close(fd: c_int) -> c_int;
}

const PROT_NONE: c_int = 0;
const PROT_READ_WRITE: c_int = 3;
const MAP_SHARED: c_int = 0x01;
const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
const MAP_FAILED: isize = -1;

/// A mapping of `bytes` with `prot`: of `fd` (shared), or anonymous.
fn map(bytes: usize, prot: c_int, fd: Option<c_int>) -> Option<usize> {
    let (flags, fd) = match fd {
        Some(fd) => (MAP_SHARED, fd),
        None => (MAP_PRIVATE_ANONYMOUS, -1),
    };
    // SAFETY: a new mapping at an address the kernel picks (nothing
    // existing is replaced), kept for the process.
    let start = unsafe { mmap(std::ptr::null_mut(), bytes, prot, flags, fd, 0) };
    (start as isize != MAP_FAILED).then_some(start as usize)
}

/// Device memory: the host's `PROT_NONE` mapping and the driver's readable
/// one, of the same pages.
fn map_device(bytes: usize) -> Option<(usize, usize)> {
    // SAFETY: a NUL-terminated name; the descriptor is closed below.
    let fd = unsafe { memfd_create(c"cuda-standin".as_ptr(), 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: our descriptor, sized once.
    let sized = unsafe { ftruncate(fd, i64::try_from(bytes).unwrap_or(i64::MAX)) } == 0;
    let host = sized.then(|| map(bytes, PROT_NONE, Some(fd))).flatten();
    let driver = host.and_then(|_| map(bytes, PROT_READ_WRITE, Some(fd)));
    // SAFETY: our descriptor, closed once (the mappings keep the pages).
    unsafe { close(fd) };
    Some((host?, driver?))
}

/// `bytes` of memory on `device` of `kind` (0 device, mapped `PROT_NONE`
/// for the host; 1 pinned; 2 managed), recorded; its address, `None` when
/// `bytes` is 0 or the mapping fails. Never unmapped.
pub(crate) fn allocate(device: usize, bytes: usize, kind: c_int) -> Option<usize> {
    if bytes == 0 {
        return None;
    }
    let (start, driver) = if kind == 0 {
        map_device(bytes)?
    } else {
        let start = map(bytes, PROT_READ_WRITE, None)?;
        (start, start)
    };
    allocations().push(Allocation {
        start,
        len: bytes,
        device,
        kind,
        driver,
        freed: false,
    });
    Some(start)
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
    entry(|| {
        initialized()?;
        let address = pointer as usize;
        let found = live(address, 0).ok_or(CUDA_ERROR_INVALID_VALUE)?;
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
    })
}
