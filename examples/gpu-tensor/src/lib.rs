//! A custom device tensor type, as a GPU library would have: a raw pointer,
//! a device, a shape and strides, and an allocation that frees the memory.
//!
//! `#[derive(IntoDLPack)]` exports it. Here the allocation is host memory so
//! the example runs anywhere; with a CUDA allocator, `Allocation` would hold
//! the device pointer (freed with `cudaFree` in its `Drop`), `device` would be
//! `Device::cuda(ordinal)`, and not one line of the export would change.

use std::ffi::c_void;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, DataType, Device, IntoDLPack, RawBuffer};

/// Owns the memory. Host memory here; a CUDA build would free with `cudaFree`.
struct Allocation {
    host: AlignedBuffer<u8>,
}

impl Allocation {
    fn new(bytes: usize) -> Self {
        Self {
            host: AlignedBuffer::zeroed(bytes),
        }
    }

    fn ptr(&self) -> *mut c_void {
        self.host.as_ptr().cast_mut().cast()
    }
}

/// The library's tensor type.
#[derive(IntoDLPack)]
struct DeviceArray {
    /// The memory, as a pointer any GPU API hands out.
    #[dlpack(data)]
    buffer: RawBuffer,
    #[dlpack(shape)]
    shape: Vec<i64>,
    /// `None` means row-major.
    #[dlpack(strides)]
    strides: Option<Vec<i64>>,
    #[dlpack(device)]
    device: Device,
    #[dlpack(dtype)]
    dtype: DataType,
    /// Kept alive (and dropped) with the array, not described.
    _allocation: Allocation,
}

impl DeviceArray {
    /// A zero-filled array of `dtype`, row-major unless `strides` are given.
    fn new(shape: Vec<i64>, dtype: DataType, strides: Option<Vec<i64>>) -> PyResult<Self> {
        let count: i64 = shape.iter().product();
        let count = usize::try_from(count).map_err(|_| PyValueError::new_err("negative extent"))?;
        let bytes = count * dtype.itemsize();
        let allocation = Allocation::new(bytes);
        // SAFETY: `_allocation` owns these `bytes` bytes and is stored in the
        // same struct, so it outlives the RawBuffer; nothing else touches them.
        let buffer = unsafe { RawBuffer::new(allocation.ptr(), bytes, Device::cpu()) };
        Ok(Self {
            buffer,
            shape,
            strides,
            device: Device::cpu(),
            dtype,
            _allocation: allocation,
        })
    }
}

/// `zeros([2, 3], "float32")`: a zero-filled array.
#[pyfunction]
fn zeros(shape: Vec<i64>, dtype: &str) -> PyResult<DeviceArray> {
    let dtype = dtype
        .parse::<DataType>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    DeviceArray::new(shape, dtype, None)
}

/// A `(rows, cols)` float32 array stored column-major (Fortran order):
/// strides `(1, rows)`, as many GPU BLAS libraries keep matrices.
#[pyfunction]
fn column_major(rows: i64, cols: i64) -> PyResult<DeviceArray> {
    let array = DeviceArray::new(vec![rows, cols], DataType::F32, Some(vec![1, rows]))?;
    // Fill element (r, c) with r * 10 + c, at offset r + c * rows.
    let capacity = array.buffer.len() / size_of::<f32>();
    let values = array._allocation.ptr().cast::<f32>();
    for c in 0..cols {
        for r in 0..rows {
            let index = (r + c * rows) as usize;
            assert!(index < capacity, "inside the allocation");
            let cell = values.wrapping_add(index);
            // SAFETY: `index < rows * cols`, the allocation's length in f32s,
            // and nothing else holds a reference to it yet.
            unsafe { cell.write((r * 10 + c) as f32) };
        }
    }
    Ok(array)
}

#[pymodule]
fn gpu_tensor(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(column_major, m)?)?;
    Ok(())
}
