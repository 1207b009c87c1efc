//! candle tensors (feature `candle`): a `candle_core::Tensor` exported
//! read-only with no copy while it holds its storage's read lock; imports
//! copied once into a new CPU `Tensor`.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, DType, DeviceLocation, Storage, StorageRef, Tensor};

use crate::error::AdapterError;
use crate::export::{IntoDLPack, TensorData, TensorInfo};
use crate::import::PyTensor;
use crate::{DLPackError, DataType, Device};

/// A candle [`Tensor`] held for export: its memory shared read-only with
/// Python, no copy.
///
/// candle keeps a tensor's elements in a storage behind a read-write lock,
/// shared by every tensor cloned or viewed from it (`narrow`, `t`,
/// `reshape`), and its in-place operations (`Var::set`, `slice_set`,
/// `InplaceOp1`) write through that lock. A `CandleTensor` holds the lock
/// for reading until it is dropped, that is until every export of it (every
/// NumPy array or torch tensor made from it) is gone: while it lives, the
/// elements cannot change or move, so consumers read exactly what candle
/// had. An in-place write to the storage **waits** meanwhile, and waits
/// forever if it is made on the thread that holds the last Python view;
/// drop the views (or export a copy, `tensor.copy()?`) before writing in
/// place. Clones share the one lock.
///
/// CPU tensors only, of every candle dtype but the sub-byte float6 and
/// float4 ones (candle's own support for them is storage only): float8
/// `F8E4M3` is DLPack's `float8_e4m3fn`, `F8E8M0` its `float8_e8m0fnu`.
/// A tensor exported with its layout: a transposed or narrowed candle tensor
/// keeps its strides and offset, with no copy.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use pyo3_dlpack::{CandleTensor, DataType, IntoDLPack};
///
/// let t = Tensor::arange(0f32, 6., &Device::Cpu)?.reshape((2, 3))?.t()?; // (3, 2), strides (1, 3)
/// let held = CandleTensor::new(t)?;
/// let info = held.tensor_info()?;
/// assert_eq!((info.shape(), info.strides(), info.dtype()), (&[3i64, 2][..], &[1i64, 3][..], DataType::F32));
/// assert!(info.is_read_only());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Returned from a `#[pyfunction]` as a [`DLPackTensor`](crate::DLPackTensor)
/// (`DLPackTensor::new(CandleTensor::new(t)?)`), or as the `#[dlpack(data)]`
/// field of a derived type, whose `#[dlpack(shape)]` (and strides, for a
/// tensor that is not contiguous) describe it from its first element.
#[derive(Clone)]
pub struct CandleTensor {
    held: Arc<Held>,
}

/// The read lock and the tensor it locks. Fields drop in order: the lock
/// before the tensor whose storage it borrows.
struct Held {
    storage: StorageRef<'static>,
    /// Only held: it keeps the locked storage alive.
    tensor: Arc<Tensor>,
}

impl CandleTensor {
    /// Takes the tensor's storage lock for reading (waiting for a write in
    /// progress or queued on another thread: the lock lets a waiting writer
    /// go first, so a thread that already holds an export of the storage
    /// should clone that `CandleTensor` rather than make a new one while
    /// another thread may be writing) and checks that it can be exported: a
    /// [`DLPackError::Device`] for a CUDA or Metal tensor, an
    /// [`AdapterError::UnsupportedDtype`] for float6 and float4.
    pub fn new(tensor: Tensor) -> Result<Self, DLPackError> {
        let tensor = Arc::new(tensor);
        let guard = tensor.storage_and_layout().0;
        // SAFETY: the guard borrows the lock of `tensor`'s storage, which
        // lives inside the `Arc<Tensor>` allocation (or behind it): that
        // allocation does not move when the `Arc` moves, and `Held` keeps a
        // clone of the `Arc` alive until after the guard is dropped (field
        // order). So the borrow outlives its use although its lifetime is
        // no longer checked. The guard may drop on any thread: this crate
        // enables parking_lot's `send_guard`, under which its raw lock has
        // no owning thread.
        let storage = unsafe { std::mem::transmute::<StorageRef<'_>, StorageRef<'static>>(guard) };
        memory(&storage)?;
        Ok(Self {
            held: Arc::new(Held { storage, tensor }),
        })
    }

    /// The tensor.
    pub fn tensor(&self) -> &Tensor {
        &self.held.tensor
    }

    /// Where the first element is, how many bytes lie from there to the
    /// storage's end, and the dtype: checked by `new`.
    fn first_element(&self) -> (*const u8, usize, DataType) {
        let (base, len, dtype) =
            memory(&self.held.storage).unwrap_or((std::ptr::null(), 0, DataType::U8));
        let offset = (self.tensor().layout().start_offset() * dtype.itemsize()).min(len);
        (base.wrapping_add(offset), len - offset, dtype)
    }
}

impl fmt::Debug for CandleTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CandleTensor").field(self.tensor()).finish()
    }
}

/// The storage's host memory: its address, length in bytes and dtype.
fn memory(storage: &Storage) -> Result<(*const u8, usize, DataType), DLPackError> {
    macro_rules! elements {
        ($cpu:expr, $($variant:ident => $dtype:expr),* $(,)?) => {
            match $cpu {
                $(CpuStorage::$variant(v) => (v.as_ptr().cast::<u8>(), size_of_val(v.as_slice()), $dtype),)*
                CpuStorage::F6E2M3(_) => return Err(unsupported(DType::F6E2M3)),
                CpuStorage::F6E3M2(_) => return Err(unsupported(DType::F6E3M2)),
                CpuStorage::F4(_) => return Err(unsupported(DType::F4)),
            }
        };
    }
    let cpu = match storage {
        Storage::Cpu(cpu) => cpu,
        other => {
            return Err(DLPackError::Device {
                expected: Device::cpu(),
                found: candle_device(other.device().location()),
            });
        }
    };
    Ok(elements!(cpu,
        U8 => DataType::U8, U32 => DataType::U32, I16 => DataType::I16,
        I32 => DataType::I32, I64 => DataType::I64, BF16 => DataType::BF16,
        F16 => DataType::F16, F32 => DataType::F32, F64 => DataType::F64,
        F8E4M3 => DataType::F8_E4M3FN, F8E8M0 => DataType::F8_E8M0FNU,
    ))
}

fn unsupported(dtype: DType) -> DLPackError {
    AdapterError::UnsupportedDtype {
        dtype: format!("candle {dtype:?}"),
    }
    .into()
}

/// candle's device as DLPack's.
fn candle_device(location: DeviceLocation) -> Device {
    let id = |gpu_id: usize| i32::try_from(gpu_id).unwrap_or(i32::MAX);
    match location {
        DeviceLocation::Cpu => Device::cpu(),
        DeviceLocation::Cuda { gpu_id } => Device::cuda(id(gpu_id)),
        DeviceLocation::Metal { gpu_id } => Device::metal(id(gpu_id)),
    }
}

// SAFETY: the address is inside the storage's `Vec`, which `Held` keeps
// alive and locked for reading while any clone of it lives: candle cannot
// write, grow, replace or free the vector until the lock is released, so
// the address and the length from it stay the same and the bytes
// unchanged. They are `Vec` elements of the storage's dtype, on the host.
// Read-only: other candle tensors read the storage through shared references.
unsafe impl TensorData for CandleTensor {
    fn data_ptr(&self) -> *mut c_void {
        self.first_element().0.cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.first_element().1)
    }
    fn dtype(&self) -> Option<DataType> {
        Some(self.first_element().2)
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

/// The tensor with candle's shape and strides (in elements; a broadcast
/// dimension has stride 0), read-only.
impl IntoDLPack for CandleTensor {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let layout = self.tensor().layout();
        let strides: Vec<i64> = layout.stride().iter().map(|&s| s as i64).collect();
        TensorInfo::builder(self)
            .shape(layout.dims())
            .strides(strides)
            .build()
    }
}

/// The tensor's elements copied into the candle storage of its dtype.
macro_rules! copied {
    ($tensor:expr, $($dtype:ident => $variant:ident),* $(,)?) => {
        match $tensor.dtype() {
            $(DataType::$dtype => CpuStorage::$variant(
                // SAFETY: the variant's element type is candle's for this
                // dtype, of its item size (candle's `DType::size_in_bytes`),
                // and every bit pattern of it is a value: plain integers and
                // floats, float8 as one byte of any value.
                unsafe { $tensor.copy_elements()? },
            ),)*
            found => {
                return Err(AdapterError::DtypeNotHeld {
                    target: "candle_core::Tensor".into(),
                    found,
                }
                .into());
            }
        }
    };
}

impl PyTensor {
    /// A copy of the tensor as a new CPU candle [`Tensor`], in row-major
    /// order (any strides), ordered after the producer's stream for CUDA
    /// memory (see [`to_vec`](Self::to_vec)). One copy, as fast as a
    /// `memcpy` for contiguous tensors: candle's CPU storage owns a `Vec`,
    /// which cannot be made over another framework's memory. Feature `candle`.
    ///
    /// dtypes: `uint8`, `uint32`, `int16`, `int32`, `int64`, `bfloat16`,
    /// `float16`, `float32`, `float64`, `float8_e4m3fn`, `float8_e8m0fnu`;
    /// others are an [`AdapterError::DtypeNotHeld`] (candle has no bool,
    /// `int8`, `uint16`, `uint64` or complex tensors).
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<i64>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::builder(&self.0).shape([3usize, 2]).strides([1i64, 3]).build()
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![0, 1, 2, 3, 4, 5]))?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let tensor = PyTensor::from_capsule(&capsule)?; // np.arange(6).reshape(2, 3).T
    /// let t = tensor.to_candle_tensor()?;
    /// assert_eq!(t.to_vec2::<i64>().unwrap(), [[0, 3], [1, 4], [2, 5]]);
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn to_candle_tensor(&self) -> Result<Tensor, DLPackError> {
        let storage = copied!(self,
            U8 => U8, U32 => U32, I16 => I16, I32 => I32, I64 => I64,
            BF16 => BF16, F16 => F16, F32 => F32, F64 => F64,
            F8_E4M3FN => F8E4M3, F8_E8M0FNU => F8E8M0,
        );
        let shape: Vec<usize> = self.shape().iter().map(|&d| d as usize).collect();
        Ok(Tensor::from_storage(
            Storage::Cpu(storage),
            shape,
            BackpropOp::none(),
            false,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use candle_core::{Device as CandleDevice, Tensor};

    use super::*;

    /// The address of the tensor's storage, as candle sees it.
    fn storage_address(t: &Tensor) -> usize {
        memory(&t.storage_and_layout().0).unwrap().0 as usize
    }

    #[test]
    fn a_tensor_exports_its_own_storage_read_only() {
        let t = Tensor::arange(0f32, 12., &CandleDevice::Cpu)
            .unwrap()
            .reshape((3, 4))
            .unwrap();
        let address = storage_address(&t);
        let held = CandleTensor::new(t).unwrap();
        let info = held.tensor_info().unwrap();
        assert_eq!(info.data_ptr() as usize, address);
        assert_eq!(
            (info.shape(), info.strides()),
            (&[3i64, 4][..], &[4i64, 1][..])
        );
        assert_eq!((info.dtype(), info.is_read_only()), (DataType::F32, true));
    }

    #[test]
    fn views_keep_their_strides_and_offset() {
        let t = Tensor::arange(0i64, 12, &CandleDevice::Cpu)
            .unwrap()
            .reshape((3, 4))
            .unwrap();
        let address = storage_address(&t);
        // Rows 1..3, columns 2..4, transposed: a (2, 2) view from element 6.
        let view = t
            .narrow(0, 1, 2)
            .unwrap()
            .narrow(1, 2, 2)
            .unwrap()
            .t()
            .unwrap();
        let held = CandleTensor::new(view).unwrap();
        let info = held.tensor_info().unwrap();
        assert_eq!(info.data_ptr() as usize, address + 6 * 8);
        assert_eq!(
            (info.shape(), info.strides()),
            (&[2i64, 2][..], &[1i64, 4][..])
        );
        assert_eq!(held.byte_len(), Some(6 * 8));
        let broadcast = Tensor::new(&[1f32, 2.], &CandleDevice::Cpu)
            .unwrap()
            .broadcast_as((3, 2))
            .unwrap();
        let info = CandleTensor::new(broadcast)
            .unwrap()
            .tensor_info()
            .unwrap()
            .strides()
            .to_vec();
        assert_eq!(info, [0, 1]);
    }

    #[test]
    fn every_dtype_but_the_sub_byte_floats_exports() {
        let cpu = &CandleDevice::Cpu;
        let ones = Tensor::ones(3, DType::F32, cpu).unwrap();
        for (dtype, expected) in [
            (DType::U8, DataType::U8),
            (DType::U32, DataType::U32),
            (DType::I16, DataType::I16),
            (DType::I32, DataType::I32),
            (DType::I64, DataType::I64),
            (DType::BF16, DataType::BF16),
            (DType::F16, DataType::F16),
            (DType::F64, DataType::F64),
            (DType::F8E4M3, DataType::F8_E4M3FN),
        ] {
            let held = CandleTensor::new(ones.to_dtype(dtype).unwrap()).unwrap();
            assert_eq!(held.tensor_info().unwrap().dtype(), expected, "{dtype:?}");
        }
        let e8m0 = Tensor::from_storage(
            Storage::Cpu(CpuStorage::F8E8M0(vec![127; 4])),
            4,
            BackpropOp::none(),
            false,
        );
        assert_eq!(
            CandleTensor::new(e8m0).unwrap().dtype(),
            Some(DataType::F8_E8M0FNU)
        );
        let f4 = Tensor::from_storage(
            Storage::Cpu(CpuStorage::F4(vec![0; 4])),
            4,
            BackpropOp::none(),
            false,
        );
        let err = CandleTensor::new(f4).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected a dtype DLPack can describe, got candle F4"
        );
    }

    /// Runs candle's in-place `zero_set` of `t` on another thread while
    /// `hold` runs here, checks that the write had not happened when `hold`
    /// returned (it drops what holds the lock: `why` says what), then that
    /// it did once the thread ended.
    fn assert_write_waits_for(t: &Tensor, why: &str, hold: impl FnOnce()) {
        let written = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                t.zero_set().unwrap();
                written.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!written.load(Ordering::SeqCst), "{why}");
            hold();
        });
        assert!(written.load(Ordering::SeqCst));
    }

    #[test]
    fn an_in_place_write_waits_until_the_export_is_dropped() {
        let t = Tensor::ones(4, DType::F32, &CandleDevice::Cpu).unwrap();
        let held = CandleTensor::new(t.clone()).unwrap();
        assert_write_waits_for(&t, "candle wrote under an export", || {
            let first = held.data_ptr().cast::<f32>();
            // SAFETY: the export's first element, read while it is held.
            assert_eq!(unsafe { first.read() }, 1.0);
            drop(held);
        });
        assert_eq!(t.to_vec1::<f32>().unwrap(), [0.0; 4]);
    }

    #[test]
    fn a_clone_keeps_the_lock_after_the_original_is_dropped() {
        let t = Tensor::ones(2, DType::U8, &CandleDevice::Cpu).unwrap();
        let held = CandleTensor::new(t.clone()).unwrap();
        let again = held.clone();
        drop(held);
        assert_eq!(again.tensor_info().unwrap().numel(), 2);
        assert!(format!("{again:?}").starts_with("CandleTensor(Tensor["));
        assert_write_waits_for(&t, "the clone's lock was released", || drop(again));
        assert_eq!(t.to_vec1::<u8>().unwrap(), [0, 0]);
    }
}
