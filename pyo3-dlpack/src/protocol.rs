//! The DLPack rules both directions share, each in one place: the version
//! this crate speaks, the flag bits, which dtypes the header allows, what
//! byte storage may hold (the stream rules are CUDA's, in `cuda::streams`).

use crate::error::DtypeError;
use crate::ffi::{
    DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY, DLPackVersion,
};
use crate::{DLPackError, DataType, DataTypeCode};

/// The DLPack version this crate exports and asks producers for.
pub(crate) const VERSION: DLPackVersion = DLPackVersion::CURRENT;

/// [`VERSION`] as the `(major, minor)` pair of `max_version`.
pub(crate) const MAX_VERSION: (u32, u32) = (VERSION.major, VERSION.minor);

/// `Ok` for a versioned struct this crate can read: major version 1 (the
/// header: a consumer must not read past `version` of another major).
pub(crate) fn check_version(version: DLPackVersion) -> Result<(), DLPackError> {
    if version.major == VERSION.major {
        Ok(())
    } else {
        Err(DLPackError::UnsupportedVersion {
            major: version.major,
            minor: version.minor,
        })
    }
}

/// Whether a tensor's memory may be written, as its producer said.
///
/// A versioned DLPack capsule says *writable* or *read-only* (its
/// `READ_ONLY` flag); a legacy capsule says nothing, so its writability is
/// *unknown* (JAX before 0.12 exports its immutable arrays that way).
///
/// - Rust views treat [`Unknown`](Self::Unknown) as read-only (NumPy's rule
///   for legacy imports): [`PyTensor::as_slice_mut`](crate::PyTensor::as_slice_mut)
///   is refused and [`PyTensor::is_read_only`](crate::PyTensor::is_read_only) is true.
/// - A re-export hands the ambiguity on unchanged: a consumer asking for a
///   legacy capsule gets one (so a JAX array can go through Rust and back to
///   JAX), a consumer asking for a versioned capsule gets `READ_ONLY`.
/// - [`ReadOnly`](Self::ReadOnly) values (the producer said so, or a Rust
///   value shared through an `Arc`) follow NumPy's export rule: a legacy
///   request raises `BufferError` unless `copy=True`.
///
/// ```
/// use pyo3_dlpack::Writability;
///
/// assert!(Writability::Writable.allows_writes());
/// assert!(!Writability::Unknown.allows_writes());
/// assert!(!Writability::ReadOnly.allows_writes());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Writability {
    /// Consumers may write: a versioned capsule without `READ_ONLY`, or a
    /// Rust value exported writable.
    Writable,
    /// Consumers must not write: the producer set `READ_ONLY`, or the value
    /// is exported read-only.
    ReadOnly,
    /// The producer did not say (a legacy capsule, a borrowed `DLTensor`).
    Unknown,
}

impl Writability {
    /// The writability a versioned capsule's `flags` state.
    pub const fn from_flags(flags: u64) -> Self {
        if flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
            Self::ReadOnly
        } else {
            Self::Writable
        }
    }

    /// Whether writes are known to be allowed (only [`Writable`](Self::Writable)).
    pub const fn allows_writes(self) -> bool {
        matches!(self, Self::Writable)
    }

    /// Whether a legacy capsule, or any other export that carries no flags
    /// (a borrowed `DLTensor` of the C exchange API), may export it:
    /// everything but a known [`ReadOnly`](Self::ReadOnly), which it cannot state.
    pub(crate) const fn allows_legacy_export(self) -> bool {
        !matches!(self, Self::ReadOnly)
    }
}

/// Whether a versioned struct's `flags` say its sub-byte elements (float4,
/// float6) take a byte each (`IS_SUBBYTE_TYPE_PADDED`) instead of being
/// packed, the header's default.
pub(crate) const fn is_subbyte_padded(flags: u64) -> bool {
    flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0
}

/// The versioned struct's flags for an export.
pub(crate) const fn flags(read_only: bool, copied: bool) -> u64 {
    let mut flags = 0;
    if read_only {
        flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
    }
    if copied {
        flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    }
    flags
}

/// The width in bits a type code fixes, if it fixes one (DLPack 1.3: the
/// float8 codes are 8 bits, float6 6, float4 4; bool is one byte; the
/// header after 1.3: bcomplex is "2x bfloat16", 32 bits).
const fn required_bits(code: DataTypeCode) -> Option<u8> {
    match code.code() {
        6..=14 => Some(8),
        15 | 16 => Some(6),
        17 => Some(4),
        18 => Some(32),
        _ => None,
    }
}

/// Whether this crate exchanges `dtype`: a code of the 1.3 header (or
/// bcomplex, added after it), the
/// width that code requires (any non-zero width for the others), one lane,
/// or torch's packed float4 pairs (`float4_e2m1fn_x2`: two lanes of four
/// bits, one byte). The exporter refuses exactly what the importer refuses.
///
/// Bool is 8 bits here, as NumPy, torch and JAX export it.
pub(crate) fn check_dtype(dtype: DataType) -> Result<(), DLPackError> {
    if !dtype.code.is_known() {
        return Err(DtypeError::UnknownCode { dtype }.into());
    }
    if dtype.bits == 0 {
        return Err(DtypeError::Bits {
            dtype,
            required: None,
        }
        .into());
    }
    if let Some(bits) = required_bits(dtype.code) {
        if dtype.bits != bits {
            return Err(DtypeError::Bits {
                dtype,
                required: Some(bits),
            }
            .into());
        }
    }
    let float4_pair = dtype.code.code() == DataTypeCode::FLOAT4_E2M1FN.code() && dtype.lanes == 2;
    if dtype.lanes != 1 && !float4_pair {
        return Err(DtypeError::Lanes { dtype }.into());
    }
    Ok(())
}

/// How memory of Rust elements of type `elements` (a typed buffer's
/// `TensorData::STATIC_DTYPE`; `None` for raw bytes and foreign memory) may
/// be exported, given what the buffer itself allows: Rust `bool`s not
/// writable, since a consumer may write any byte and a `bool` other than 0
/// or 1 is undefined behaviour for the Rust code that reads it afterwards
/// (a `Drop`, the value handed back). Lifted for values that are such a
/// buffer and nothing else (`export::managed::reads_no_elements`), or on the
/// owner's promise ([`TensorInfoBuilder::writable_bool`](crate::TensorInfoBuilder::writable_bool)).
pub(crate) fn element_writability(elements: Option<DataType>, buffer: Writability) -> Writability {
    match elements {
        Some(DataType::BOOL) => Writability::ReadOnly,
        _ => buffer,
    }
}

/// Whether a buffer of `storage` elements may be exported as `declared`:
/// the same type, or `u8` bytes holding any type but bool (whose bytes must
/// be 0 or 1, which arbitrary bytes are not).
pub(crate) const fn storage_holds(storage: DataType, declared: DataType) -> bool {
    let same = storage.code.code() == declared.code.code()
        && storage.bits == declared.bits
        && storage.lanes == declared.lanes;
    let bytes = storage.code.code() == DataType::U8.code.code()
        && storage.bits == 8
        && storage.lanes == 1
        && declared.code.code() != DataTypeCode::BOOL.code();
    same || bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_rule_follows_the_header() {
        for ok in [
            DataType::F32,
            DataType::BOOL,
            DataType::BF16,
            DataType::C64,
            DataType::BC32,
            DataType::F4_E2M1FN,
            DataType::F4_E2M1FN_X2,
            DataType::new(DataTypeCode::INT, 4, 1),
        ] {
            assert_eq!(check_dtype(ok), Ok(()), "{ok}");
        }
        let bad = |code, bits, lanes| check_dtype(DataType::new(code, bits, lanes)).unwrap_err();
        assert_eq!(
            bad(DataTypeCode::FLOAT4_E2M1FN, 8, 1).to_string(),
            "dtype float4_e2m1fn must have 4 bits per element, got 8"
        );
        assert!(matches!(
            bad(DataTypeCode::FLOAT6_E2M3FN, 8, 1),
            DLPackError::InvalidDtype(DtypeError::Bits {
                required: Some(6),
                ..
            })
        ));
        // bcomplex is two bfloat16 parts: 32 bits, never 64 (no "bcomplex64").
        assert_eq!(
            bad(DataTypeCode::BCOMPLEX, 64, 1).to_string(),
            "dtype bcomplex32 must have 32 bits per element, got 64"
        );
        assert!(matches!(
            bad(DataTypeCode::BCOMPLEX, 16, 2),
            DLPackError::InvalidDtype(DtypeError::Bits {
                required: Some(32),
                ..
            })
        ));
        assert!(matches!(
            bad(DataTypeCode::BCOMPLEX, 32, 2),
            DLPackError::InvalidDtype(DtypeError::Lanes { .. })
        ));
        assert!(matches!(
            bad(DataTypeCode::FLOAT, 0, 1),
            DLPackError::InvalidDtype(DtypeError::Bits { required: None, .. })
        ));
        assert!(matches!(
            bad(DataTypeCode::FLOAT, 32, 0),
            DLPackError::InvalidDtype(DtypeError::Lanes { .. })
        ));
        for (code, bits, lanes) in [
            (DataTypeCode::FLOAT, 32, 2),
            (DataTypeCode::FLOAT4_E2M1FN, 4, 4),
            (DataTypeCode::FLOAT6_E2M3FN, 6, 2),
        ] {
            assert!(matches!(
                bad(code, bits, lanes),
                DLPackError::InvalidDtype(DtypeError::Lanes { .. })
            ));
        }
        assert!(matches!(
            bad(DataTypeCode::from_code(20), 8, 1),
            DLPackError::InvalidDtype(DtypeError::UnknownCode { .. })
        ));
    }

    #[test]
    fn bytes_hold_any_type_but_bool() {
        assert!(storage_holds(DataType::F32, DataType::F32));
        assert!(storage_holds(DataType::U8, DataType::C128));
        assert!(!storage_holds(DataType::U8, DataType::BOOL));
        assert!(!storage_holds(DataType::I8, DataType::F32));
        assert!(!storage_holds(DataType::F32, DataType::I32));
    }
}
