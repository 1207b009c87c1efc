//! The adapters to safetensors, nalgebra and image, driven by
//! `tests/python/test_adapters.py`: exports carry a drop guard, imports
//! report what the adapter saw.

#[allow(unused_imports)]
use super::*;

use pyo3_dlpack::image::{ImageBuffer, Luma, Rgb, RgbImage};
use pyo3_dlpack::nalgebra::DMatrix;
use pyo3_dlpack::{SafetensorView, SafetensorsFile};

/// Any exportable value with a drop guard: the guard is dropped with it.
pub(crate) struct Guarded<T>(T, DropGuard);

impl<T: IntoDLPack> IntoDLPack for Guarded<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.0.tensor_info()
    }
}

/// A safetensors file, as the adapter opens it.
#[pyclass(frozen)]
pub(crate) struct SafetensorsHandle {
    file: SafetensorsFile,
}

/// The file's bytes as a `Vec`, with a drop guard: the bytes' owner, counted.
struct CountedBytes(Vec<u8>, DropGuard);

impl AsRef<[u8]> for CountedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Opens `path`: memory-mapped (`how="map"`), read into aligned memory
/// (`"read"`), or read into a `Vec` whose drop is counted (`"counted"`).
#[pyfunction]
#[pyo3(signature = (path, how="map"))]
pub(crate) fn safetensors_open(path: std::path::PathBuf, how: &str) -> PyResult<SafetensorsHandle> {
    let file = match how {
        // SAFETY: the tests do not modify their files while they are open.
        "map" => unsafe { SafetensorsFile::open(&path) }?,
        "read" => SafetensorsFile::read(&path)?,
        "counted" => {
            let bytes = std::fs::read(&path)?;
            SafetensorsFile::from_bytes(CountedBytes(bytes, DropGuard::new()))?
        }
        other => return Err(PyValueError::new_err(format!("unknown how: {other}"))),
    };
    Ok(SafetensorsHandle { file })
}

#[pymethods]
impl SafetensorsHandle {
    /// The tensor `name`, exported read-only with no copy.
    fn tensor(&self, name: &str) -> PyResult<DLPackTensor> {
        Ok(DLPackTensor::new(self.file.tensor(name)?)?)
    }

    /// The tensor `name` in a derived type: `SafetensorView` as its data field.
    fn weights(&self, name: &str) -> PyResult<Weights> {
        let data = self.file.tensor(name)?;
        Ok(Weights {
            shape: data.shape().to_vec(),
            data,
            _guard: DropGuard::new(),
        })
    }

    /// The tensor `name` as a `jax.Array` (JAX asks for legacy capsules,
    /// which cannot say read-only: `Native` hands it over as JAX's arrays are
    /// immutable).
    fn jax<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        pyo3_dlpack::Native::jax(self.file.tensor(name)?).into_array(py)
    }

    /// Address of the file's first byte.
    fn base_address(&self) -> usize {
        self.file.as_bytes().as_ptr() as usize
    }

    fn names(&self) -> Vec<String> {
        self.file.names().into_iter().map(str::to_owned).collect()
    }

    fn metadata(&self) -> Vec<(String, String)> {
        self.file
            .metadata()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// A tensor of a safetensors file as a derived type's data field.
#[derive(IntoDLPack)]
pub(crate) struct Weights {
    #[dlpack(data)]
    data: SafetensorView,
    #[dlpack(shape)]
    shape: Vec<usize>,
    _guard: DropGuard,
}

/// A `rows × cols` float64 `DMatrix` holding `10 * row + col`, exported
/// column-major.
#[pyfunction]
pub(crate) fn nalgebra_matrix(rows: usize, cols: usize) -> PyResult<DLPackTensor> {
    let m = DMatrix::from_fn(rows, cols, |r, c| (10 * r + c) as f64);
    Ok(DLPackTensor::new(Guarded(m, DropGuard::new()))?)
}

/// Shape, strides and the elements in row-major order.
type MatrixSeen = ((usize, usize), (usize, usize), Vec<f64>);

/// What a `DMatrixView<f64>` of the tensor sees.
#[pyfunction]
pub(crate) fn nalgebra_view(tensor: PyTensor) -> PyResult<MatrixSeen> {
    let m = tensor.as_dmatrix_view::<f64>()?;
    let values = (0..m.nrows())
        .flat_map(|r| (0..m.ncols()).map(move |c| (r, c)))
        .map(|(r, c)| m[(r, c)])
        .collect();
    Ok((m.shape(), m.strides(), values))
}

/// Multiplies a float32 matrix in place through a `DMatrixViewMut`.
#[pyfunction]
pub(crate) fn nalgebra_scale(mut tensor: PyTensor, factor: f32) -> PyResult<()> {
    let mut m = tensor.as_dmatrix_view_mut::<f32>()?;
    m *= factor;
    Ok(())
}

/// A `width × height` RGB image, pixel (x, y) = [x, y, x + y], exported as
/// an HWC tensor.
#[pyfunction]
pub(crate) fn image_rgb(width: u32, height: u32) -> PyResult<DLPackTensor> {
    let img = RgbImage::from_fn(width, height, |x, y| Rgb([x as u8, y as u8, (x + y) as u8]));
    Ok(DLPackTensor::new(Guarded(img, DropGuard::new()))?)
}

/// The tensor copied into an `ImageBuffer<Rgb<u8>>` and exported again
/// (with a drop guard), with the pixel at (x, y).
#[pyfunction]
pub(crate) fn image_copy_rgb8(
    tensor: PyTensor,
    x: u32,
    y: u32,
) -> PyResult<(DLPackTensor, [u8; 3])> {
    let img = tensor.to_image_buffer::<Rgb<u8>>()?;
    let pixel = img.get_pixel(x, y).0;
    Ok((DLPackTensor::new(Guarded(img, DropGuard::new()))?, pixel))
}

/// Width, height, the first subpixel's address and the sum of a uint16
/// grayscale image viewed in place.
#[pyfunction]
pub(crate) fn image_view_luma16(tensor: PyTensor) -> PyResult<(u32, u32, usize, u64)> {
    let img = tensor.as_image_view::<Luma<u16>>()?;
    let sum = img.pixels().map(|p| u64::from(p.0[0])).sum();
    Ok((
        img.width(),
        img.height(),
        img.as_raw().as_ptr() as usize,
        sum,
    ))
}

/// Sets every pixel of a float32 RGB image to (1 - r, 1 - g, 1 - b) in place.
#[pyfunction]
pub(crate) fn image_invert_f32(mut tensor: PyTensor) -> PyResult<()> {
    let mut img: ImageBuffer<Rgb<f32>, &mut [f32]> = tensor.as_image_view_mut()?;
    for pixel in img.pixels_mut() {
        for channel in &mut pixel.0 {
            *channel = 1.0 - *channel;
        }
    }
    Ok(())
}
