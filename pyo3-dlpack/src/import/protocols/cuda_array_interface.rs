//! Producers of `__cuda_array_interface__` (versions 2 and 3: Numba, CuPy,
//! PyTorch, RAPIDS): device memory described, never read. The device is the
//! pointer's own, asked of the CUDA driver (loaded at run time); version 3's
//! `stream` is honoured as its specification says, by ordering the
//! consumer's work after the producer's stream.

use pyo3::prelude::*;

use super::interface_dict::{InterfaceDict, malformed};
use crate::cuda::driver::{self as cuda_driver, Cuda};
use crate::error::{Interface, InterfaceError};
use crate::import::tensor::PyTensor;
use crate::{DLPackError, Device, DeviceType};

/// What the import does about the producer's stream before the tensor is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ordering {
    /// Nothing: no stream was given (the producer's work is done), the
    /// consumer asked for none (`stream=-1`), or both use the same stream.
    Nothing,
    /// Block the host until the producer's stream is done (no consumer
    /// stream is known, so all later work, on any stream, sees the data).
    Synchronize { producer: usize },
    /// Make the consumer's stream wait for the producer's (an event), without
    /// blocking the host.
    Wait { producer: usize, consumer: usize },
}

/// The ordering for a producer `stream` (the interface's `stream`: `None`,
/// or a `cudaStream_t` as an int, 1 and 2 meaning CUDA's legacy and
/// per-thread default streams) and the consumer's stream from
/// [`ImportOptions::stream`](crate::ImportOptions::stream) (DLPack's
/// convention: -1 asks for no synchronisation).
pub(crate) fn ordering(producer: Option<usize>, consumer: Option<i64>) -> Ordering {
    match (producer, consumer) {
        (None, _) | (_, Some(-1)) => Ordering::Nothing,
        (Some(producer), Some(consumer)) if consumer as usize == producer => Ordering::Nothing,
        (Some(producer), Some(consumer)) => Ordering::Wait {
            producer,
            consumer: consumer as usize,
        },
        (Some(producer), None) => Ordering::Synchronize { producer },
    }
}

/// Imports `obj`, whose `__cuda_array_interface__` is `value`, ordering its
/// stream against `consumer_stream`.
pub(crate) fn import(
    obj: &Bound<'_, PyAny>,
    value: Bound<'_, PyAny>,
    consumer_stream: Option<i64>,
) -> PyResult<PyTensor> {
    import_with(obj, value, consumer_stream, || {
        cuda_driver::driver(
            "__cuda_array_interface__ (to find the pointer's device and order the producer's stream)",
        )
    })
}

/// `import` with the CUDA driver given (tests give a fake one).
pub(crate) fn import_with(
    obj: &Bound<'_, PyAny>,
    value: Bound<'_, PyAny>,
    consumer_stream: Option<i64>,
    cuda: impl FnOnce() -> Result<&'static dyn Cuda, InterfaceError>,
) -> PyResult<PyTensor> {
    let dict = InterfaceDict::new(Interface::CudaArrayInterface, value)?;
    let version = dict.version(&[2, 3], "2 or 3")?;
    let data = dict.required("data")?;
    let (address, read_only) = dict.pointer(&data)?;
    let layout = dict.layout(read_only)?;
    let stream = if version >= 3 { stream(&dict)? } else { None };
    let empty = layout.shape.contains(&0);
    if address == 0 && !empty {
        return Err(malformed(
            Interface::CudaArrayInterface,
            "data",
            "a non-NULL address for a non-empty array",
            &data,
        ));
    }
    let (device, ready_on) = if empty {
        // Nothing is on any device: no driver is needed to say which.
        (Device::new(DeviceType::CUDA, 0), None)
    } else {
        locate(obj.py(), cuda, address, stream, consumer_stream).map_err(DLPackError::from)?
    };
    // SAFETY: the interface's promise: device memory at `address` that lives
    // as long as the producer object or its interface dict, writable unless
    // `read_only`; it is described, never read, by the import.
    let mut tensor = unsafe { dict.import_address(obj, address, layout, device) }?;
    tensor.set_stream(ready_on);
    Ok(tensor)
}

/// The device of the non-NULL `address`, asked of the driver `cuda`, and
/// the stream the data is ready on (`None`: every stream) once the
/// producer's `stream` is ordered before the consumer's (one conversion of
/// the driver's errors, by the caller).
fn locate(
    py: Python<'_>,
    cuda: impl FnOnce() -> Result<&'static dyn Cuda, InterfaceError>,
    address: usize,
    stream: Option<usize>,
    consumer_stream: Option<i64>,
) -> Result<(Device, Option<i64>), InterfaceError> {
    let cuda = cuda()?;
    let (ordinal, managed) = cuda.pointer_device(address)?;
    let kind = if managed {
        DeviceType::CUDA_MANAGED
    } else {
        DeviceType::CUDA
    };
    let ready_on = match ordering(stream, consumer_stream) {
        // Ready on the producer's stream (if it named one): the consumer
        // opted out of synchronisation, or shares it.
        Ordering::Nothing => stream.map(|s| s as i64),
        // Blocking without the GIL: work queued on the stream may need it.
        Ordering::Synchronize { producer } => {
            match py.detach(|| cuda.synchronize(ordinal, producer)) {
                Ok(()) => None,
                // The producer's stream is being captured (the one case the
                // driver wrapper refuses as capturing): work can be ordered
                // after the producer's only on that stream, so the data is
                // ready there, as if stream-ordered.
                Err(InterfaceError::CudaCapturing { .. }) => Some(producer as i64),
                Err(err) => return Err(err),
            }
        }
        Ordering::Wait { producer, consumer } => {
            cuda.wait(ordinal, producer, consumer)?;
            Some(consumer as i64)
        }
    };
    Ok((Device::new(kind, ordinal), ready_on))
}

/// Version 3's `stream`: absent or `None`, or a positive int (0 is
/// disallowed by the specification: it is ambiguous).
fn stream(dict: &InterfaceDict<'_>) -> PyResult<Option<usize>> {
    match dict.optional("stream") {
        None => Ok(None),
        Some(value) => match crate::python::ok(value.extract::<usize>()) {
            Some(stream) if stream != 0 => Ok(Some(stream)),
            _ => Err(malformed(
                Interface::CudaArrayInterface,
                "stream",
                "None or a positive int (0 is disallowed)",
                &value,
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::types::PyDict;
    use std::sync::Mutex;

    /// A driver that records what it is asked and says the pointer is on `ordinal`.
    struct Fake {
        ordinal: i32,
        managed: bool,
        calls: Mutex<Vec<String>>,
    }

    impl Cuda for Fake {
        fn pointer_device(&self, ptr: usize) -> Result<(i32, bool), InterfaceError> {
            self.calls.lock().unwrap().push(format!("device {ptr:#x}"));
            Ok((self.ordinal, self.managed))
        }
        fn synchronize(&self, device: i32, stream: usize) -> Result<(), InterfaceError> {
            assert_eq!(device, self.ordinal, "the pointer's device");
            self.calls
                .lock()
                .unwrap()
                .push(format!("synchronize {stream:#x}"));
            Ok(())
        }
        fn wait(
            &self,
            device: i32,
            producer: usize,
            consumer: usize,
        ) -> Result<(), InterfaceError> {
            assert_eq!(device, self.ordinal, "the pointer's device");
            self.calls
                .lock()
                .unwrap()
                .push(format!("wait {producer:#x} -> {consumer:#x}"));
            Ok(())
        }
        #[cfg(feature = "exchange-api")]
        fn stream_capturing(&self, device: i32, stream: usize) -> Result<bool, InterfaceError> {
            assert_eq!(device, self.ordinal, "the pointer's device");
            self.calls
                .lock()
                .unwrap()
                .push(format!("capturing {stream:#x}"));
            Ok(false)
        }
        unsafe fn copy_to_host(
            &self,
            _device: i32,
            _src: usize,
            _len: usize,
            _stream: usize,
            _dst: *mut u8,
        ) -> Result<(), InterfaceError> {
            unreachable!("imports copy nothing")
        }
        #[cfg(feature = "pickle")]
        fn upload(
            &self,
            _kind: crate::cuda::driver::Memory,
            _device: i32,
            _src: &[u8],
        ) -> Result<u64, InterfaceError> {
            unreachable!("imports allocate nothing")
        }
        #[cfg(feature = "pickle")]
        unsafe fn free(
            &self,
            _kind: crate::cuda::driver::Memory,
            _device: i32,
            _ptr: u64,
        ) -> Result<(), InterfaceError> {
            unreachable!("imports allocate nothing")
        }
    }

    /// Imports a fake device array (never dereferenced) through `fake`.
    fn import_fake(fake: &'static Fake, stream: Option<usize>, consumer: Option<i64>) -> PyTensor {
        Python::attach(|py| {
            let dict = PyDict::new(py);
            dict.set_item("shape", (2, 3)).unwrap();
            dict.set_item("typestr", "<f4").unwrap();
            dict.set_item("data", (0xdead_0000usize, true)).unwrap();
            dict.set_item("version", 3).unwrap();
            dict.set_item("stream", stream).unwrap();
            let obj = py.None().into_bound(py);
            import_with(&obj, dict.into_any(), consumer, || Ok(fake)).unwrap()
        })
    }

    #[test]
    fn the_device_is_the_pointers_and_the_stream_is_ordered() {
        static ON_THREE: Fake = Fake {
            ordinal: 3,
            managed: false,
            calls: Mutex::new(Vec::new()),
        };
        let tensor = import_fake(&ON_THREE, Some(0xbeef), None);
        assert_eq!(tensor.stream(), None, "synchronised: ready on every stream");
        assert_eq!(tensor.device(), Device::cuda(3));
        assert_eq!(tensor.data_ptr() as usize, 0xdead_0000);
        assert_eq!(
            (tensor.shape(), tensor.is_read_only()),
            (&[2i64, 3][..], true)
        );
        drop(tensor);
        let tensor = import_fake(&ON_THREE, Some(0xbeef), Some(0xcafe));
        assert_eq!(tensor.stream(), Some(0xcafe));
        let device = tensor.device_tensor().expect("device memory");
        assert_eq!(
            (device.device, device.data_ptr as usize, device.stream),
            (Device::cuda(3), 0xdead_0000, Some(0xcafe))
        );
        assert!(matches!(tensor.locate::<f32>(), Ok(crate::Located::Device(d)) if d == device));
        drop(tensor);
        let tensor = import_fake(&ON_THREE, None, Some(0xcafe));
        assert_eq!(tensor.stream(), None);
        drop(tensor);
        let tensor = import_fake(&ON_THREE, Some(0xbeef), Some(-1));
        assert_eq!(
            tensor.stream(),
            Some(0xbeef),
            "not synchronised: ready on the producer's"
        );
        drop(tensor);
        assert_eq!(
            *ON_THREE.calls.lock().unwrap(),
            [
                "device 0xdead0000",
                "synchronize 0xbeef",
                "device 0xdead0000",
                "wait 0xbeef -> 0xcafe",
                "device 0xdead0000",
                "device 0xdead0000",
            ]
        );
    }

    #[test]
    fn managed_memory_is_a_cuda_managed_tensor() {
        static MANAGED: Fake = Fake {
            ordinal: 1,
            managed: true,
            calls: Mutex::new(Vec::new()),
        };
        let tensor = import_fake(&MANAGED, None, None);
        assert_eq!(tensor.device(), Device::new(DeviceType::CUDA_MANAGED, 1));
    }

    #[test]
    fn the_consumer_is_ordered_after_the_producers_stream() {
        // No producer stream: its work is done.
        assert_eq!(ordering(None, None), Ordering::Nothing);
        assert_eq!(ordering(None, Some(7)), Ordering::Nothing);
        // No consumer stream known: block until the producer is done.
        assert_eq!(
            ordering(Some(1), None),
            Ordering::Synchronize { producer: 1 }
        );
        assert_eq!(
            ordering(Some(0xdead), None),
            Ordering::Synchronize { producer: 0xdead }
        );
        // The consumer opted out, or shares the stream.
        assert_eq!(ordering(Some(0xdead), Some(-1)), Ordering::Nothing);
        assert_eq!(ordering(Some(0xdead), Some(0xdead)), Ordering::Nothing);
        // Two streams: the consumer's waits for the producer's.
        assert_eq!(
            ordering(Some(0xdead), Some(2)),
            Ordering::Wait {
                producer: 0xdead,
                consumer: 2
            }
        );
    }
}
