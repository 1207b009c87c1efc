//! The stream rules of CUDA and ROCm, each in one place: which consumer
//! stream a producer synchronises on (the DLPack specification's table),
//! which stream a consumer asks for, when an export waits for the value's
//! own stream, and how an exchange-API import is ordered.

use crate::error::ExportError;
use crate::{DLPackError, Device, DeviceType};

/// Whether memory on `device` is ordered by CUDA streams (device and
/// managed memory).
pub(crate) fn is_cuda(device: Device) -> bool {
    matches!(
        device.device_type,
        DeviceType::CUDA | DeviceType::CUDA_MANAGED
    )
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
    let cuda = is_cuda(device);
    match producer {
        Some(producer) if cuda && consumer > 0 && consumer as usize != producer => {
            Some((producer, consumer as usize))
        }
        _ => None,
    }
}

/// The wait an export's release needs, for a value whose pending work is on
/// stream `producer` exported to a consumer on `consumer`: `(legacy, producer)`,
/// the value's stream made to wait for the work queued on CUDA's legacy
/// default stream by then, when the consumer worked on that stream (DLPack:
/// a consumer uses the tensor on the stream it asked for). The value's
/// stream then frees or overwrites the memory only after the consumer's work
/// (cudarc frees a `CudaSlice` on its own non-blocking stream, which nothing
/// else orders after the legacy stream). Only the legacy stream can be named
/// at release: it lives as long as the context, where a created stream may be
/// gone and stream 2 is another stream on each thread (a deleter runs on any
/// thread); and only a value's own stream other than those two is made to
/// wait.
pub(crate) fn release_wait(
    device: Device,
    producer: Option<usize>,
    consumer: Option<i64>,
) -> Option<(usize, usize)> {
    const LEGACY: usize = 1;
    const PER_THREAD: usize = 2;
    match (producer, consumer) {
        (Some(producer), Some(1)) if is_cuda(device) && producer > PER_THREAD => {
            Some((LEGACY, producer))
        }
        _ => None,
    }
}

/// What an import through a producer's C exchange table (which does no
/// stream synchronisation) does with a tensor on a device with streams.
#[cfg(feature = "exchange-api")]
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
/// stream), for a consumer on stream `consumer` (`None`: CUDA's legacy
/// default stream, what `__dlpack__` gets by default). Stream-ordered
/// imports are kept as they are, ready on the producer's stream (the
/// consumer's is not waited on); synchronising ones make the consumer's
/// stream wait for the producer's through the CUDA driver, or, without one
/// (or on ROCm), go through `__dlpack__`.
#[cfg(feature = "exchange-api")]
pub(crate) fn exchange_ordering(
    stream_ordered: bool,
    device: Device,
    producer: Option<usize>,
    consumer: Option<i64>,
    cuda_driver: bool,
) -> ExchangeOrdering {
    let cuda = is_cuda(device);
    let default = if cuda { 1 } else { 0 };
    if stream_ordered {
        return ExchangeOrdering::Keep {
            ready_on: producer.map_or(default, |s| s as i64),
        };
    }
    if !cuda || !cuda_driver {
        return ExchangeOrdering::UseDlpack;
    }
    // NULL (0) is the legacy default stream (1) itself; 2 (per-thread) is not.
    let producer = match producer {
        None | Some(0) => 1,
        Some(stream) => stream,
    };
    let consumer = consumer.unwrap_or(1);
    if producer as i64 == consumer {
        ExchangeOrdering::Keep { ready_on: consumer }
    } else {
        ExchangeOrdering::WaitThenKeep {
            producer,
            consumer: consumer as usize,
            ready_on: consumer,
        }
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
    fn releases_wait_for_the_legacy_stream_only() {
        let cuda = Device::cuda(1);
        assert_eq!(release_wait(cuda, Some(0xbeef), Some(1)), Some((1, 0xbeef)));
        let managed = Device::cuda_managed(0);
        assert_eq!(
            release_wait(managed, Some(0xbeef), Some(1)),
            Some((1, 0xbeef))
        );
        // A consumer on a created or per-thread stream: it may be gone, or another
        // thread's, when the deleter runs.
        assert_eq!(release_wait(cuda, Some(0xbeef), Some(0xcafe)), None);
        assert_eq!(release_wait(cuda, Some(0xbeef), Some(2)), None);
        assert_eq!(release_wait(cuda, Some(0xbeef), None), None);
        // A value on the legacy or per-thread stream, or naming none.
        assert_eq!(release_wait(cuda, Some(1), Some(1)), None);
        assert_eq!(release_wait(cuda, Some(2), Some(1)), None);
        assert_eq!(release_wait(cuda, None, Some(1)), None);
        assert_eq!(release_wait(Device::cpu(), Some(0xbeef), Some(1)), None);
    }

    #[cfg(feature = "exchange-api")]
    #[test]
    fn exchange_imports_are_ordered_by_mode_device_and_driver() {
        use ExchangeOrdering::*;
        let cuda = Device::cuda(0);
        let rocm = Device::new(DeviceType::ROCM, 0);
        // Stream-ordered: kept, on the producer's stream (NULL: the default one).
        assert_eq!(
            exchange_ordering(true, cuda, Some(0xbeef), None, false),
            Keep { ready_on: 0xbeef }
        );
        assert_eq!(
            exchange_ordering(true, cuda, None, None, false),
            Keep { ready_on: 1 }
        );
        assert_eq!(
            exchange_ordering(true, rocm, None, None, false),
            Keep { ready_on: 0 }
        );
        // Synchronising: the legacy default stream waits for the producer's.
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xbeef), None, true),
            WaitThenKeep {
                producer: 0xbeef,
                consumer: 1,
                ready_on: 1
            }
        );
        assert_eq!(
            exchange_ordering(false, cuda, Some(2), None, true),
            WaitThenKeep {
                producer: 2,
                consumer: 1,
                ready_on: 1
            }
        );
        for same in [None, Some(0), Some(1)] {
            assert_eq!(
                exchange_ordering(false, cuda, same, None, true),
                Keep { ready_on: 1 }
            );
        }
        // A named consumer stream waits for the producer's, unless it is that stream;
        // stream-ordered imports ignore it.
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xbeef), Some(0xcafe), true),
            WaitThenKeep {
                producer: 0xbeef,
                consumer: 0xcafe,
                ready_on: 0xcafe
            }
        );
        assert_eq!(
            exchange_ordering(false, cuda, None, Some(0xcafe), true),
            WaitThenKeep {
                producer: 1,
                consumer: 0xcafe,
                ready_on: 0xcafe
            }
        );
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xcafe), Some(0xcafe), true),
            Keep { ready_on: 0xcafe }
        );
        assert_eq!(
            exchange_ordering(false, cuda, None, Some(1), true),
            Keep { ready_on: 1 }
        );
        assert_eq!(
            exchange_ordering(true, cuda, Some(0xbeef), Some(0xcafe), true),
            Keep { ready_on: 0xbeef }
        );
        // No driver, or ROCm: `__dlpack__` orders it.
        assert_eq!(
            exchange_ordering(false, cuda, Some(0xbeef), None, false),
            UseDlpack
        );
        assert_eq!(
            exchange_ordering(false, rocm, Some(0xbeef), None, true),
            UseDlpack
        );
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
