//! The fuzzing entries (feature `__fuzzing`, for `fuzz/` only; not part of
//! the API), run on fields decoded from arbitrary bytes; no data pointer is
//! ever read:
//! - [`validate`]: the checks a producer's managed tensor goes through before
//!   anything reads it (`PyTensor::from_managed`: version, flags,
//!   `foreign::check`);
//! - [`interface_layout`]: the import of a layout that `__array_interface__`,
//!   `__cuda_array_interface__` or the buffer protocol described (shape,
//!   byte strides, dtype, the memory's region), which must stay inside the
//!   region it was given.

use std::ffi::c_void;

use crate::ffi::{DLPackVersion, DLTensor};
use crate::layout::MAX_NDIM;
use crate::{DataType, DataTypeCode, Device, DeviceType, foreign, protocol};

/// Reads fields from the fuzzer's bytes (zeros once they run out).
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    /// `len` extents or strides: small ones (one signed byte each, where
    /// the interesting edge cases are) or any `i64`.
    fn dims(&mut self, len: usize, small: bool) -> Vec<i64> {
        (0..len)
            .map(|_| {
                if small {
                    i64::from(self.u8() as i8)
                } else {
                    self.i64()
                }
            })
            .collect()
    }
}

/// Decodes a managed tensor's fields from `bytes` and validates them as an
/// import does. Must never panic, whatever the bytes; returns whether the
/// tensor was accepted.
pub fn validate(bytes: &[u8]) -> bool {
    let mut f = Fields(bytes);
    let version = DLPackVersion {
        major: f.u32() % 3,
        minor: f.u32(),
    };
    let flags = f.u64();
    let ndim = f.i32();
    // Arrays exactly `ndim` long whenever the validator may read them (its
    // contract); an out-of-range ndim is refused before any read.
    let len = usize::try_from(ndim)
        .ok()
        .filter(|&n| n <= MAX_NDIM)
        .unwrap_or(0);
    let dtype = DataType {
        code: DataTypeCode::from_code(f.u8()),
        bits: f.u8(),
        lanes: u16::from(f.u8()),
    };
    let small = f.u8() & 1 == 1;
    let mut shape = f.dims(len, small);
    let mut strides = f.dims(len, small);
    let null_shape = f.u8() % 8 == 0;
    let null_strides = f.u8() % 4 == 0;
    let tensor = DLTensor {
        data: f.u64() as usize as *mut c_void,
        device: Device::new(DeviceType::from_code(f.i32()), f.i32()),
        ndim,
        dtype,
        shape: if null_shape {
            std::ptr::null_mut()
        } else {
            shape.as_mut_ptr()
        },
        strides: if null_strides {
            std::ptr::null_mut()
        } else {
            strides.as_mut_ptr()
        },
        byte_offset: f.u64(),
    };
    if protocol::check_version(version).is_err() {
        return false;
    }
    let padded = protocol::is_subbyte_padded(flags);
    // SAFETY: `shape` and `strides` are NULL or point to `len` i64s, which
    // is `ndim` whenever `ndim` is in range (the validator reads nothing
    // otherwise); both live through the call. The data pointer is not read.
    unsafe { foreign::check(&tensor, padded) }.is_ok()
}

/// Decodes a protocol's description from `bytes` (shape, byte strides or
/// none, dtype, read-only flag, and either a region `[start, start + len)`
/// with the first element `offset` bytes in, or only the first element's
/// address) and imports it as the protocols do. Must never panic; an
/// accepted region import reaches only bytes inside its region, which is
/// asserted. Returns whether it was accepted.
pub fn interface_layout(bytes: &[u8]) -> bool {
    use crate::error::Interface;
    use crate::import::protocols::owner::{self, Keeper, Layout, Memory};

    let mut f = Fields(bytes);
    let ndim = usize::from(f.u8() % 6);
    let small = f.u8() & 1 == 1;
    let shape = f.dims(ndim, small);
    let strides = f.dims(ndim, small);
    let byte_strides = (f.u8() & 1 == 1).then_some(strides);
    let dtype = DataType {
        code: DataTypeCode::from_code(f.u8() % 20),
        bits: f.u8(),
        lanes: 1,
    };
    let read_only = f.u8() & 1 == 1;
    let region = f.u8() & 1 == 1;
    let start = f.u64() as usize;
    let memory = if region {
        let len = if small {
            usize::from(f.u8())
        } else {
            f.u64() as usize
        };
        let offset = if small {
            usize::from(f.u8())
        } else {
            f.u64() as usize
        };
        Memory::Region { start, len, offset }
    } else {
        Memory::FirstElement(start)
    };
    let bounds = match memory {
        Memory::Region { start, len, .. } => Some((start, start.checked_add(len))),
        Memory::FirstElement(_) => None,
    };
    let layout = Layout {
        shape,
        byte_strides,
        dtype,
        read_only,
    };
    // SAFETY: the contract asks that the memory stay allocated: nothing here
    // ever reads it (no view is made; the tensor is described and dropped),
    // and nothing is kept alive (no keeper object).
    let imported = unsafe {
        owner::import(
            memory,
            layout,
            Device::cpu(),
            Interface::ArrayInterface,
            Keeper::Object(None),
        )
    };
    let Ok(tensor) = imported else {
        return false;
    };
    if let Some((start, end)) = bounds {
        let (low, high) = tensor.span();
        let end = end.expect("an accepted region does not wrap around the address space");
        assert!(
            low == high || (start <= low && low <= high && high <= end),
            "an accepted import reaches [{low:#x}, {high:#x}) outside [{start:#x}, {end:#x})"
        );
    }
    true
}
