//! Safe typed access to imported host memory.

use std::ptr::NonNull;

use crate::error::{CapsuleError, LayoutError};
use crate::import::tensor::PyTensor;
use crate::{DLPackError, DataType, PlainElement};

impl PyTensor {
    /// Checks that the elements can be accessed as `T` from the host: the
    /// memory is the host's (CPU, or CUDA pinned or managed memory, once the
    /// stream the data is ready on has finished: [`crate::cuda::host`], the
    /// one rule) and the dtype is `T`'s (see
    /// [`check_view_dtype`](Self::check_view_dtype)).
    pub(crate) fn check_element<T: PlainElement>(&self, mutable: bool) -> Result<(), DLPackError> {
        self.check_view_access(mutable)?;
        self.ensure_host_readable()?;
        self.check_view_dtype::<T>(mutable)
    }

    /// Checks that the host may read the memory now: CPU memory at once; CUDA
    /// pinned and managed memory once the stream the data is ready on has
    /// finished (the host waits, [`crate::cuda::host`]); device memory never.
    fn ensure_host_readable(&self) -> Result<(), DLPackError> {
        let device = self.device();
        if device.device_type == crate::DeviceType::CPU {
            return Ok(());
        }
        if !device.is_host_accessible() {
            return Err(DLPackError::Device {
                expected: crate::Device::cpu(),
                found: device,
            });
        }
        let ready_on = self
            .stream()
            .and_then(|stream| usize::try_from(stream).ok());
        pyo3::Python::attach(|py| crate::cuda::host::make_host_readable(py, device, ready_on))
    }

    /// Checks that a view may be made at all: the tensor is owned (not a
    /// borrowed view of a producer's storage) and, for shared views, no other
    /// import over the same memory handed out a mutable view.
    pub(crate) fn check_view_access(&self, mutable: bool) -> Result<(), DLPackError> {
        #[cfg(feature = "exchange-api")]
        if self.is_borrowed() {
            return Err(LayoutError::Borrowed.into());
        }
        if !mutable {
            self.ensure_readable()?;
        }
        Ok(())
    }

    /// Checks that the elements are `T`s. A `bool` tensor may be read as
    /// `u8`, never written (a byte other than 0 or 1 would break it).
    pub(crate) fn check_view_dtype<T: PlainElement>(
        &self,
        mutable: bool,
    ) -> Result<(), DLPackError> {
        let dtype = self.dtype();
        let bool_as_bytes = dtype == DataType::BOOL && T::DTYPE == DataType::U8 && !mutable;
        if dtype == T::DTYPE || bool_as_bytes {
            Ok(())
        } else {
            Err(DLPackError::Dtype {
                expected: T::DTYPE,
                found: dtype,
            })
        }
    }

    /// The first element's address as a `T` pointer, checked for alignment;
    /// a dangling, aligned pointer for empty tensors (whose data may be NULL).
    pub(crate) fn element_ptr<T: PlainElement>(&self) -> Result<NonNull<T>, DLPackError> {
        if self.numel() == 0 {
            return Ok(NonNull::dangling());
        }
        let ptr = self.data_ptr().cast::<T>();
        if !ptr.is_aligned() {
            return Err(LayoutError::Misaligned {
                address: ptr as usize,
                dtype: T::DTYPE,
                align: align_of::<T>(),
            }
            .into());
        }
        // Validated on import: data is non-NULL whenever there are elements.
        NonNull::new(ptr).ok_or_else(|| {
            CapsuleError::NullData {
                shape: self.shape().to_vec(),
            }
            .into()
        })
    }

    /// The elements as a slice, for a contiguous host tensor of `T`'s dtype.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{DLPackTensor, PyTensor, CapsuleFormat};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # let capsule = DLPackTensor::new(vec![1.0f32, 2.0, 3.0])?.to_capsule(py, CapsuleFormat::Versioned)?;
    /// let tensor = PyTensor::from_capsule(&capsule)?; // or from a NumPy array, a torch tensor, …
    /// assert_eq!(tensor.as_slice::<f32>()?, &[1.0, 2.0, 3.0]);
    /// assert!(tensor.as_slice::<f64>().is_err()); // "expected a float64 tensor, got float32"
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn as_slice<T: PlainElement>(&self) -> Result<&[T], DLPackError> {
        self.check_element::<T>(false)?;
        self.ensure_contiguous()?;
        let ptr = self.element_ptr::<T>()?;
        // SAFETY: validated on import: `numel` elements of `T`'s size from the
        // first element, contiguous (checked), host-readable (checked), aligned
        // (checked), any bit pattern valid (`PlainElement`), alive while `self`
        // is borrowed. An empty tensor gets a dangling aligned pointer.
        Ok(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.numel()) })
    }

    /// The elements as a mutable slice; also refuses read-only tensors, bool
    /// tensors, and memory another live `PyTensor` shares.
    pub fn as_slice_mut<T: PlainElement>(&mut self) -> Result<&mut [T], DLPackError> {
        self.check_element::<T>(true)?;
        self.ensure_contiguous()?;
        self.ensure_writable()?;
        self.ensure_exclusive()?;
        let ptr = self.element_ptr::<T>()?;
        // SAFETY: as in `as_slice`, plus: not read-only (checked), no other
        // live import overlaps it (checked), and `&mut self` excludes every
        // other view through this tensor.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), self.numel()) })
    }

    /// The element storage as raw bytes, for a contiguous host tensor of any
    /// dtype (bfloat16, float8 and sub-byte types included, which no
    /// [`PlainElement`] views): [`nbytes`](Self::nbytes) bytes from the
    /// first element, in the host's byte order. Checks what
    /// [`as_slice`](Self::as_slice) checks, except the dtype.
    ///
    /// ```
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::PyTensor;
    ///
    /// /// Python: `digest(torch.ones(2, dtype=torch.bfloat16))`: any dtype, any framework.
    /// #[pyfunction]
    /// fn digest(tensor: PyTensor) -> PyResult<u64> {
    ///     let bytes = tensor.as_bytes()?; // dtype-agnostic; contiguous host memory only
    ///     Ok(bytes.iter().fold(0xcbf29ce484222325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3)))
    /// }
    /// # Python::attach(|py| -> PyResult<()> {
    /// #     let x = py.eval(c"__import__('numpy').array([1.0, 2.0], dtype='<f4')", None, None)?;
    /// #     let tensor = PyTensor::from_pyany(&x)?;
    /// #     assert_eq!(tensor.as_bytes()?, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
    /// #     let t = py.eval(c"__import__('numpy').arange(6, dtype='u1').reshape(2, 3).T", None, None)?;
    /// #     let err = PyTensor::from_pyany(&t)?.as_bytes().unwrap_err();
    /// #     assert_eq!(err.to_string(), "expected a contiguous (row-major) tensor, got shape [3, 2] with strides [1, 3]");
    /// #     let _ = digest(tensor)?;
    /// #     Ok(())
    /// # }).unwrap();
    /// ```
    pub fn as_bytes(&self) -> Result<&[u8], DLPackError> {
        self.check_view_access(false)?;
        self.ensure_host_readable()?;
        self.ensure_contiguous()?;
        if self.nbytes() == 0 {
            return Ok(&[]);
        }
        // SAFETY: validated on import: `nbytes` bytes of element storage from
        // the first element (non-NULL when there are elements), contiguous
        // (checked), host-readable (checked), alive while `self` is borrowed;
        // every byte pattern is a valid `u8`.
        Ok(unsafe { std::slice::from_raw_parts(self.data_ptr().cast::<u8>(), self.nbytes()) })
    }

    /// A host copy of the elements in row-major order, for any strides
    /// (negative, zero, transposed) and any alignment.
    ///
    /// Host memory is read once the host may read it (pinned and managed
    /// memory after the stream the data is ready on, [`stream`](Self::stream));
    /// CUDA device memory is copied through the CUDA driver, after the work
    /// queued on that stream (the legacy default stream when the tensor names
    /// none), the host waiting for the copy without the GIL. Other devices
    /// are a [`DLPackError::Device`].
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// # use pyo3_dlpack::{CapsuleFormat, DLPackTensor, PyTensor, TensorInfo};
    /// # Python::attach(|py| -> PyResult<()> {
    /// # struct T(Vec<i32>);
    /// # impl pyo3_dlpack::IntoDLPack for T {
    /// #     fn tensor_info(&self) -> Result<TensorInfo<'_>, pyo3_dlpack::DLPackError> {
    /// #         TensorInfo::builder(&self.0).shape([3usize, 2]).strides([1i64, 3]).build()
    /// #     }
    /// # }
    /// # let capsule = DLPackTensor::new(T(vec![0, 1, 2, 3, 4, 5]))?.to_capsule(py, CapsuleFormat::Legacy)?;
    /// let transposed = PyTensor::from_capsule(&capsule)?; // a (3, 2) view with strides (1, 3)
    /// assert_eq!(transposed.to_vec::<i32>()?, vec![0, 3, 1, 4, 2, 5]);
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn to_vec<T: PlainElement>(&self) -> Result<Vec<T>, DLPackError> {
        self.check_view_dtype::<T>(false)?;
        // SAFETY: `T` is the dtype's Rust type (checked above; `u8` for
        // `bool`): one size, and every bit pattern is a `T` (`PlainElement`).
        unsafe { self.copy_elements::<T>() }
    }

    /// A host copy of the elements in row-major order as `T`s, for adapters
    /// whose element types are not [`PlainElement`]s (candle's float8).
    ///
    /// # Safety
    ///
    /// `size_of::<T>()` is the tensor's item size, and every bit pattern of
    /// that size is a valid `T`.
    pub(crate) unsafe fn copy_elements<T: Copy>(&self) -> Result<Vec<T>, DLPackError> {
        self.check_view_access(false)?;
        let numel = self.numel();
        let mut out = Vec::<T>::new();
        if numel == 0 {
            return Ok(out);
        }
        // A broadcast of one element may describe more than memory holds:
        // `MemoryError`, as NumPy's copy raises, not an abort.
        out.try_reserve_exact(numel)
            .map_err(|_| DLPackError::OutOfMemory {
                bytes: numel.saturating_mul(size_of::<T>()),
            })?;
        let dst = out.as_mut_ptr().cast::<u8>();
        crate::gather::advise_huge_pages(dst, numel * size_of::<T>());
        let src = self.data_ptr().cast::<u8>().cast_const();
        let (shape, strides) = (self.shape(), self.strides());
        let ready_on = self
            .stream()
            .and_then(|stream| usize::try_from(stream).ok());
        debug_assert_eq!(self.dtype().itemsize(), size_of::<T>());
        // SAFETY: the layout was validated on import: every element it
        // reaches is inside the producer's buffer on its device, alive while
        // `self` is; `out` has room for the `numel` elements, a separate
        // allocation.
        unsafe {
            crate::cuda::host::copy_to_host(
                self.device(),
                ready_on,
                src,
                shape,
                strides,
                self.dtype(),
                dst,
            )
        }?;
        // SAFETY: all `numel` elements were written (`T` is the item size);
        // every bit pattern is a `T` (the caller's promise).
        unsafe { out.set_len(numel) };
        Ok(out)
    }
}

#[cfg(feature = "ndarray")]
mod ndarray_views {
    use ndarray::{ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder, StrideShape};

    use crate::error::SizeOverflow;

    use super::*;

    /// Where a view starts (the lowest element reached), its shape with the
    /// absolute strides (ndarray's constructors need strides ≥ 0), and the
    /// axes to invert afterwards to restore the negative ones. An axis of
    /// one element (or none) gets stride 0: its stride is never used, so
    /// the producer may have sent any (`i64::MIN`, whose magnitude no
    /// `isize` holds, included).
    fn view_layout<T>(
        tensor: &PyTensor,
        first: NonNull<T>,
    ) -> (StrideShape<IxDyn>, *mut T, Vec<usize>) {
        let shape: Vec<usize> = tensor.shape().iter().map(|&d| d as usize).collect();
        let mut strides = Vec::with_capacity(shape.len());
        let mut inverted = Vec::new();
        let mut lowest_offset = 0isize;
        for (axis, (&dim, &stride)) in shape.iter().zip(tensor.strides()).enumerate() {
            if dim <= 1 {
                strides.push(0);
                continue;
            }
            if stride < 0 {
                inverted.push(axis);
                lowest_offset += (dim as isize - 1) * stride as isize;
            }
            strides.push(stride.unsigned_abs() as usize);
        }
        let lowest = first.as_ptr().wrapping_offset(lowest_offset);
        (IxDyn(&shape).strides(IxDyn(&strides)), lowest, inverted)
    }

    impl PyTensor {
        /// An empty tensor whose other extents multiply past `isize::MAX`
        /// (`(0, 2**62, 2)`): valid, but no `ndarray` shape can hold it.
        fn unindexable(&self) -> DLPackError {
            SizeOverflow::Elements {
                shape: self.shape().to_vec(),
            }
            .into()
        }
    }

    /// The shape of an empty tensor, for a view over an empty slice.
    fn empty_shape(tensor: &PyTensor) -> IxDyn {
        let shape: Vec<usize> = tensor.shape().iter().map(|&d| d as usize).collect();
        IxDyn(&shape)
    }

    impl PyTensor {
        /// An `ndarray` view with the tensor's strides (negative and zero ones
        /// included), for a host tensor of `T`'s dtype. Feature `ndarray`.
        pub fn as_array<T: PlainElement>(&self) -> Result<ArrayViewD<'_, T>, DLPackError> {
            self.check_element::<T>(false)?;
            if self.numel() == 0 {
                return ArrayViewD::from_shape(empty_shape(self), &[])
                    .map_err(|_| self.unindexable());
            }
            let (shape, lowest, inverted) = view_layout(self, self.element_ptr::<T>()?);
            // SAFETY: every element the shape and (absolute) strides reach from
            // the lowest element is inside the producer's buffer (the extent was
            // validated on import); host-readable, aligned, any bit pattern a
            // `T` (checked); alive while `self` is borrowed. Axes with negative
            // strides are inverted below, which restores the producer's order.
            let mut view = unsafe { ArrayViewD::from_shape_ptr(shape, lowest) };
            for &axis in &inverted {
                view.invert_axis(Axis(axis));
            }
            Ok(view)
        }

        /// [`as_array`](Self::as_array) of a fixed rank: `D` is `Ix1`, `Ix2`,
        /// … (`IxDyn`: any rank), and a tensor of another rank is the crate's
        /// error ("expected a 2-dimensional tensor, got 1 dimension"), not
        /// `ndarray`'s. Feature `ndarray`.
        ///
        /// ```
        /// # use pyo3::prelude::*;
        /// use ndarray::Ix2;
        /// use pyo3_dlpack::PyTensor;
        ///
        /// fn trace(m: &PyTensor) -> Result<f64, pyo3_dlpack::DLPackError> {
        ///     Ok(m.as_array_dim::<f64, Ix2>()?.diag().sum())
        /// }
        /// # Python::attach(|py| -> PyResult<()> {
        /// #     let eye = py.import("numpy")?.call_method1("eye", (3,))?;
        /// #     assert_eq!(trace(&PyTensor::from_pyany(&eye)?)?, 3.0);
        /// #     let v = py.import("numpy")?.call_method1("ones", (3,))?;
        /// #     let err = trace(&PyTensor::from_pyany(&v)?).unwrap_err();
        /// #     assert_eq!(err.to_string(), "expected a 2-dimensional tensor, got 1 dimension");
        /// #     Ok(())
        /// # }).unwrap();
        /// ```
        pub fn as_array_dim<T: PlainElement, D: ndarray::Dimension>(
            &self,
        ) -> Result<ndarray::ArrayView<'_, T, D>, DLPackError> {
            if let Some(expected) = D::NDIM.filter(|&ndim| ndim != self.ndim()) {
                return Err(DLPackError::Ndim {
                    expected,
                    found: self.ndim(),
                });
            }
            let view = self.as_array::<T>()?;
            Ok(view
                .into_dimensionality::<D>()
                .expect("the rank was checked above"))
        }

        /// A mutable `ndarray` view; also refuses read-only and bool tensors,
        /// memory another live `PyTensor` shares, and strides under which two
        /// indices reach the same element (broadcasts, overlapping windows).
        /// Feature `ndarray`.
        pub fn as_array_mut<T: PlainElement>(
            &mut self,
        ) -> Result<ArrayViewMutD<'_, T>, DLPackError> {
            self.check_element::<T>(true)?;
            self.ensure_writable()?;
            self.ensure_exclusive()?;
            if self.numel() == 0 {
                return ArrayViewMutD::from_shape(empty_shape(self), &mut [])
                    .map_err(|_| self.unindexable());
            }
            if !crate::layout::elements_are_distinct(self.shape(), self.strides()) {
                return Err(LayoutError::Overlapping {
                    shape: self.shape().to_vec(),
                    strides: self.strides().to_vec(),
                }
                .into());
            }
            let (shape, lowest, inverted) = view_layout(self, self.element_ptr::<T>()?);
            // SAFETY: as in `as_array`, plus: writable (checked), no other live
            // import overlaps it (checked), no two indices reach the same
            // element (`layout::elements_are_distinct`), and `&mut self` excludes
            // other views through this tensor.
            let mut view = unsafe { ArrayViewMutD::from_shape_ptr(shape, lowest) };
            for &axis in &inverted {
                view.invert_axis(Axis(axis));
            }
            Ok(view)
        }
    }
}
