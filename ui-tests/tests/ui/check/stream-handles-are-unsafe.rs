//! A stream handle reaches the CUDA driver, which cannot tell a made-up one
//! and crashes on it: naming one is `unsafe`, in every API that takes one.

use pyo3_dlpack::{DataType, Device, ImportOptions, RawBuffer, TensorInfo};

fn main() {
    let data = vec![0.0f32; 4];
    // SAFETY: `data` outlives the buffer.
    let raw = unsafe { RawBuffer::new(data.as_ptr().cast_mut().cast(), 16, Device::cuda(0)) };
    let _ = raw.with_dtype(DataType::F32).with_stream(0xdead_beef);
    let _ = TensorInfo::builder(&data).stream(Some(0xdead_beef));
    let _ = ImportOptions::new().stream(0xdead_beef);
}
