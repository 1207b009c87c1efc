//! nalgebra matrices as tensors (feature `nalgebra`): owned matrices
//! exported column-major with their strides, imports viewed as
//! `DMatrixView`/`DMatrixViewMut` with the tensor's strides.

use std::ffi::c_void;

use nalgebra::{
    DMatrixView, DMatrixViewMut, Dim, Dyn, Matrix, RawStorage, SMatrix, VecStorage, ViewStorage,
    ViewStorageMut,
};

use crate::error::{AdapterError, LayoutError};
use crate::export::{IntoDLPack, OwnLayout, TensorData, TensorInfo};
use crate::import::PyTensor;
use crate::layout;
use crate::{DLPackError, DataType, Element, PlainElement};

/// A matrix with heap storage (`DMatrix<T>`, `DVector<T>`, any `OMatrix`
/// with a dynamic dimension).
type Owned<T, R, C> = Matrix<T, R, C, VecStorage<T, R, C>>;

// SAFETY: a `VecStorage` keeps its elements in a `Vec`, whose heap buffer
// does not move when the matrix moves and lives until it is dropped; its
// length is exactly `nrows * ncols` initialized `T`s. An exported matrix is
// never resized (it is held behind a shared reference), and `as_ptr` is the
// storage's raw pointer (no reference to the elements is kept), so consumers
// may write through it.
unsafe impl<T: Element, R: Dim, C: Dim> TensorData for Owned<T, R, C>
where
    VecStorage<T, R, C>: RawStorage<T, R, C>,
{
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len() * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
    fn own_layout(&self) -> Option<OwnLayout<'_>> {
        let (rows, cols) = self.shape();
        let (row_stride, col_stride) = self.strides();
        Some(OwnLayout {
            shape: [rows, cols].into(),
            strides: [row_stride, col_stride].into(),
            byte_offset: 0,
        })
    }
}

/// The matrix as a 2-D tensor of shape (rows, columns), column-major:
/// strides (1, rows). No copy: NumPy sees a Fortran-ordered array, torch a
/// tensor with those strides. A vector is a matrix of one column.
///
/// ```
/// use pyo3_dlpack::{IntoDLPack, nalgebra::DMatrix};
///
/// let m = DMatrix::from_row_slice(2, 3, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// let info = m.tensor_info().unwrap();
/// assert_eq!((info.shape().to_vec(), info.strides().to_vec()), (vec![2, 3], vec![1, 2]));
/// assert_eq!(info.data_ptr().cast_const(), m.as_ptr().cast());
/// ```
///
/// As the `#[dlpack(data)]` field of a derived type (or in a
/// [`TensorInfo::builder`]), a matrix brings this shape and these strides:
/// a shape or strides field besides must agree.
///
/// A view (`MatrixView`) borrows its matrix, so it cannot be exported (an
/// export may outlive any borrow): export the owning matrix, or
/// `view.into_owned()` (one copy). A static matrix (`SMatrix`, `Matrix3`)
/// holds its elements inline, where they move with it: export it boxed.
impl<T: Element, R: Dim + 'static, C: Dim + 'static> IntoDLPack for Owned<T, R, C>
where
    VecStorage<T, R, C>: RawStorage<T, R, C> + Send + Sync,
{
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self).build()
    }
}

// SAFETY: a box's heap allocation does not move when the box moves and lives
// until it is dropped; a static matrix's `ArrayStorage` is `[[T; R]; C]`,
// `R * C` initialized `T`s in column-major order. `as_ptr` is the storage's
// raw pointer (no reference to the elements is kept).
unsafe impl<T: Element, const R: usize, const C: usize> TensorData for Box<SMatrix<T, R, C>> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.as_ptr().cast_mut().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(R * C * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
    fn own_layout(&self) -> Option<OwnLayout<'_>> {
        Some(OwnLayout {
            shape: [R, C].into(),
            strides: [1, R].into(),
            byte_offset: 0,
        })
    }
}

/// A boxed static matrix (`Box::new(Matrix3::identity())`) as a 2-D,
/// column-major tensor, as an owned matrix is.
///
/// ```
/// use pyo3_dlpack::{IntoDLPack, nalgebra::Matrix2x3};
///
/// let m = Box::new(Matrix2x3::new(1i32, 2, 3, 4, 5, 6));
/// let info = m.tensor_info().unwrap();
/// assert_eq!((info.shape().to_vec(), info.strides().to_vec()), (vec![2, 3], vec![1, 2]));
/// ```
impl<T: Element, const R: usize, const C: usize> IntoDLPack for Box<SMatrix<T, R, C>> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(self).build()
    }
}

/// The type a refusal names, such as `nalgebra::DMatrixView<float32>`.
fn target<T: PlainElement>(mutable: bool) -> String {
    let name = if mutable {
        "DMatrixViewMut"
    } else {
        "DMatrixView"
    };
    format!("nalgebra::{name}<{}>", T::DTYPE)
}

/// Rows, columns and their strides as nalgebra holds them, for a 2-D
/// tensor with strides of 0 or more.
fn matrix_layout<T: PlainElement>(
    tensor: &PyTensor,
    mutable: bool,
) -> Result<[usize; 4], DLPackError> {
    if tensor.ndim() != 2 {
        return Err(DLPackError::Ndim {
            expected: 2,
            found: tensor.ndim(),
        });
    }
    let (shape, strides) = (tensor.shape(), tensor.strides());
    if strides.iter().any(|&stride| stride < 0) {
        return Err(AdapterError::Inexpressible {
            target: target::<T>(mutable),
            expected: "strides of 0 or more (nalgebra steps forward only)".into(),
            shape: shape.to_vec(),
            strides: strides.to_vec(),
        }
        .into());
    }
    // Validated on import: extents and strides fit `isize`.
    Ok([
        shape[0] as usize,
        shape[1] as usize,
        strides[0] as usize,
        strides[1] as usize,
    ])
}

impl PyTensor {
    /// A nalgebra matrix view of a 2-D host tensor of `T`'s dtype, with the
    /// tensor's strides (any of 0 or more: row-major NumPy arrays, torch's
    /// transposes and slices all qualify). No copy. Feature `nalgebra`.
    ///
    /// Refused, naming what was expected and what was found: another
    /// dtype, device or rank, and negative strides (`a[::-1]`), which
    /// nalgebra cannot express.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<f64>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::new(&self.0, [2usize, 3])
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let tensor = PyTensor::from_capsule(&capsule)?; // np.array([[1., 2., 3.], [4., 5., 6.]])
    /// let m = tensor.as_dmatrix_view::<f64>()?;
    /// assert_eq!((m.nrows(), m.ncols(), m[(1, 0)]), (2, 3, 4.0));
    /// assert_eq!(m.strides(), (3, 1)); // row-major, as NumPy holds it
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn as_dmatrix_view<T: PlainElement>(
        &self,
    ) -> Result<DMatrixView<'_, T, Dyn, Dyn>, DLPackError> {
        self.check_element::<T>(false)?;
        let [rows, cols, row_stride, col_stride] = matrix_layout::<T>(self, false)?;
        let first = self.element_ptr::<T>()?;
        // SAFETY: every element the shape and (non-negative, checked) strides
        // reach from the first is inside the producer's buffer (the extent
        // was validated on import), host-readable, aligned and of `T`'s dtype
        // (checked), any bit pattern a `T` (`PlainElement`), and alive while
        // `self` is borrowed, which the view's lifetime is. An empty tensor's
        // pointer is dangling and aligned, and no element is read through it.
        let storage = unsafe {
            ViewStorage::from_raw_parts(
                first.as_ptr().cast_const(),
                (Dyn(rows), Dyn(cols)),
                (Dyn(row_stride), Dyn(col_stride)),
            )
        };
        Ok(Matrix::from_data(storage))
    }

    /// A mutable nalgebra matrix view, with the tensor's strides: writes
    /// land in the producer's memory. Also refuses read-only tensors, memory
    /// another live `PyTensor` shares, and strides under which two indices
    /// reach the same element (a broadcast). Feature `nalgebra`.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<f32>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::new(&self.0, [2usize, 2])
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![0.0; 4]))?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let mut tensor = PyTensor::from_capsule(&capsule)?; // a writable 2 × 2 float32 tensor
    /// tensor.as_dmatrix_view_mut::<f32>()?.fill_with_identity();
    /// assert_eq!(tensor.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 1.0]);
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn as_dmatrix_view_mut<T: PlainElement>(
        &mut self,
    ) -> Result<DMatrixViewMut<'_, T, Dyn, Dyn>, DLPackError> {
        self.check_element::<T>(true)?;
        let [rows, cols, row_stride, col_stride] = matrix_layout::<T>(self, true)?;
        self.ensure_writable()?;
        self.ensure_exclusive()?;
        if !layout::elements_are_distinct(self.shape(), self.strides()) {
            return Err(LayoutError::Overlapping {
                shape: self.shape().to_vec(),
                strides: self.strides().to_vec(),
            }
            .into());
        }
        let first = self.element_ptr::<T>()?;
        // SAFETY: as in `as_dmatrix_view`, plus: writable (checked), no other
        // live import overlaps it (checked), no two indices reach the same
        // element (`elements_are_distinct`), and `&mut self` excludes other
        // views through this tensor for the view's lifetime.
        let storage = unsafe {
            ViewStorageMut::from_raw_parts(
                first.as_ptr(),
                (Dyn(rows), Dyn(cols)),
                (Dyn(row_stride), Dyn(col_stride)),
            )
        };
        Ok(Matrix::from_data(storage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector, Matrix3, OMatrix, U2};

    #[test]
    fn owned_matrices_are_column_major_tensors() {
        let m = DMatrix::from_fn(3, 4, |r, c| (r * 10 + c) as u16);
        let info = m.tensor_info().unwrap();
        assert_eq!(info.shape(), vec![3, 4]);
        assert_eq!(info.strides(), vec![1, 3]);
        assert_eq!(info.dtype(), DataType::U16);
        assert_eq!(info.data_ptr().cast_const(), m.as_ptr().cast());
        assert!(!info.is_read_only());

        let v = DVector::from_vec(vec![1.0f64, 2.0]);
        let info = v.tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![2, 1], vec![1, 2])
        );

        let mixed: OMatrix<f32, U2, Dyn> = OMatrix::<f32, U2, Dyn>::zeros(5);
        let info = mixed.tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![2, 5], vec![1, 2])
        );

        let empty = DMatrix::<i8>::zeros(0, 3);
        assert_eq!(empty.tensor_info().unwrap().numel(), 0);
    }

    #[test]
    fn boxed_static_matrices_keep_their_address() {
        let m = Box::new(Matrix3::from_fn(|r, c| (r + 3 * c) as f32));
        let before = m.data_ptr();
        let moved = [m];
        assert_eq!(moved[0].data_ptr(), before);
        let info = moved[0].tensor_info().unwrap();
        assert_eq!(
            (info.shape().to_vec(), info.strides().to_vec()),
            (vec![3, 3], vec![1, 3])
        );
        assert_eq!(moved[0].byte_len(), Some(36));
    }
}
