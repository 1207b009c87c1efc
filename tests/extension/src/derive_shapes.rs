//! Derived types over the memory real crates hold: shared `Arc<Vec<T>>`,
//! a mapped file, `bytes::Bytes`, extents in scalar fields, an inner tensor.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use pyo3_dlpack::bytes::Bytes;
use pyo3_dlpack::memmap2::Mmap;

#[allow(unused_imports)]
use super::*;

/// Samples shared with other Rust code: exported read-only.
#[derive(IntoDLPack)]
pub(crate) struct SharedSamples {
    #[dlpack(data)]
    samples: Arc<Vec<f32>>,
    _guard: DropGuard,
}

/// `n` samples holding `i / 2` at `i`, with a clone of their `Arc` kept
/// elsewhere; returns the value and the address of the first sample.
#[pyfunction]
pub(crate) fn shared_samples(n: usize) -> (SharedSamples, usize) {
    let samples = Arc::new((0..n).map(|i| i as f32 / 2.0).collect::<Vec<_>>());
    let address = samples.as_ptr() as usize;
    let value = SharedSamples {
        samples: Arc::clone(&samples),
        _guard: DropGuard::new(),
    };
    (value, address)
}

/// An image both ways: the import's PyTensor is the export's memory.
#[derive(IntoDLPack, FromDLPack)]
#[dlpack(dtype = u8, shape = [height, width, channels])]
pub(crate) struct HwcFrame {
    #[dlpack(tensor)]
    pixels: PyTensor,
    height: usize,
    width: usize,
    channels: u8,
}

/// The frame as imported, exported back as it came, with its extents.
#[pyfunction]
pub(crate) fn hwc_frame_roundtrip(frame: HwcFrame) -> (HwcFrame, (usize, usize, u8)) {
    let extents = (frame.height, frame.width, frame.channels);
    (frame, extents)
}

/// An image type keeping its extents as scalars, in its own field order.
#[derive(IntoDLPack)]
#[dlpack(shape = [height, width, channels])]
pub(crate) struct HwcImage {
    #[dlpack(data)]
    pixels: Vec<u8>,
    width: u32,
    channels: u8,
    height: u32,
    _guard: DropGuard,
}

fn hwc_image(height: u32, width: u32) -> HwcImage {
    let n = height as usize * width as usize * 3;
    HwcImage {
        pixels: (0..n).map(|i| (i % 256) as u8).collect(),
        width,
        channels: 3,
        height,
        _guard: DropGuard::new(),
    }
}

/// `height × width × 3` bytes, byte `i` holding `i % 256`; returns the value
/// and the address of its first byte.
#[pyfunction]
pub(crate) fn hwc_image_fields(height: u32, width: u32) -> (HwcImage, usize) {
    let image = hwc_image(height, width);
    let address = image.pixels.as_ptr() as usize;
    (image, address)
}

/// An image with a label beside it: the tensor is the inner image's.
#[derive(IntoDLPack)]
pub(crate) struct LabelledImage {
    #[dlpack(inner)]
    image: HwcImage,
    label: String,
}

/// `hwc_image_fields`' image inside a `LabelledImage`.
#[pyfunction]
pub(crate) fn labelled_image(height: u32, width: u32, label: String) -> (LabelledImage, usize) {
    let (image, address) = hwc_image_fields(height, width);
    (LabelledImage { image, label }, address)
}

/// A memory-mapped file read as float32.
#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
pub(crate) struct MappedWeights {
    #[dlpack(data)]
    map: Mmap,
    #[dlpack(shape)]
    shape: [usize; 2],
    _guard: DropGuard,
}

/// A `rows × cols` float32 matrix holding `i` at flat index `i`, written to a
/// file of its own, mapped, and the file removed; returns the value and the
/// mapping's address.
#[pyfunction]
pub(crate) fn mapped_weights(rows: usize, cols: usize) -> PyResult<(MappedWeights, usize)> {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "dlpack-testext-weights-{}-{}",
        std::process::id(),
        FILES.fetch_add(1, Ordering::SeqCst)
    );
    let path = std::env::temp_dir().join(name);
    let bytes: Vec<u8> = (0..rows * cols)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    std::fs::write(&path, bytes)?;
    let file = std::fs::File::open(&path)?;
    // SAFETY: the file is this function's own, under a name no other code
    // uses, and it is removed below: nothing can modify it while mapped.
    let map = unsafe { Mmap::map(&file) };
    std::fs::remove_file(&path)?;
    let map = map?;
    let address = map.as_ptr() as usize;
    let value = MappedWeights {
        map,
        shape: [rows, cols],
        _guard: DropGuard::new(),
    };
    Ok((value, address))
}

/// Shared bytes read as float32.
#[derive(IntoDLPack)]
#[dlpack(dtype = f32)]
pub(crate) struct ReceivedFloats {
    #[dlpack(data)]
    payload: Bytes,
    _guard: DropGuard,
}

/// `n` float32 values holding `i` at `i` in a `Bytes` (a clone of it kept
/// elsewhere); returns the value and the address of its first byte.
#[pyfunction]
pub(crate) fn received_floats(n: usize) -> (ReceivedFloats, usize) {
    let payload = Bytes::from(
        (0..n)
            .flat_map(|i| (i as f32).to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let address = payload.as_ptr() as usize;
    let value = ReceivedFloats {
        payload: payload.clone(),
        _guard: DropGuard::new(),
    };
    (value, address)
}
