//! Typed tensor arguments: the element type and the rank in the Rust type,
//! checked while PyO3 extracts the argument (so a mismatch is a `TypeError`
//! naming the argument), with `ndarray` views of that type and rank.
//! Feature `ndarray`.

use std::marker::PhantomData;

use ndarray::{ArrayView, ArrayViewMut, Dimension, Ix1, Ix2, Ix3, Ix4, IxDyn};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::{DLPackError, Device, DeviceType, PlainElement, PyTensor};

/// A host tensor of `T` elements and dimension `D` (`Ix1`, `Ix2`, …,
/// `IxDyn`), read-only: a `#[pyfunction]` argument any producer `PyTensor`
/// accepts can fill (NumPy, torch, JAX, CuPy host arrays, the buffer
/// protocol…), as rust-numpy's `PyReadonlyArray<T, D>`.
///
/// The dtype, the rank and CPU memory are checked while PyO3 extracts the
/// argument: a mismatch is a `TypeError` (`expected a float64 tensor, got
/// int64`) that PyO3 names the argument in (a note, `while processing 'x'`).
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{Tensor1, Tensor2};
///
/// /// y = a·x + y, returned as a list (rust-numpy's `axpy`, ported one to one).
/// #[pyfunction]
/// fn axpy(a: f64, x: Tensor1<f64>, y: Tensor1<f64>) -> Vec<f64> {
///     (a * &x.as_array() + &y.as_array()).to_vec()
/// }
///
/// /// The trace of a square matrix.
/// #[pyfunction]
/// fn trace(m: Tensor2<f32>) -> f32 {
///     m.as_array().diag().sum()
/// }
/// # Python::attach(|py| -> PyResult<()> {
/// #     let np = py.import("numpy")?;
/// #     let x = np.call_method1("arange", (3.0,))?;
/// #     let f = wrap_pyfunction!(axpy, py)?;
/// #     assert_eq!(f.call1((2.0, &x, &x))?.extract::<Vec<f64>>()?, [0.0, 3.0, 6.0]);
/// #     let err = f.call1((2.0, np.call_method1("arange", (3,))?, &x)).unwrap_err();
/// #     assert!(err.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
/// #     assert_eq!(err.value(py).to_string(), "expected a float64 tensor, got int64");
/// #     let eye = np.call_method1("eye", (3,))?.call_method1("astype", ("float32",))?;
/// #     assert_eq!(wrap_pyfunction!(trace, py)?.call1((eye,))?.extract::<f32>()?, 3.0);
/// #     Ok(())
/// # }).unwrap();
/// ```
pub struct Tensor<T: PlainElement, D: Dimension> {
    tensor: PyTensor,
    types: PhantomData<fn() -> (T, D)>,
}

/// A writable host tensor of `T` elements and dimension `D`, as rust-numpy's
/// `PyReadwriteArray<T, D>`: [`Tensor`]'s checks, and that the producer allows
/// writes (a read-only or legacy-capsule import is a `TypeError`).
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::TensorMut2;
///
/// /// Scales a float32 matrix in place (NumPy, torch: the caller sees it).
/// #[pyfunction]
/// fn scale(mut m: TensorMut2<f32>, factor: f32) -> PyResult<()> {
///     m.as_array_mut()?.mapv_inplace(|v| v * factor);
///     Ok(())
/// }
/// # Python::attach(|py| -> PyResult<()> {
/// #     let m = py.import("numpy")?.call_method1("ones", ((2, 2), "float32"))?;
/// #     wrap_pyfunction!(scale, py)?.call1((&m, 3.0))?;
/// #     assert_eq!(m.call_method0("sum")?.extract::<f32>()?, 12.0);
/// #     Ok(())
/// # }).unwrap();
/// ```
pub struct TensorMut<T: PlainElement, D: Dimension> {
    tensor: PyTensor,
    types: PhantomData<fn() -> (T, D)>,
}

/// A read-only 1-D tensor argument of `T` ([`Tensor`]).
pub type Tensor1<T> = Tensor<T, Ix1>;
/// A read-only 2-D tensor argument of `T` ([`Tensor`]).
pub type Tensor2<T> = Tensor<T, Ix2>;
/// A read-only 3-D tensor argument of `T` ([`Tensor`]).
pub type Tensor3<T> = Tensor<T, Ix3>;
/// A read-only 4-D tensor argument of `T` ([`Tensor`]).
pub type Tensor4<T> = Tensor<T, Ix4>;
/// A read-only tensor argument of `T`, of any rank ([`Tensor`]).
pub type TensorDyn<T> = Tensor<T, IxDyn>;
/// A writable 1-D tensor argument of `T` ([`TensorMut`]).
pub type TensorMut1<T> = TensorMut<T, Ix1>;
/// A writable 2-D tensor argument of `T` ([`TensorMut`]).
pub type TensorMut2<T> = TensorMut<T, Ix2>;
/// A writable 3-D tensor argument of `T` ([`TensorMut`]).
pub type TensorMut3<T> = TensorMut<T, Ix3>;
/// A writable 4-D tensor argument of `T` ([`TensorMut`]).
pub type TensorMut4<T> = TensorMut<T, Ix4>;
/// A writable tensor argument of `T`, of any rank ([`TensorMut`]).
pub type TensorMutDyn<T> = TensorMut<T, IxDyn>;

/// The checks both argument types make: CPU memory (pinned or managed
/// memory would wait for a stream at each view; take a `PyTensor`), and a
/// view of `T` and `D` exists (dtype, alignment, rank).
fn check<T: PlainElement, D: Dimension>(tensor: &PyTensor) -> Result<(), DLPackError> {
    let device = tensor.device();
    if device.device_type != DeviceType::CPU {
        return Err(DLPackError::Device {
            expected: Device::cpu(),
            found: device,
        });
    }
    tensor.as_array_dim::<T, D>().map(|_| ())
}

/// A failed argument check as the `TypeError` PyO3 names the argument in.
fn argument_error(err: DLPackError) -> PyErr {
    PyTypeError::new_err(err.to_string())
}

/// An argument's import that failed (a producer's refusal, a `BufferError`
/// for a torch tensor that requires grad, …) as a `TypeError` with the same
/// text, caused by the original, so PyO3 names the argument.
fn import_error(py: Python<'_>, err: PyErr) -> PyErr {
    if err.is_instance_of::<PyTypeError>(py) {
        return err;
    }
    let as_type_error = PyTypeError::new_err(err.value(py).to_string());
    as_type_error.set_cause(py, Some(err));
    as_type_error
}

impl<T: PlainElement, D: Dimension> Tensor<T, D> {
    /// Checks an imported tensor: `T`'s dtype, `D`'s rank, host memory.
    pub fn from_tensor(tensor: PyTensor) -> Result<Self, DLPackError> {
        check::<T, D>(&tensor)?;
        Ok(Self {
            tensor,
            types: PhantomData,
        })
    }

    /// The elements as an `ndarray` view of rank `D`, with the producer's
    /// strides.
    pub fn as_array(&self) -> ArrayView<'_, T, D> {
        self.tensor
            .as_array_dim()
            .expect("checked when the tensor was made: dtype, rank, host memory, alignment")
    }

    /// The elements as a slice, for a row-major (C-contiguous) tensor.
    pub fn as_slice(&self) -> Result<&[T], DLPackError> {
        self.tensor.as_slice()
    }

    /// The imported tensor (shape, strides, device, the producer's flags).
    pub fn tensor(&self) -> &PyTensor {
        &self.tensor
    }

    /// The imported tensor, untyped again.
    pub fn into_tensor(self) -> PyTensor {
        self.tensor
    }
}

impl<T: PlainElement, D: Dimension> TensorMut<T, D> {
    /// Checks an imported tensor: [`Tensor::from_tensor`]'s checks, and
    /// that the producer allows writes.
    pub fn from_tensor(tensor: PyTensor) -> Result<Self, DLPackError> {
        check::<T, D>(&tensor)?;
        tensor.ensure_writable()?;
        Ok(Self {
            tensor,
            types: PhantomData,
        })
    }

    /// The elements as a read-only view (see [`Tensor::as_array`]).
    pub fn as_array(&self) -> ArrayView<'_, T, D> {
        self.tensor
            .as_array_dim()
            .expect("checked when the tensor was made: dtype, rank, host memory, alignment")
    }

    /// The elements as a mutable view of rank `D`; an error where
    /// [`PyTensor::as_array_mut`] has one (memory another live import
    /// shares, strides under which two indices reach one element).
    pub fn as_array_mut(&mut self) -> Result<ArrayViewMut<'_, T, D>, DLPackError> {
        let view = self.tensor.as_array_mut::<T>()?;
        Ok(view
            .into_dimensionality::<D>()
            .expect("the rank was checked when the tensor was made"))
    }

    /// The elements as a mutable slice, for a row-major tensor.
    pub fn as_slice_mut(&mut self) -> Result<&mut [T], DLPackError> {
        self.tensor.as_slice_mut()
    }

    /// The imported tensor.
    pub fn tensor(&self) -> &PyTensor {
        &self.tensor
    }

    /// The imported tensor, untyped again.
    pub fn into_tensor(self) -> PyTensor {
        self.tensor
    }
}

impl<'a, 'py, T: PlainElement, D: Dimension> FromPyObject<'a, 'py> for Tensor<T, D> {
    type Error = PyErr;
    #[cfg(feature = "experimental-inspect")]
    const INPUT_TYPE: pyo3::inspect::PyStaticExpr = crate::inspect::Hints::<T>::READABLE;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let tensor = PyTensor::from_argument(&obj).map_err(|err| import_error(obj.py(), err))?;
        Self::from_tensor(tensor).map_err(argument_error)
    }
}

impl<'a, 'py, T: PlainElement, D: Dimension> FromPyObject<'a, 'py> for TensorMut<T, D> {
    type Error = PyErr;
    #[cfg(feature = "experimental-inspect")]
    const INPUT_TYPE: pyo3::inspect::PyStaticExpr = crate::inspect::Hints::<T>::WRITABLE;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let tensor = PyTensor::from_argument(&obj).map_err(|err| import_error(obj.py(), err))?;
        Self::from_tensor(tensor).map_err(argument_error)
    }
}

impl<T: PlainElement, D: Dimension> std::fmt::Debug for Tensor<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tensor").field(&self.tensor).finish()
    }
}

impl<T: PlainElement, D: Dimension> std::fmt::Debug for TensorMut<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TensorMut").field(&self.tensor).finish()
    }
}
