//! The DLPack rules both directions share, each in one place: the version
//! this crate speaks, the flag bits, which dtypes the header allows, what
//! byte storage may hold, and the stream rule per device type.

use crate::error::{DtypeError, ExportError};
use crate::ffi::{
    DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY, DLPackVersion,
};
use crate::{DLPackError, DataType, DataTypeCode, Device, DeviceType};

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
/// assert!(Writability::Unknown.allows_legacy_export());
/// assert!(!Writability::ReadOnly.allows_legacy_export());
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
    pub const fn allows_legacy_export(self) -> bool {
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
/// float8 codes are 8 bits, float6 6, float4 4; bool is one byte).
const fn required_bits(code: DataTypeCode) -> Option<u8> {
    match code.code() {
        6..=14 => Some(8),
        15 | 16 => Some(6),
        17 => Some(4),
        _ => None,
    }
}

/// Whether this crate exchanges `dtype`: a code of the 1.3 header, the
/// width that code requires (any non-zero width for the others), one lane.
/// The exporter refuses exactly what the importer refuses.
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
    if dtype.lanes != 1 {
        return Err(DtypeError::Lanes { dtype }.into());
    }
    Ok(())
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

/// The stream rule of the DLPack Python specification for a tensor on
/// `device`, as the producer applies it to a consumer's `stream` argument.
/// Returns the consumer stream to make the data safe on, if any.
///
/// | device | `None` | `-1` | `0` | `1`, `2` | other |
/// |---|---|---|---|---|---|
/// | CUDA, CUDA managed | legacy default (1) | no sync | refused (ambiguous) | that stream | a stream handle |
/// | ROCm | default (0) | no sync | default | refused | a stream handle |
/// | others | nothing | nothing | refused | refused | refused |
pub(crate) fn stream_to_sync(
    stream: Option<i64>,
    device: Device,
) -> Result<Option<i64>, DLPackError> {
    let refuse = |reason: &'static str| {
        Err(ExportError::Stream {
            stream,
            device,
            reason,
        }
        .into())
    };
    match (device.device_type, stream) {
        (_, Some(s)) if s < -1 => refuse("a stream must be -1, None or a non-negative integer"),
        (_, Some(-1)) => Ok(None),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, None) => Ok(Some(1)),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, Some(0)) => refuse(
            "0 is ambiguous on CUDA; use 1 for the legacy default stream or 2 for per-thread",
        ),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, Some(s)) => Ok(Some(s)),
        (DeviceType::ROCM, None) => Ok(Some(0)),
        (DeviceType::ROCM, Some(1 | 2)) => {
            refuse("ROCm has no stream 1 or 2; use 0 for the default stream")
        }
        (DeviceType::ROCM, Some(s)) => Ok(Some(s)),
        (_, None) => Ok(None),
        (_, Some(_)) => refuse("only None (or -1) is accepted on devices without streams"),
    }
}

/// The stream a consumer passes to a producer whose tensor will be on
/// `device`, given the stream it asked for (`None`: the default). Devices
/// without streams get none at all.
pub(crate) fn stream_to_request(asked: Option<i64>, device: Option<Device>) -> Option<i64> {
    match device.map(|d| d.device_type) {
        Some(DeviceType::CUDA | DeviceType::CUDA_MANAGED) => Some(asked.unwrap_or(1)),
        Some(DeviceType::ROCM) => Some(asked.unwrap_or(0)),
        _ => None,
    }
}

/// The wait an export of memory on `device` needs before a consumer uses it
/// on `consumer` (its `__dlpack__` stream: 1 and 2 are CUDA's legacy and
/// per-thread default streams, others a `cudaStream_t`): `(producer,
/// consumer)` when the value says pending work writes it on stream
/// `producer` (CUDA only) and the consumer's stream is another. A value that
/// names no stream is taken to have no pending work (or to order it in its
/// own `IntoDLPack::synchronize`).
pub(crate) fn export_wait(
    device: Device,
    producer: Option<usize>,
    consumer: i64,
) -> Option<(usize, usize)> {
    let cuda = matches!(
        device.device_type,
        DeviceType::CUDA | DeviceType::CUDA_MANAGED
    );
    match producer {
        Some(producer) if cuda && consumer > 0 && consumer as usize != producer => {
            Some((producer, consumer as usize))
        }
        _ => None,
    }
}

/// What an import through a producer's C exchange table (which does no
/// stream synchronisation) does with a tensor on a device with streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExchangeOrdering {
    /// Keep the tensor: it is ready on stream `ready_on`.
    Keep { ready_on: i64 },
    /// Make stream `consumer` wait for `producer` (an event), then keep it.
    WaitThenKeep {
        producer: usize,
        consumer: usize,
        ready_on: i64,
    },
    /// Import through `__dlpack__(stream=…)` instead, whose producer orders it.
    UseDlpack,
}

/// The ordering of an exchange-API import on `device`, whose producer's
/// current work stream is `producer` (`None` for NULL: the device's default
/// stream). Stream-ordered imports are kept as they are, ready on the
/// producer's stream; synchronising ones make CUDA's legacy default stream
/// (what `__dlpack__` gets by default) wait for it through the CUDA driver,
/// or, without one (or on ROCm), go through `__dlpack__`.
pub(crate) fn exchange_ordering(
    stream_ordered: bool,
    device: Device,
    producer: Option<usize>,
    cuda_driver: bool,
) -> ExchangeOrdering {
    let cuda = matches!(
        device.device_type,
        DeviceType::CUDA | DeviceType::CUDA_MANAGED
    );
    let default = if cuda { 1 } else { 0 };
    if stream_ordered {
        return ExchangeOrdering::Keep {
            ready_on: producer.map_or(default, |s| s as i64),
        };
    }
    if !cuda || !cuda_driver {
        return ExchangeOrdering::UseDlpack;
    }
    match producer {
        // NULL and 1 are the legacy default stream itself; 2 (per-thread) is not.
        None | Some(0) | Some(1) => ExchangeOrdering::Keep { ready_on: 1 },
        Some(producer) => ExchangeOrdering::WaitThenKeep {
            producer,
            consumer: 1,
            ready_on: 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_wait_for_the_values_stream_on_cuda_only() {
        let cuda = Device::cuda(0);
        assert_eq!(export_wait(cuda, Some(0xbeef), 1), Some((0xbeef, 1)));
        assert_eq!(
            export_wait(cuda, Some(0xbeef), 0xcafe),
            Some((0xbeef, 0xcafe))
        );
        assert_eq!(
            export_wait(cuda, Some(0xbeef), 0xbeef),
            None,
            "the same stream"
        );
        assert_eq!(export_wait(cuda, None, 1), None, "no pending work named");
        assert_eq!(
            export_wait(Device::new(DeviceType::ROCM, 0), Some(0xbeef), 1),
            None
        );
        assert_eq!(export_wait(Device::cpu(), Some(0xbeef), 1), None);
    }

    #[test]
    fn exchange_imports_are_ordered_by_mode_device_and_driver() {
        use ExchangeOrdering::*;
        let cuda = Device::cuda(0);
        let rocm = Device::new(DeviceType::ROCM, 0);
        // Stream-ordered: kept, on the producer's stream (NULL: the default one).
        assert_eq!(
            exchange_ordering(true, cuda, Some(0xbeef), false),
            Keep { ready_on: 0xbeef }
        );
        assert_eq!(
            exchange_ordering(true, cuda, None, false),
            Keep { ready_on: 1 }
        );
        assert_eq!(
            exchange_ordering(true, rocm, None, false),
            Keep { ready_on: 0 }
        );
        // Synchronising: the legacy default stream waits for the producer's.
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xbeef), true),
            WaitThenKeep {
                producer: 0xbeef,
                consumer: 1,
                ready_on: 1
            }
        );
        assert_eq!(
            exchange_ordering(false, cuda, Some(2), true),
            WaitThenKeep {
                producer: 2,
                consumer: 1,
                ready_on: 1
            }
        );
        for same in [None, Some(0), Some(1)] {
            assert_eq!(
                exchange_ordering(false, cuda, same, true),
                Keep { ready_on: 1 }
            );
        }
        // No driver, or ROCm: `__dlpack__` orders it.
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xbeef), false),
            UseDlpack
        );
        assert_eq!(
            exchange_ordering(false, rocm, Some(0xbeef), true),
            UseDlpack
        );
    }

    #[test]
    fn dtype_rule_follows_the_header() {
        for ok in [
            DataType::F32,
            DataType::BOOL,
            DataType::BF16,
            DataType::C64,
            DataType::F4_E2M1FN,
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
        assert!(matches!(
            bad(DataTypeCode::FLOAT, 0, 1),
            DLPackError::InvalidDtype(DtypeError::Bits { required: None, .. })
        ));
        assert!(matches!(
            bad(DataTypeCode::FLOAT, 32, 0),
            DLPackError::InvalidDtype(DtypeError::Lanes { .. })
        ));
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

    #[test]
    fn requested_streams() {
        assert_eq!(stream_to_request(None, Some(Device::cuda(0))), Some(1));
        assert_eq!(
            stream_to_request(Some(7), Some(Device::cuda_managed(0))),
            Some(7)
        );
        assert_eq!(stream_to_request(None, Some(Device::rocm(0))), Some(0));
        assert_eq!(stream_to_request(Some(7), Some(Device::cpu())), None);
        assert_eq!(stream_to_request(Some(7), None), None);
    }
}
