//! An imported tensor can be exported again: `PyTensor` is tensor memory,
//! and `IntoDLPack` with its own shape and strides (pass-through, and the
//! exchange API's `managed_tensor_to_py_object`).

use std::ffi::c_void;

use crate::error::{ExportError, LayoutError};
use crate::export::{IntoDLPack, OwnLayout, TensorData, TensorInfo};
use crate::import::tensor::PyTensor;
use crate::{DLPackError, DataType, Device, Writability};

// SAFETY: the memory is the producer's, kept alive until the PyTensor drops
// (it calls the producer's deleter then); its address and the span its
// elements reach were validated on import and never change; it lives on
// `device()`; it is read-only when the producer said so, and of unknown
// writability (not written from Rust) when it sent a legacy capsule. The PyTensor owns it exclusively; its own views borrow it.
unsafe impl TensorData for PyTensor {
    fn data_ptr(&self) -> *mut c_void {
        let (start, end) = self.span();
        if start == end {
            // No elements: the first element's address (possibly NULL) is as good as any.
            return PyTensor::data_ptr(self);
        }
        start as *mut c_void
    }
    fn byte_len(&self) -> Option<usize> {
        let (start, end) = self.span();
        Some(end - start)
    }
    fn device(&self) -> Device {
        PyTensor::device(self)
    }
    fn dtype(&self) -> Option<DataType> {
        Some(PyTensor::dtype(self))
    }
    fn is_read_only(&self) -> bool {
        PyTensor::is_read_only(self)
    }
    fn writability(&self) -> Writability {
        PyTensor::writability(self)
    }
    /// Its shape, strides and first element, as imported: a `#[dlpack(data)]`
    /// field holding a transposed import is never described in memory order.
    /// Sub-byte dtypes, which travel packed and without strides (see
    /// `tensor_info` below), describe themselves as a flat buffer.
    fn own_layout(&self) -> Option<OwnLayout<'_>> {
        if !self.dtype().is_byte_sized() {
            return None;
        }
        let first = PyTensor::data_ptr(self) as usize;
        let lowest = TensorData::data_ptr(self) as usize;
        Some(OwnLayout {
            shape: self.shape().into(),
            strides: self.strides().into(),
            byte_offset: first.wrapping_sub(lowest),
        })
    }
}

/// Exports the imported tensor as it is: same memory, shape, strides, device,
/// dtype and [`Writability`] (a legacy import goes out as a legacy capsule
/// when one is asked for, and `READ_ONLY` in a versioned one).
impl IntoDLPack for PyTensor {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        if !self.dtype().is_byte_sized() && self.is_subbyte_padded() {
            // Described as packed, a consumer would misread the elements.
            return Err(LayoutError::PaddedSubByte {
                dtype: self.dtype(),
            }
            .into());
        }
        if !self.dtype().is_byte_sized() && !self.is_contiguous() {
            // Packed elements go out without strides (row-major): strided
            // ones described so would be other elements of the same bytes.
            return Err(LayoutError::StridedSubByte {
                dtype: self.dtype(),
            }
            .into());
        }
        let first = PyTensor::data_ptr(self) as usize;
        let lowest = TensorData::data_ptr(self) as usize;
        let device = self.device();
        let handle = self.raw_data() as usize;
        if device.device_type.holds_handles() && (lowest != handle || first != handle) {
            return Err(ExportError::HandleOffset {
                device,
                offset: lowest as i128 - handle as i128,
            }
            .into());
        }
        let builder = TensorInfo::builder(self);
        if self.dtype().is_byte_sized() {
            // Shape, strides and byte offset are its own (`own_layout`):
            // given again, they would only be compared with themselves.
            return builder.build();
        }
        builder
            .shape(self.shape())
            .byte_offset(first.wrapping_sub(lowest))
            .build()
    }
}
