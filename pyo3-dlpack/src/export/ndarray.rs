//! `ndarray` arrays as tensors (feature `ndarray`), with their own strides.

use std::ffi::c_void;

use ndarray::{Array, Dimension};

use crate::export::data::{OwnLayout, TensorData};
use crate::export::info::TensorInfo;
use crate::export::into::IntoDLPack;
use crate::layout;
use crate::{DLPackError, DataType, Element};

/// Byte distance from the lowest element reached to element `[0, 0, …]`
/// (non-zero with negative strides), and the span in bytes of all elements.
fn extent<T, D: Dimension>(array: &Array<T, D>) -> (usize, usize) {
    if array.is_empty() {
        return (0, 0);
    }
    // An array's extents and strides fit `isize` (ndarray guarantees it).
    let shape: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
    let strides: Vec<i64> = array.strides().iter().map(|&s| s as i64).collect();
    let (low, high) = layout::reach(&shape, &strides, size_of::<T>())
        .expect("an owned array's elements lie inside its allocation");
    ((-low) as usize, (high - low) as usize)
}

// SAFETY: an owned array's heap buffer does not move with the array and
// lives until it is dropped. `extent` covers exactly the elements the array's
// shape and strides reach, all inside that buffer; `as_ptr` is the array's own
// raw pointer (no reference to the elements), so consumers may write through it.
unsafe impl<T: Element, D: Dimension> TensorData for Array<T, D> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        let (below, _) = extent(self);
        self.as_ptr()
            .cast::<u8>()
            .wrapping_sub(below)
            .cast_mut()
            .cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(extent(self).1)
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
    fn own_layout(&self) -> Option<OwnLayout<'_>> {
        Some(OwnLayout {
            shape: self.shape().into(),
            strides: self.strides().into(),
            byte_offset: extent(self).0,
        })
    }
}

/// The array with its shape and strides (negative and zero ones included),
/// as any description of its memory has them (a `#[dlpack(data)]` field, a
/// [`TensorInfo::builder`]): a shape or strides given besides must agree.
///
/// ```
/// use pyo3_dlpack::{IntoDLPack, ndarray::{Array2, s}};
///
/// let mut a = Array2::<f32>::zeros((3, 4));
/// a.slice_collapse(s![.., ..;-1]); // reversed columns, still one owned buffer
/// let info = a.tensor_info().unwrap();
/// assert_eq!(info.shape(), vec![3, 4]);
/// assert_eq!(info.strides(), vec![4, -1]);
/// ```
impl<T: Element, D: Dimension + 'static> IntoDLPack for Array<T, D> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Array3, ShapeBuilder, s};

    #[test]
    fn standard_layout() {
        let a = Array3::<i16>::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i16);
        let info = a.tensor_info().unwrap();
        assert_eq!(info.shape(), vec![2, 3, 4]);
        assert_eq!(info.strides(), vec![12, 4, 1]);
        assert_eq!(info.dtype(), DataType::I16);
        assert_eq!(info.data_ptr(), a.as_ptr().cast_mut().cast());
    }

    #[test]
    fn transposed_and_reversed() {
        let t = Array2::<f64>::zeros((3, 5)).reversed_axes();
        let info = t.tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![5, 3], vec![1, 5])
        );
        let mut r = Array2::<u8>::zeros((2, 6));
        r.slice_collapse(s![..;-1, ..;2]);
        let info = r.tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![2, 3], vec![-6, 2])
        );
        assert_eq!(
            info.data_ptr(),
            r.as_ptr().cast_mut().cast(),
            "first element, not the lowest"
        );
        assert_eq!(r.data_ptr(), r.as_ptr().wrapping_sub(6).cast_mut().cast());
    }

    #[test]
    fn any_description_of_an_array_has_its_layout() {
        use crate::error::Contradiction;
        // Fortran order: a description with no shape is the array's, not its memory order.
        let f = Array2::<f32>::from_shape_vec((2, 3).f(), vec![0.0; 6]).unwrap();
        let info = TensorInfo::builder(&f).build().unwrap();
        assert_eq!(
            (info.shape(), info.strides()),
            (&[2i64, 3][..], &[1i64, 2][..])
        );
        // The same shape agrees; another is refused, never laid over memory order.
        assert!(TensorInfo::builder(&f).shape([2usize, 3]).build().is_ok());
        let err = TensorInfo::builder(&f).shape([6usize]).build().unwrap_err();
        assert_eq!(
            err,
            DLPackError::Contradicts {
                field: None,
                what: Contradiction::Shape {
                    memory: vec![2, 3],
                    given: vec![6]
                }
            }
        );
        let err = TensorInfo::builder(&f)
            .strides([3i64, 1])
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                DLPackError::Contradicts {
                    what: Contradiction::Strides { .. },
                    ..
                }
            ),
            "{err}"
        );
        // Reversed in place: negative strides from the array's first element.
        let mut r = Array2::<i32>::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i32);
        r.invert_axis(ndarray::Axis(1));
        let info = TensorInfo::builder(&r).build().unwrap();
        assert_eq!(info.strides(), &[3, -1]);
        assert_eq!(info.data_ptr(), r.as_ptr().cast_mut().cast());
        let err = TensorInfo::builder(&r).byte_offset(0).build().unwrap_err();
        assert!(
            matches!(
                err,
                DLPackError::Contradicts {
                    what: Contradiction::ByteOffset {
                        memory: 8,
                        given: 0
                    },
                    ..
                }
            ),
            "{err}"
        );
        // A slice of an owned array.
        let mut s = Array3::<u8>::zeros((2, 4, 6));
        s.slice_collapse(s![.., 1..3, ..;3]);
        let info = TensorInfo::builder(&s).build().unwrap();
        assert_eq!(
            (info.shape(), info.strides()),
            (&[2i64, 2, 2][..], &[24i64, 6, 3][..])
        );
        assert_eq!(info.data_ptr(), s.as_ptr().cast_mut().cast());
    }

    #[test]
    fn empty_and_zero_d() {
        let e = Array2::<f32>::zeros((0, 3));
        assert_eq!(e.tensor_info().unwrap().numel(), 0);
        let z = ndarray::arr0(7i32);
        let info = z.tensor_info().unwrap();
        assert_eq!((info.ndim(), info.numel()), (0, 1));
    }
}
