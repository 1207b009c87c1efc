//! `#[repr(C)]` mirrors of the DLPack 1.3 C header (`dlpack/dlpack.h`).
//!
//! These are the exact structs that cross the C boundary inside a capsule.
//! Most users never touch them: [`DLPackTensor`](crate::DLPackTensor) builds
//! them on export. Device type and dtype code are the integer newtypes
//! [`DeviceType`](crate::DeviceType) and [`DataTypeCode`](crate::DataTypeCode),
//! so any foreign value is representable. Sizes and field offsets are checked
//! at compile time against the header as measured with gcc on LP64.

use std::ffi::{CStr, c_char, c_void};
use std::mem::{offset_of, size_of};

pub use crate::device::Device as DLDevice;
pub use crate::dtype::DataType as DLDataType;

/// `DLPACK_MAJOR_VERSION` of the header these mirrors follow.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// `DLPACK_MINOR_VERSION` of the header these mirrors follow.
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the data.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy the consumer owns alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements use one byte each.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// Capsule name of an unconsumed legacy `DLManagedTensor`.
pub const DLTENSOR: &CStr = c"dltensor";
/// Capsule name of a legacy `DLManagedTensor` a consumer has taken.
pub const USED_DLTENSOR: &CStr = c"used_dltensor";
/// Capsule name of an unconsumed `DLManagedTensorVersioned`.
pub const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
/// Capsule name of a `DLManagedTensorVersioned` a consumer has taken.
pub const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";
/// Capsule name of a `DLPackExchangeAPI` table (`type(x).__dlpack_c_exchange_api__`).
pub const DLPACK_EXCHANGE_API: &CStr = c"dlpack_exchange_api";

/// `DLPackVersion`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DLPackVersion {
    /// ABI version; a consumer must not read past `flags` when it differs.
    pub major: u32,
    /// Backwards-compatible additions (new enum values).
    pub minor: u32,
}

impl DLPackVersion {
    /// The version of the header these mirrors follow, 1.3.
    pub const CURRENT: Self = Self {
        major: DLPACK_MAJOR_VERSION,
        minor: DLPACK_MINOR_VERSION,
    };
}

/// `DLTensor`: a borrowed view of the data; it owns nothing.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    /// Opaque data pointer; add `byte_offset` to reach the first element.
    pub data: *mut c_void,
    /// Where `data` lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents; may be NULL when `ndim == 0`.
    pub shape: *mut i64,
    /// `ndim` strides in elements; NULL means row-major (only legal before 1.2 or for ndim 0).
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the legacy (pre-1.0) owned tensor, capsule name `"dltensor"`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Producer context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor, this struct included; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`: the 1.x owned tensor, capsule name `"dltensor_versioned"`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// Checked by the consumer before anything else.
    pub version: DLPackVersion,
    /// Producer context for the deleter.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor, this struct included; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// `SetError` callback of [`DLPackManagedTensorAllocator`]: two C strings
/// (`const char*`, [`c_char`], signed or unsigned as the target's C `char` is).
pub type DLPackSetError = Option<
    unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char),
>;
/// `DLPackManagedTensorAllocator`.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: DLPackSetError,
    ) -> i32,
>;
/// `DLPackManagedTensorFromPyObjectNoSync`: owning export of a Python object.
pub type DLPackManagedTensorFromPyObjectNoSync = Option<
    unsafe extern "C" fn(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> i32,
>;
/// `DLPackManagedTensorToPyObjectNoSync`: wraps (and steals) a tensor as a Python object.
pub type DLPackManagedTensorToPyObjectNoSync = Option<
    unsafe extern "C" fn(tensor: *mut DLManagedTensorVersioned, out: *mut *mut c_void) -> i32,
>;
/// `DLPackDLTensorFromPyObjectNoSync`: non-owning view, valid until control returns.
pub type DLPackDLTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut DLTensor) -> i32>;
/// `DLPackCurrentWorkStream`.
pub type DLPackCurrentWorkStream = Option<
    unsafe extern "C" fn(device_type: i32, device_id: i32, out_stream: *mut *mut c_void) -> i32,
>;

/// `DLPackExchangeAPIHeader`.
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPIHeader {
    /// Version of the table; the consumer checks `major`.
    pub version: DLPackVersion,
    /// The table of an older major version, or NULL.
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// `DLPackExchangeAPI`: the static function table behind `__dlpack_c_exchange_api__`.
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPI {
    /// Version and chain.
    pub header: DLPackExchangeAPIHeader,
    /// Allocates a tensor in the producer's framework.
    pub managed_tensor_allocator: DLPackManagedTensorAllocator,
    /// Owning export.
    pub managed_tensor_from_py_object_no_sync: DLPackManagedTensorFromPyObjectNoSync,
    /// Import into the producer's framework.
    pub managed_tensor_to_py_object_no_sync: DLPackManagedTensorToPyObjectNoSync,
    /// Borrowed export; may be NULL.
    pub dltensor_from_py_object_no_sync: DLPackDLTensorFromPyObjectNoSync,
    /// The framework's current stream for a device.
    pub current_work_stream: DLPackCurrentWorkStream,
}

// Layout of the DLPack 1.3 header on LP64 (DLPACK.md §1.5), checked at compile time.
const _: () = {
    assert!(size_of::<DLPackVersion>() == 8);
    assert!(size_of::<DLDevice>() == 8);
    assert!(offset_of!(DLDevice, device_type) == 0 && offset_of!(DLDevice, device_id) == 4);
    assert!(size_of::<DLDataType>() == 4);
    assert!(offset_of!(DLDataType, code) == 0);
    assert!(offset_of!(DLDataType, bits) == 1);
    assert!(offset_of!(DLDataType, lanes) == 2);
    if size_of::<usize>() == 8 {
        assert!(size_of::<DLTensor>() == 48);
        assert!(offset_of!(DLTensor, data) == 0);
        assert!(offset_of!(DLTensor, device) == 8);
        assert!(offset_of!(DLTensor, ndim) == 16);
        assert!(offset_of!(DLTensor, dtype) == 20);
        assert!(offset_of!(DLTensor, shape) == 24);
        assert!(offset_of!(DLTensor, strides) == 32);
        assert!(offset_of!(DLTensor, byte_offset) == 40);
        assert!(size_of::<DLManagedTensor>() == 64);
        assert!(offset_of!(DLManagedTensor, dl_tensor) == 0);
        assert!(offset_of!(DLManagedTensor, manager_ctx) == 48);
        assert!(offset_of!(DLManagedTensor, deleter) == 56);
        assert!(size_of::<DLManagedTensorVersioned>() == 80);
        assert!(offset_of!(DLManagedTensorVersioned, version) == 0);
        assert!(offset_of!(DLManagedTensorVersioned, manager_ctx) == 8);
        assert!(offset_of!(DLManagedTensorVersioned, deleter) == 16);
        assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
        assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
        assert!(size_of::<DLPackExchangeAPIHeader>() == 16);
        assert!(size_of::<DLPackExchangeAPI>() == 56);
        assert!(offset_of!(DLPackExchangeAPI, managed_tensor_allocator) == 16);
        assert!(offset_of!(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync) == 24);
        assert!(offset_of!(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync) == 32);
        assert!(offset_of!(DLPackExchangeAPI, dltensor_from_py_object_no_sync) == 40);
        assert!(offset_of!(DLPackExchangeAPI, current_work_stream) == 48);
    }
};
