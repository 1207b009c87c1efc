//! An image pipeline that hands its pixel buffers to NumPy, PyTorch and JAX
//! without copying them.
//!
//! - `gradient(height, width)`: an RGB image, `uint8`, shape `(H, W, 3)`, in a
//!   64-byte-aligned buffer (so JAX does not copy it either).
//! - `gradient(height, width, channels_first=True)`: the same interleaved
//!   pixels described as `(3, H, W)` through strides, the layout torch models
//!   expect, still without a copy.
//! - `sine(n, cycles)`: a float32 signal in a plain `Vec<f32>` (a 1-D tensor).
//!
//! Both return `image_buffer.DLPackTensor`; `image_buffer.pyi` is the type stub
//! maturin ships in the wheel.

use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, DLPackTensor, IntoDLPack};

/// An RGB image: interleaved `height × width × 3` bytes. The derive makes it
/// a tensor: returned from a `#[pyfunction]`, it is a `DLPackTensor`.
#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>, // 64-byte aligned: JAX imports it without a copy
    #[dlpack(shape)]
    shape: [usize; 3],
    /// `None`: row-major. `Some`: the channels-first view `(3, H, W)` of the
    /// same interleaved bytes (channel c of pixel (y, x) is byte (y*W + x)*3 + c).
    #[dlpack(strides)]
    strides: Option<[i64; 3]>,
}

/// A float32 signal: a plain `Vec<f32>` is tensor memory too.
#[derive(IntoDLPack)]
struct Signal {
    #[dlpack(data)]
    samples: Vec<f32>,
}

/// A horizontal red ramp, a vertical green ramp and a constant blue.
#[pyfunction]
#[pyo3(signature = (height, width, channels_first=false))]
fn gradient(height: usize, width: usize, channels_first: bool) -> Image {
    let ramp = |i: usize, n: usize| (i * 255 / n.saturating_sub(1).max(1)) as u8;
    let mut pixels = AlignedBuffer::<u8>::zeroed(height * width * 3);
    for (i, rgb) in pixels.chunks_exact_mut(3).enumerate() {
        rgb.copy_from_slice(&[ramp(i % width, width), ramp(i / width, height), 128]);
    }
    let (shape, strides) = if channels_first {
        ([3, height, width], Some([1, 3 * width as i64, 3]))
    } else {
        ([height, width, 3], None)
    };
    Image {
        pixels,
        shape,
        strides,
    }
}

/// `n` samples of a sine wave with `cycles` periods, as float32.
#[pyfunction]
fn sine(n: usize, cycles: f32) -> Signal {
    let step = std::f32::consts::TAU * cycles / n.max(1) as f32;
    Signal {
        samples: (0..n).map(|i| (i as f32 * step).sin()).collect(),
    }
}

#[pymodule]
fn image_buffer(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Optional: lets Python name the class (`image_buffer.DLPackTensor`); its type
    // stub is in image_buffer.pyi.
    DLPackTensor::add_to_module(m)?;
    m.add_function(wrap_pyfunction!(gradient, m)?)?;
    m.add_function(wrap_pyfunction!(sine, m)?)?;
    Ok(())
}
