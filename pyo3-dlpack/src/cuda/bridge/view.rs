//! Typed cudarc views of CUDA imports.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};

use super::streams::{make_wait, wait_for};
use crate::import::tensor::PyTensor;
use crate::{DLPackError, Device, DeviceType, PlainElement};

impl PyTensor {
    /// A cudarc view of the elements of a contiguous CUDA tensor of `T`,
    /// for kernels launched on `stream` (feature `cudarc`).
    ///
    /// Checks what [`as_slice`](Self::as_slice) checks on the host (dtype,
    /// contiguity, alignment, no mutable view through another import of the
    /// same memory), and that the tensor is on `stream`'s device (`cuda:N`
    /// or `cuda_managed:N`, `N` the context's ordinal). Never touches the
    /// memory.
    ///
    /// Streams: `stream` first waits for the stream the data is ready on
    /// ([`PyTensor::stream`], CUDA's legacy default stream unless the import
    /// said otherwise), and when the view is dropped that stream waits for
    /// `stream`, so the producer's later work (a torch op on its current
    /// stream) comes after yours. Both are events: nothing blocks the host.
    /// A tensor ready on every stream (`stream()` is `None`: a
    /// `__cuda_array_interface__` import, synchronised) has no stream to
    /// wait for, nor one to make wait: when the view is dropped, the host
    /// waits for `stream` (cudarc's streams are non-blocking, so nothing
    /// else would order your work before the producer's next).
    ///
    /// ```no_run
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::PyTensor;
    /// use pyo3_dlpack::cudarc::driver::CudaContext;
    ///
    /// /// Python: `total(torch.ones(4, device="cuda"))`
    /// #[pyfunction]
    /// fn total(tensor: PyTensor) -> PyResult<f32> {
    ///     // cudarc panics (a `PanicException` in Python) where no CUDA driver
    ///     // is installed: check first.
    ///     // SAFETY: only loads the driver library (as cudarc's first call would).
    ///     if !unsafe { pyo3_dlpack::cudarc::driver::sys::is_culib_present() } {
    ///         return Err(pyo3::exceptions::PyRuntimeError::new_err("no CUDA driver on this machine"));
    ///     }
    ///     let stream = CudaContext::new(0).and_then(|ctx| ctx.new_stream())
    ///         .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    ///     let view = tensor.cuda_view::<f32>(&stream)?;
    ///     let host = stream.clone_dtoh(&view.as_view())
    ///         .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    ///     Ok(host.iter().sum())
    /// }
    /// ```
    ///
    /// # Panics
    ///
    /// When cudarc cannot create the two events it tracks a slice with
    /// (`CudaStream::upgrade_device_ptr` unwraps them): the driver is out of
    /// resources. PyO3 turns it into a `PanicException`.
    pub fn cuda_view<T: PlainElement>(
        &self,
        stream: &Arc<CudaStream>,
    ) -> Result<CudaTensorView<'_, T>, DLPackError> {
        self.check_cuda_view::<T>(stream.context().ordinal(), false)?;
        Ok(CudaTensorView {
            lent: self.lend(stream)?,
            tensor: PhantomData,
        })
    }

    /// A mutable cudarc view, as [`cuda_view`](Self::cuda_view), for a
    /// tensor that may be written and whose memory no other live import
    /// shares (the checks of [`as_slice_mut`](Self::as_slice_mut)).
    ///
    /// # Panics
    ///
    /// As [`cuda_view`](Self::cuda_view).
    pub fn cuda_view_mut<T: PlainElement>(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Result<CudaTensorViewMut<'_, T>, DLPackError> {
        self.check_cuda_view::<T>(stream.context().ordinal(), true)?;
        Ok(CudaTensorViewMut {
            lent: self.lend(stream)?,
            tensor: PhantomData,
        })
    }

    /// The checks of a cudarc view on the device with this ordinal; a
    /// mutable one also claims the memory (no other import may read it
    /// while this one lives).
    pub(crate) fn check_cuda_view<T: PlainElement>(
        &self,
        ordinal: usize,
        mutable: bool,
    ) -> Result<(), DLPackError> {
        self.check_view_access(mutable)?;
        let device = self.device();
        let cuda = matches!(
            device.device_type,
            DeviceType::CUDA | DeviceType::CUDA_MANAGED
        );
        if !cuda || usize::try_from(device.device_id) != Ok(ordinal) {
            return Err(DLPackError::Device {
                expected: Device::cuda(i32::try_from(ordinal).unwrap_or(i32::MAX)),
                found: device,
            });
        }
        self.check_view_dtype::<T>(mutable)?;
        self.ensure_contiguous()?;
        // Checks alignment (and a non-NULL address when there are elements).
        self.element_ptr::<T>()?;
        if mutable {
            self.ensure_writable()?;
            self.ensure_exclusive()?;
        }
        Ok(())
    }

    /// The stream the data is ready on, as a DLPack stream number.
    fn ready_stream(&self) -> Option<usize> {
        self.stream()
            .and_then(|stream| usize::try_from(stream).ok())
            .filter(|&stream| stream > 0)
    }

    /// The memory as a cudarc slice that is never freed, after `stream`
    /// waited for the data.
    fn lend<T>(&self, stream: &Arc<CudaStream>) -> Result<Lent<T>, DLPackError> {
        let device = self.device();
        let ready_on = self.ready_stream();
        // SAFETY: `ready_on` is the stream the producer readied the data on
        // (its current stream, or 1/2), alive while it hands out tensors of
        // this device, whose primary context cudarc's contexts share.
        unsafe { wait_for(device, ready_on, stream) }?;
        // SAFETY: checked above: `numel` elements of `T` on `stream`'s device
        // from this address, contiguous and aligned, alive while the
        // borrowed `PyTensor` is. `Lent` never frees them (it leaks the
        // slice back on drop).
        let slice = unsafe { stream.upgrade_device_ptr::<T>(self.data_ptr() as u64, self.numel()) };
        Ok(Lent {
            slice: ManuallyDrop::new(slice),
            device,
            ready_on,
        })
    }
}

/// A borrowed device slice: imported memory wrapped as a `CudaSlice` that
/// is handed back to nobody (leaked) when dropped, after the stream the
/// data came on was made to wait for the view's stream.
struct Lent<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    device: Device,
    ready_on: Option<usize>,
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the field is not used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        let stream = slice.stream().clone();
        // Not ours to free: `leak` ends cudarc's tracking (its events) only.
        let _address = slice.leak();
        // Data ready on every stream (a host-synchronised import) has no
        // stream to make wait, and the view's stream is cudarc's
        // non-blocking one, which nothing orders implicitly: the host waits
        // for it, which orders whatever comes next.
        let rejoined = self.ready_on.is_some_and(|ready_on| {
            // SAFETY: as in `PyTensor::lend`: the producer's stream is alive.
            unsafe { make_wait(self.device, &stream, ready_on) }.is_ok()
        });
        // Drop cannot fail: a wait that could not be queued becomes a wait
        // of the host for the view's stream, which orders the producer's
        // later work as well. If that fails too, the context is broken and
        // cudarc's next call on it reports the driver's (sticky) error.
        if !rejoined {
            stream.context().record_err(stream.synchronize());
        }
    }
}

/// A typed cudarc view of a CUDA `PyTensor`'s elements, from
/// [`PyTensor::cuda_view`]: [`as_view`](Self::as_view) is what cudarc's
/// copies and kernel launches take. Borrows the tensor, so the memory
/// outlives it.
pub struct CudaTensorView<'a, T> {
    lent: Lent<T>,
    tensor: PhantomData<&'a PyTensor>,
}

impl<T> CudaTensorView<'_, T> {
    /// The elements as cudarc's `&[T]` on the device.
    pub fn as_view(&self) -> CudaView<'_, T> {
        self.lent.slice.as_view()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.lent.slice.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.lent.slice.is_empty()
    }

    /// The stream the view was made for.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.lent.slice.stream()
    }
}

/// A mutable typed cudarc view of a CUDA `PyTensor`'s elements, from
/// [`PyTensor::cuda_view_mut`]. Borrows the tensor mutably.
pub struct CudaTensorViewMut<'a, T> {
    lent: Lent<T>,
    tensor: PhantomData<&'a mut PyTensor>,
}

impl<T> CudaTensorViewMut<'_, T> {
    /// The elements as cudarc's `&[T]` on the device.
    pub fn as_view(&self) -> CudaView<'_, T> {
        self.lent.slice.as_view()
    }

    /// The elements as cudarc's `&mut [T]` on the device.
    pub fn as_view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.lent.slice.as_view_mut()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.lent.slice.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.lent.slice.is_empty()
    }

    /// The stream the view was made for.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.lent.slice.stream()
    }
}

impl<T> fmt::Debug for CudaTensorView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaTensorView")
            .field("len", &self.len())
            .field("device", &self.lent.device)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for CudaTensorViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaTensorViewMut")
            .field("len", &self.len())
            .field("device", &self.lent.device)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use pyo3::prelude::*;

    use crate::error::LayoutError;
    use crate::{
        CapsuleFormat, DLPackError, DLPackTensor, DataType, Device, IntoDLPack, PyTensor,
        RawBuffer, TensorInfo,
    };

    /// Device memory that is never touched: a host address declared on a
    /// device, as a driver would hand one out.
    struct Declared {
        raw: RawBuffer,
        shape: Vec<usize>,
        strides: Option<Vec<isize>>,
        offset: usize,
        read_only: bool,
    }

    impl IntoDLPack for Declared {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            // SAFETY: (`allow_misaligned`) the memory is never read: these
            // tests import the description and check the views' own checks,
            // which must refuse a misaligned producer.
            unsafe { TensorInfo::builder(&self.raw).allow_misaligned() }
                .shape(self.shape.as_slice())
                .maybe_strides(self.strides.as_deref())
                .byte_offset(self.offset)
                .read_only(self.read_only)
                .build()
        }
    }

    static MEMORY: [u64; 8] = [0; 8];

    fn declared(device: Device, dtype: DataType) -> Declared {
        // SAFETY: the address is never dereferenced (the memory is declared
        // on a device, and these tests only check descriptions); it is valid
        // for the whole program, 64 bytes.
        let raw = unsafe { RawBuffer::new(MEMORY.as_ptr().cast_mut().cast(), 64, device) };
        Declared {
            raw: raw.with_dtype(dtype),
            shape: vec![2, 3],
            strides: None,
            offset: 0,
            read_only: false,
        }
    }

    fn import(py: Python<'_>, value: Declared) -> PyTensor {
        let capsule = DLPackTensor::new(value)
            .unwrap()
            .to_capsule(py, CapsuleFormat::Versioned)
            .unwrap();
        PyTensor::from_capsule(&capsule).unwrap()
    }

    fn check(value: Declared, ordinal: usize, mutable: bool) -> Result<(), DLPackError> {
        Python::attach(|py| import(py, value).check_cuda_view::<f32>(ordinal, mutable))
    }

    #[test]
    fn contiguous_tensors_of_the_streams_device_are_viewed() {
        let f32_on = |device| declared(device, DataType::F32);
        assert_eq!(check(f32_on(Device::cuda(0)), 0, false), Ok(()));
        assert_eq!(check(f32_on(Device::cuda(1)), 1, true), Ok(()));
        assert_eq!(check(f32_on(Device::cuda_managed(2)), 2, false), Ok(()));
        let empty = Declared {
            shape: vec![0, 3],
            ..f32_on(Device::cuda(0))
        };
        assert_eq!(check(empty, 0, true), Ok(()));
    }

    #[test]
    fn another_device_is_refused_with_both_named() {
        let err = check(declared(Device::cuda(1), DataType::F32), 0, false).unwrap_err();
        assert_eq!(
            err,
            DLPackError::Device {
                expected: Device::cuda(0),
                found: Device::cuda(1)
            }
        );
        assert_eq!(
            err.to_string(),
            "expected a tensor on cuda:0, got one on cuda:1"
        );
        for device in [Device::cpu(), Device::cuda_host(), Device::rocm(0)] {
            let err = check(declared(device, DataType::F32), 0, false).unwrap_err();
            assert_eq!(
                err,
                DLPackError::Device {
                    expected: Device::cuda(0),
                    found: device
                }
            );
        }
    }

    #[test]
    fn dtype_layout_and_alignment_are_checked() {
        let err = check(declared(Device::cuda(0), DataType::F64), 0, false).unwrap_err();
        assert_eq!(
            err,
            DLPackError::Dtype {
                expected: DataType::F32,
                found: DataType::F64
            }
        );
        let transposed = Declared {
            strides: Some(vec![1, 2]),
            ..declared(Device::cuda(0), DataType::F32)
        };
        assert!(matches!(
            check(transposed, 0, false),
            Err(DLPackError::Layout(LayoutError::NotContiguous { .. }))
        ));
        let misaligned = Declared {
            shape: vec![2],
            offset: 2,
            ..declared(Device::cuda(0), DataType::F32)
        };
        assert!(matches!(
            check(misaligned, 0, false),
            Err(DLPackError::Layout(LayoutError::Misaligned { .. }))
        ));
    }

    #[test]
    fn mutable_views_need_writable_unshared_memory() {
        let read_only = Declared {
            read_only: true,
            ..declared(Device::cuda(0), DataType::F32)
        };
        assert_eq!(check(read_only, 0, true), Err(DLPackError::ReadOnly));
        Python::attach(|py| {
            let first = import(py, declared(Device::cuda(0), DataType::F32));
            let second = import(py, declared(Device::cuda(0), DataType::F32));
            assert_eq!(second.check_cuda_view::<f32>(0, false), Ok(()));
            assert_eq!(
                first.check_cuda_view::<f32>(0, true),
                Err(LayoutError::Shared.into()),
                "another import handed out a view of the memory"
            );
            drop(second);
            assert_eq!(first.check_cuda_view::<f32>(0, true), Ok(()));
            // A writer now: a later import of the same memory is not read.
            let third = import(py, declared(Device::cuda(0), DataType::F32));
            assert_eq!(
                third.check_cuda_view::<f32>(0, false),
                Err(LayoutError::Shared.into())
            );
        });
    }
}
