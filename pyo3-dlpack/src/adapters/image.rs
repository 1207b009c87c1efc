//! `image` buffers as tensors (feature `image`): an `ImageBuffer` exported
//! as a (height, width, channels) tensor with no copy; imports as image
//! buffers (one copy) or as views.

use std::ffi::c_void;

use image::{ImageBuffer, Pixel};

use crate::error::AdapterError;
use crate::export::{IntoDLPack, TensorData, TensorInfo};
use crate::import::PyTensor;
use crate::{DLPackError, DataType, Element, PlainElement};

/// An image buffer that owns its pixels in a `Vec`.
type Owned<P> = ImageBuffer<P, Vec<<P as Pixel>::Subpixel>>;

// SAFETY: the buffer keeps its subpixels in a `Vec`, whose heap buffer does
// not move when the image moves and lives until it is dropped; it holds
// `len` initialized subpixels. An exported image is never resized (it is
// held behind a shared reference), and `as_ptr` is the `Vec`'s raw pointer
// (no reference to the elements is kept), so consumers may write through it.
unsafe impl<P: Pixel> TensorData for Owned<P>
where
    P::Subpixel: Element,
{
    const STATIC_DTYPE: Option<DataType> = Some(<P::Subpixel as Element>::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_raw().as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.as_raw().len() * size_of::<P::Subpixel>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(<P::Subpixel as Element>::DTYPE)
    }
}

/// The image as a row-major (height, width, channels) tensor of its
/// subpixel type, over the image's own memory (no copy, writable): the
/// layout NumPy, PIL (`Image.fromarray`), torchvision's `to_tensor` input
/// and OpenCV use. A grayscale image has one channel: shape (height, width, 1).
///
/// ```
/// use pyo3_dlpack::{DataType, IntoDLPack, image::{Rgb, RgbImage}};
///
/// let img = RgbImage::from_pixel(4, 2, Rgb([10, 20, 30])); // width 4, height 2
/// let info = img.tensor_info().unwrap();
/// assert_eq!((info.shape().to_vec(), info.dtype()), (vec![2, 4, 3], DataType::U8));
/// assert_eq!(info.data_ptr().cast_const(), img.as_raw().as_ptr().cast());
/// ```
///
/// Only `Vec`-backed buffers are exported: a buffer over a borrowed slice
/// cannot outlive the borrow, as an export may.
impl<P: Pixel + Send + Sync + 'static> IntoDLPack for Owned<P>
where
    P::Subpixel: Element,
{
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self)
            .shape([
                self.height() as usize,
                self.width() as usize,
                usize::from(P::CHANNEL_COUNT),
            ])
            .build()
    }
}

/// The type a refusal names, such as `image::ImageBuffer<image::color::Rgb<u8>>`.
fn target<P: Pixel>() -> String {
    format!("image::ImageBuffer<{}>", std::any::type_name::<P>())
}

/// The width and height of an image of `P` pixels over the tensor: a
/// (height, width, channels) tensor with `P`'s channel count, or (height,
/// width) for one-channel pixels.
fn image_size<P: Pixel>(tensor: &PyTensor) -> Result<(u32, u32), DLPackError> {
    let channels = i64::from(P::CHANNEL_COUNT);
    let shape = tensor.shape();
    let refuse = |expected: String| {
        DLPackError::from(AdapterError::Inexpressible {
            target: target::<P>(),
            expected,
            shape: shape.to_vec(),
            strides: tensor.strides().to_vec(),
        })
    };
    match shape {
        [_, _, c] if *c == channels => {}
        [_, _] if channels == 1 => {}
        [_, _, _] => {
            return Err(refuse(format!(
                "{channels} channel{} in the last dimension (height, width, channels)",
                if channels == 1 { "" } else { "s" }
            )));
        }
        _ => {
            return Err(DLPackError::Ndim {
                expected: 3,
                found: shape.len(),
            });
        }
    }
    let (height, width) = (shape[0], shape[1]);
    match (u32::try_from(width), u32::try_from(height)) {
        (Ok(width), Ok(height)) => Ok((width, height)),
        _ => Err(refuse(format!(
            "a height and width of at most {} pixels",
            u32::MAX
        ))),
    }
}

impl PyTensor {
    /// A copy of a host tensor as an image: a (height, width, channels)
    /// tensor of `P`'s subpixel type and channel count (or (height, width)
    /// for one-channel pixels), in any strides. One copy; for no copy, see
    /// [`as_image_view`](Self::as_image_view). Feature `image`.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// use pyo3_dlpack::image::{Rgb, RgbImage};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<u8>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::new(&self.0, [1usize, 2, 3])
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![1, 2, 3, 4, 5, 6]))?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let tensor = PyTensor::from_capsule(&capsule)?; // np.array([[[1, 2, 3], [4, 5, 6]]], np.uint8)
    /// let img: RgbImage = tensor.to_image_buffer()?;
    /// assert_eq!((img.width(), img.height()), (2, 1));
    /// assert_eq!(img.get_pixel(1, 0), &Rgb([4, 5, 6]));
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn to_image_buffer<P: Pixel>(&self) -> Result<Owned<P>, DLPackError>
    where
        P::Subpixel: PlainElement,
    {
        self.check_element::<P::Subpixel>(false)?;
        let (width, height) = image_size::<P>(self)?;
        let subpixels = if self.is_contiguous() {
            self.as_slice::<P::Subpixel>()?.to_vec()
        } else {
            self.to_vec::<P::Subpixel>()?
        };
        let len = subpixels.len();
        ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| {
            // Not reached: `len` is height × width × channels.
            DLPackError::user(format!(
                "image refused {len} subpixels for a {width} × {height} image"
            ))
        })
    }

    /// An image over a contiguous host tensor's memory (no copy), laid out
    /// as for [`to_image_buffer`](Self::to_image_buffer) but row-major
    /// contiguous only: `image` addresses pixels in that order. Feature `image`.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// use pyo3_dlpack::image::Luma;
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<f32>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::new(&self.0, [1usize, 2])
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![0.5, 1.0]))?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let tensor = PyTensor::from_capsule(&capsule)?; // a (1, 2) float32 grayscale image
    /// let img = tensor.as_image_view::<Luma<f32>>()?;
    /// assert_eq!(img.get_pixel(1, 0), &Luma([1.0]));
    /// assert_eq!(img.as_raw().as_ptr().cast(), tensor.data_ptr().cast_const());
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn as_image_view<P: Pixel>(&self) -> Result<ImageBuffer<P, &[P::Subpixel]>, DLPackError>
    where
        P::Subpixel: PlainElement,
    {
        self.check_element::<P::Subpixel>(false)?;
        let (width, height) = image_size::<P>(self)?;
        let subpixels = self.as_slice::<P::Subpixel>()?;
        let len = subpixels.len();
        ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| {
            DLPackError::user(format!(
                "image refused {len} subpixels for a {width} × {height} image"
            ))
        })
    }

    /// A mutable image over a contiguous, writable host tensor's memory:
    /// drawing on it draws on the producer's array. Also refuses read-only
    /// tensors and memory another live `PyTensor` shares. Feature `image`.
    pub fn as_image_view_mut<P: Pixel>(
        &mut self,
    ) -> Result<ImageBuffer<P, &mut [P::Subpixel]>, DLPackError>
    where
        P::Subpixel: PlainElement,
    {
        self.check_element::<P::Subpixel>(true)?;
        let (width, height) = image_size::<P>(self)?;
        let subpixels = self.as_slice_mut::<P::Subpixel>()?;
        let len = subpixels.len();
        ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| {
            DLPackError::user(format!(
                "image refused {len} subpixels for a {width} × {height} image"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{GrayImage, Luma, Rgba, RgbaImage};

    #[test]
    fn images_are_hwc_tensors_over_their_pixels() {
        let img = RgbaImage::from_fn(3, 2, |x, y| Rgba([x as u8, y as u8, 7, 255]));
        let info = img.tensor_info().unwrap();
        assert_eq!(info.shape(), vec![2, 3, 4]);
        assert_eq!(info.strides(), vec![12, 4, 1]);
        assert_eq!(info.data_ptr().cast_const(), img.as_raw().as_ptr().cast());

        let gray = GrayImage::from_pixel(5, 1, Luma([9]));
        assert_eq!(gray.tensor_info().unwrap().shape(), vec![1, 5, 1]);

        let wide = ImageBuffer::<Luma<u16>, Vec<u16>>::new(0, 4);
        assert_eq!(wide.tensor_info().unwrap().numel(), 0);
    }

    #[test]
    fn a_longer_container_exports_the_image_only() {
        let img = GrayImage::from_raw(2, 2, vec![1, 2, 3, 4, 5, 6]).unwrap();
        let info = img.tensor_info().unwrap();
        assert_eq!((info.shape(), info.numel()), (&[2i64, 2, 1][..], 4));
    }
}
