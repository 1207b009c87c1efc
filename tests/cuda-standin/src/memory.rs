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

/// An allocation: `[start, start + len)`, its device and kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allocation {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) device: usize,
    pub(crate) kind: c_int,
}

pub(crate) static ALLOCATIONS: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

/// Whether `[address, address + len)` lies in device memory (kind 0), which
/// the host cannot write: work writing it changes nothing the host can see.
pub(crate) fn in_device_memory(address: usize, len: usize) -> bool {
    let allocations = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
    allocations.iter().any(|a| {
        a.kind == 0 && a.start <= address && address.saturating_add(len) <= a.start + a.len
    })
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
        let found = ALLOCATIONS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
    })
}

unsafe extern "C" {
    // The C library's mmap(2).
    pub(crate) fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
}
