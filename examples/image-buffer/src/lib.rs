//! An image pipeline that hands its pixel buffers to NumPy, PyTorch and JAX
//! without copying them.
//!
//! - `gradient(height, width)`: an RGB image, `uint8`, shape `(H, W, 3)`, in a
//!   64-byte-aligned buffer (so JAX does not copy it either).
//! - `gradient(height, width, channels_first=True)`: the same interleaved
//!   pixels described as `(3, H, W)` through strides, the layout torch models
//!   expect, still without a copy.
//! - `sine(n, cycles)`: a float32 signal in a plain `Vec<f32>` (a 1-D tensor).

use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, DLPackError, DLPackTensor, IntoDLPack, TensorInfo};

/// An RGB image: interleaved `height × width × 3` bytes.
struct Image {
    pixels: AlignedBuffer<u8>,
    height: usize,
    width: usize,
    channels_first: bool,
}

impl IntoDLPack for Image {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let (h, w) = (self.height, self.width);
        if self.channels_first {
            // Channel c of pixel (y, x) is at byte (y * w + x) * 3 + c.
            TensorInfo::builder(&self.pixels)
                .shape([3, h, w])
                .strides([1, 3 * w as i64, 3])
                .build()
        } else {
            TensorInfo::new(&self.pixels, [h, w, 3])
        }
    }
}

/// A horizontal red ramp, a vertical green ramp and a constant blue.
#[pyfunction]
#[pyo3(signature = (height, width, channels_first=false))]
fn gradient(height: usize, width: usize, channels_first: bool) -> PyResult<DLPackTensor> {
    let ramp = |i: usize, n: usize| (i * 255 / n.saturating_sub(1).max(1)) as u8;
    let mut pixels = AlignedBuffer::<u8>::zeroed(height * width * 3);
    for (i, rgb) in pixels.chunks_exact_mut(3).enumerate() {
        rgb.copy_from_slice(&[ramp(i % width, width), ramp(i / width, height), 128]);
    }
    let image = Image {
        pixels,
        height,
        width,
        channels_first,
    };
    Ok(DLPackTensor::new(image)?)
}

/// `n` samples of a sine wave with `cycles` periods, as float32.
#[pyfunction]
fn sine(n: usize, cycles: f32) -> PyResult<DLPackTensor> {
    let step = std::f32::consts::TAU * cycles / n.max(1) as f32;
    let samples: Vec<f32> = (0..n).map(|i| (i as f32 * step).sin()).collect();
    Ok(DLPackTensor::new(samples)?)
}

#[pymodule]
fn image_buffer(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gradient, m)?)?;
    m.add_function(wrap_pyfunction!(sine, m)?)?;
    Ok(())
}
