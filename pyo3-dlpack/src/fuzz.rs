//! The fuzzing entry (feature `__fuzzing`, for `fuzz/` only; not part of the
//! API): the checks a producer's managed tensor goes through before anything
//! reads it (`PyTensor::from_managed`: version, flags, `foreign::check`), run
//! on fields decoded from arbitrary bytes. The data pointer is never read.

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
    let value = |f: &mut Fields<'_>| {
        if small {
            i64::from(f.u8() as i8)
        } else {
            f.i64()
        }
    };
    let mut shape: Vec<i64> = (0..len).map(|_| value(&mut f)).collect();
    let mut strides: Vec<i64> = (0..len).map(|_| value(&mut f)).collect();
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
