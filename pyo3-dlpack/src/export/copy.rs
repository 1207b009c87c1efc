//! `copy=True` exports: the elements gathered into a fresh, 64-byte-aligned,
//! row-major host buffer that the consumer owns alone.

use crate::export::aligned::AlignedBuffer;
use crate::export::info::TensorInfo;
use crate::export::into::IntoDLPack;
use crate::layout;
use crate::{DLPackError, DataType, Device};

/// A tensor in a host buffer of its own: a `copy=True` export, or a tensor
/// allocated for an exchange-API consumer.
pub(crate) struct HostTensor {
    bytes: AlignedBuffer<u8>,
    shape: Vec<i64>,
    dtype: DataType,
    device: Device,
}

impl HostTensor {
    /// Copies the elements `info` describes into a new `cpu:0` buffer, once
    /// the host may read them (host memory), or through the CUDA driver
    /// (CUDA device memory), after the value's stream
    /// ([`crate::cuda::host::copy_to_host`]).
    ///
    /// # Panics
    ///
    /// If the extent of the memory was not checked (the export plan refuses
    /// such copies before calling this).
    pub(crate) fn copy_of(info: &TensorInfo<'_>) -> Result<Self, DLPackError> {
        assert!(
            info.is_bounds_checked(),
            "copy_of needs memory of checked extent"
        );
        let dtype = info.dtype();
        // Fits: the description was checked to lie inside a buffer.
        let nbytes = layout::storage_bytes(info.numel(), dtype, false)
            .expect("a checked description's storage fits in memory");
        let (shape, strides) = info.dims_slices();
        // Packed sub-byte elements (float4, float6) are never strided
        // (`TensorInfo` refuses strides for them): their copy is their
        // `nbytes` bytes, moved as bytes (`copy_to_host` moves whole bytes
        // only; at one byte an element it would move twice the storage).
        let packed_bytes = [nbytes as i64];
        let (shape, strides, moved) = if dtype.is_byte_sized() {
            (shape, strides, dtype)
        } else {
            (&packed_bytes[..], &[1i64][..], DataType::U8)
        };
        let src = info.data_ptr().cast::<u8>().cast_const();
        let write = |dst| {
            // SAFETY: a live TensorInfo checked the layout to lie inside its
            // buffer on its device (asserted above), which its owner keeps
            // allocated while `info` is borrowed (packed sub-byte elements:
            // their `nbytes` bytes from the first, row-major); `moved` is a
            // whole number of bytes; `dst` is a new allocation of `nbytes`:
            // the `numel` elements of `itemsize` bytes, or the packed bytes.
            unsafe {
                crate::cuda::host::copy_to_host(
                    info.device(),
                    info.stream(),
                    src,
                    shape,
                    strides,
                    moved,
                    dst,
                )
            }
        };
        // SAFETY: `copy_to_host` writes all `nbytes` bytes when it succeeds,
        // nothing outside them; any byte is a `u8`.
        let bytes = unsafe { AlignedBuffer::<u8>::from_writer(nbytes, write) }?;
        Ok(Self {
            bytes,
            shape: info.shape().to_vec(),
            dtype,
            device: Device::cpu(),
        })
    }

    /// A zero-filled, row-major `cpu:0` tensor of `shape`; an error for
    /// negative extents, or a size that overflows or cannot be allocated.
    #[cfg(feature = "exchange-api")]
    pub(crate) fn zeroed(shape: &[i64], dtype: DataType) -> Result<Self, DLPackError> {
        let overflow = || crate::error::SizeOverflow::Allocation {
            shape: shape.to_vec(),
            dtype,
        };
        let numel = layout::numel(shape)?;
        let nbytes = layout::storage_bytes(numel, dtype, false).ok_or_else(overflow)?;
        let out_of_memory = || DLPackError::OutOfMemory { bytes: nbytes };
        Ok(Self {
            bytes: AlignedBuffer::try_zeroed(nbytes).ok_or_else(out_of_memory)?,
            shape: shape.to_vec(),
            dtype,
            device: Device::cpu(),
        })
    }
}

#[cfg(feature = "pickle")]
impl HostTensor {
    /// The elements' bytes, row-major (packed sub-byte types: their storage).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }
}

impl IntoDLPack for HostTensor {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        // The bytes are a copy of elements of `dtype` (or zeros), so they may
        // hold any type, bool included.
        TensorInfo::builder(&self.bytes)
            .untyped()
            .shape(&self.shape)
            .dtype(self.dtype)
            .device(self.device)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transposed_view_is_copied_in_row_major_order() {
        let data: Vec<i32> = (0..6).collect(); // 2x3: [[0,1,2],[3,4,5]]
        let transposed = TensorInfo::builder(&data)
            .shape([3usize, 2])
            .strides([1i64, 3])
            .build()
            .unwrap();
        let copy = HostTensor::copy_of(&transposed).unwrap();
        let values: Vec<i32> = copy
            .bytes
            .chunks_exact(4)
            .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(values, [0, 3, 1, 4, 2, 5]);
        let info = copy.tensor_info().unwrap();
        assert_eq!(info.shape(), vec![3, 2]);
        assert_eq!(info.strides(), vec![2, 1]);
        assert_eq!(info.dtype(), DataType::I32);
        assert_ne!(info.data_ptr(), data.as_ptr().cast_mut().cast());
    }

    #[test]
    fn reversed_and_broadcast_views() {
        let data: Vec<u8> = vec![10, 20, 30];
        let reversed = TensorInfo::builder(&data)
            .shape([3usize])
            .strides([-1i64])
            .byte_offset(2)
            .build()
            .unwrap();
        assert_eq!(
            &HostTensor::copy_of(&reversed).unwrap().bytes[..],
            &[30, 20, 10]
        );
        let broadcast = TensorInfo::builder(&data)
            .shape([2usize, 3])
            .strides([0i64, 1])
            .build()
            .unwrap();
        assert_eq!(
            &HostTensor::copy_of(&broadcast).unwrap().bytes[..],
            &[10, 20, 30, 10, 20, 30]
        );
    }

    #[test]
    fn empty_and_packed() {
        let none: Vec<f64> = vec![];
        let empty = TensorInfo::new(&none, [0usize, 4]).unwrap();
        assert!(HostTensor::copy_of(&empty).unwrap().bytes.is_empty());
        let packed = vec![0xABu8, 0xCD];
        let fp4 = TensorInfo::builder(&packed)
            .shape([3usize])
            .dtype(DataType::F4_E2M1FN)
            .build()
            .unwrap();
        assert_eq!(&HostTensor::copy_of(&fp4).unwrap().bytes[..], &[0xAB, 0xCD]);
    }
}
