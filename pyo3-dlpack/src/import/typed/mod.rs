//! Typed tensor arguments: the element type and the rank in the Rust type,
//! checked while PyO3 extracts the argument (so a mismatch is a `TypeError`
//! naming the argument), with `ndarray` views of that type and rank.
//! Feature `ndarray`.

pub mod memory;
mod short;

use std::marker::PhantomData;

use ndarray::{ArrayView, ArrayViewMut, Dimension, Ix0, Ix1, Ix2, Ix3, Ix4, Ix5, Ix6, IxDyn};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::error::PythonKind;
use crate::{DLPackError, DeviceTensor, Located, PlainElement, PyTensor};
use memory::{AnyDevice, Cuda, Host, Memory};

/// A tensor of `T` elements and dimension `D` (`Ix1`, `Ix2`, …, `IxDyn`) in
/// memory `M` ([`Host`] unless named), read-only: a `#[pyfunction]`
/// argument any producer `PyTensor` accepts can fill (NumPy, torch, JAX,
/// CuPy, the buffer protocol…), as rust-numpy's `PyReadonlyArray<T, D>`.
///
/// The dtype, the rank and the memory are checked while PyO3 extracts the
/// argument: a mismatch is a `TypeError` (`expected a float64 tensor, got
/// int64`) that PyO3 names the argument in (a note, `while processing 'x'`).
/// Device memory is accepted where `M` says so ([`memory`]): `Tensor2<f32,
/// Cuda>` is a CUDA matrix for a kernel, `TensorDyn<f32, AnyDevice>` any
/// tensor of `f32`, on the host or not.
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
pub struct Tensor<T: PlainElement, D: Dimension, M: Memory = Host> {
    tensor: PyTensor,
    types: Types<T, D, M>,
}

/// A writable tensor of `T` elements and dimension `D` in memory `M`, as
/// rust-numpy's `PyReadwriteArray<T, D>`: [`Tensor`]'s checks, and that the
/// producer allows writes (a read-only or legacy-capsule import is a
/// `TypeError`).
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
pub struct TensorMut<T: PlainElement, D: Dimension, M: Memory = Host> {
    tensor: PyTensor,
    types: Types<T, D, M>,
}

macro_rules! aliases {
    ($($read:ident, $write:ident, $dim:ty, $what:literal;)*) => {$(
        #[doc = concat!("A read-only ", $what, " tensor argument of `T` ([`Tensor`]).")]
        pub type $read<T, M = Host> = Tensor<T, $dim, M>;
        #[doc = concat!("A writable ", $what, " tensor argument of `T` ([`TensorMut`]).")]
        pub type $write<T, M = Host> = TensorMut<T, $dim, M>;
    )*};
}

aliases! {
    Tensor0, TensorMut0, Ix0, "0-D (scalar)";
    Tensor1, TensorMut1, Ix1, "1-D";
    Tensor2, TensorMut2, Ix2, "2-D";
    Tensor3, TensorMut3, Ix3, "3-D";
    Tensor4, TensorMut4, Ix4, "4-D";
    Tensor5, TensorMut5, Ix5, "5-D";
    Tensor6, TensorMut6, Ix6, "6-D";
    TensorDyn, TensorMutDyn, IxDyn, "any-rank";
}

/// The element type, dimension and memory of a typed tensor, as types only
/// (no value of them is held: `Send` and `Sync` are `PyTensor`'s).
type Types<T, D, M> = PhantomData<fn() -> (T, D, M)>;

/// The checks both argument types make: the memory `M` accepts, and `T`'s
/// dtype (a `bool` tensor is `u8` only to read) and `D`'s rank; for host
/// memory, everything [`PyTensor::as_array_dim`] checks, so that
/// [`Tensor::as_array`] cannot fail. Pinned and managed memory are
/// host-readable only after a wait for a stream: [`AnyDevice`]'s.
fn check<T: PlainElement, D: Dimension, M: Memory>(
    tensor: &PyTensor,
    mutable: bool,
) -> Result<(), DLPackError> {
    M::accept(tensor.device())?;
    tensor.check_view_dtype::<T>(mutable)?;
    if let Some(expected) = D::NDIM.filter(|&ndim| ndim != tensor.ndim()) {
        return Err(DLPackError::Ndim {
            expected,
            found: tensor.ndim(),
        });
    }
    if M::HOST_ONLY {
        check_host_view::<T, D>(tensor)?;
    }
    Ok(())
}

/// What [`PyTensor::as_array_dim`] checks, without making the view (whose
/// dynamic shape and strides are allocated): a view may be made now (access,
/// host memory, dtype) of aligned elements. A non-empty tensor's shape and
/// strides were checked on import; an empty one's view shape is checked by
/// `ndarray` itself, so it takes the whole call.
fn check_host_view<T: PlainElement, D: Dimension>(tensor: &PyTensor) -> Result<(), DLPackError> {
    if tensor.numel() == 0 {
        return tensor.as_array_dim::<T, D>().map(|_| ());
    }
    tensor.check_element::<T>(false)?;
    tensor.element_ptr::<T>().map(|_| ())
}

/// A failed argument check as the `TypeError` PyO3 names the argument in.
fn argument_error(err: DLPackError) -> PyErr {
    PythonKind::Type.new_err(err.to_string())
}

/// An argument's import that failed (a producer's refusal, a `BufferError`
/// for a torch tensor that requires grad, …) as a `TypeError` with the same
/// text, caused by the original: a typed argument that does not fit is a
/// `TypeError`, as rust-numpy's. What says nothing about the argument stays
/// as it is: `KeyboardInterrupt`, `SystemExit` (no `Exception`),
/// `MemoryError` and `RecursionError`.
fn import_error(py: Python<'_>, err: PyErr) -> PyErr {
    if crate::python::is_interruption(py, &err) || err.is_instance_of::<PyTypeError>(py) {
        return err;
    }
    let as_type_error = PythonKind::Type.new_err(crate::python::text_of(err.value(py).as_any()));
    as_type_error.set_cause(py, Some(err));
    as_type_error
}

/// The shape as `D`, checked when the tensor was made.
fn dimension<D: Dimension>(tensor: &PyTensor) -> D {
    let extents: Vec<usize> = tensor
        .shape()
        .iter()
        .map(|&extent| usize::try_from(extent).expect("extents are checked on import"))
        .collect();
    D::from_dimension(&IxDyn(&extents)).expect("the rank was checked when the tensor was made")
}

/// What [`Tensor`] and [`TensorMut`] share: construction, the untyped
/// tensor, the shape, host views and device descriptions.
macro_rules! shared {
    ($ty:ident, $name:literal, $extra_check:expr) => {
        impl<T: PlainElement, D: Dimension, M: Memory> $ty<T, D, M> {
            #[doc = concat!("Checks an imported tensor: `M`'s memory, `T`'s dtype, `D`'s rank",
                $extra_check, ".")]
            pub fn from_tensor(tensor: PyTensor) -> Result<Self, DLPackError> {
                Self::fits(&tensor)?;
                Ok(Self {
                    tensor,
                    types: PhantomData,
                })
            }

            /// Whether `tensor` may be a `Self`: what `from_tensor` checks.
            #[inline(always)]
            fn fits(tensor: &PyTensor) -> Result<(), DLPackError> {
                check::<T, D, M>(tensor, shared!(@mutable $ty))?;
                shared!(@extra $ty tensor);
                Ok(())
            }

            /// The shape as `D`'s pattern: `(rows, cols)` for `Ix2`, as
            /// `ndarray`'s `dim()`.
            pub fn dim(&self) -> D::Pattern {
                dimension::<D>(&self.tensor).into_pattern()
            }

            /// The imported tensor (shape, strides, device, stream, the
            /// producer's flags).
            pub fn tensor(&self) -> &PyTensor {
                &self.tensor
            }

            /// The imported tensor, untyped again.
            pub fn into_tensor(self) -> PyTensor {
                self.tensor
            }
        }

        impl<T: PlainElement, D: Dimension> $ty<T, D, Host> {
            /// The elements as an `ndarray` view of rank `D`, with the
            /// producer's strides.
            pub fn as_array(&self) -> ArrayView<'_, T, D> {
                self.tensor
                    .as_array_dim()
                    .expect("checked when the tensor was made: dtype, rank, host memory, alignment")
            }

            /// The elements as a slice, for a row-major (C-contiguous) tensor.
            pub fn as_slice(&self) -> Result<&[T], DLPackError> {
                self.tensor.as_slice()
            }
        }

        impl<T: PlainElement, D: Dimension> $ty<T, D, Cuda> {
            /// The CUDA memory, described for a kernel: pointer, shape,
            /// strides, and the stream the data is ready on.
            pub fn device_tensor(&self) -> DeviceTensor<'_> {
                self.tensor
                    .device_tensor()
                    .expect("checked when the tensor was made: CUDA memory")
            }
        }

        impl<T: PlainElement, D: Dimension> $ty<T, D, AnyDevice> {
            /// A view of rank `D` of host (`cpu`) memory, or the description
            /// of memory on any other device; an error where
            /// [`PyTensor::as_array`] has one for host memory (misaligned
            /// elements).
            pub fn locate_array(&self) -> Result<Located<'_, ArrayView<'_, T, D>>, DLPackError> {
                Ok(match self.tensor.device_tensor() {
                    Some(device) => Located::Device(device),
                    None => Located::Host(self.tensor.as_array_dim()?),
                })
            }
        }

        impl<'a, 'py, T: PlainElement, D: Dimension, M: Memory> FromPyObject<'a, 'py>
            for $ty<T, D, M>
        {
            type Error = PyErr;
            #[cfg(feature = "experimental-inspect")]
            const INPUT_TYPE: pyo3::inspect::PyStaticExpr = shared!(@hint $ty T M);

            fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                let tensor =
                    PyTensor::from_argument(&obj).map_err(|err| import_error(obj.py(), err))?;
                match Self::fits(&tensor) {
                    Ok(()) => Ok(Self {
                        tensor,
                        types: PhantomData,
                    }),
                    // A capsule's tensor goes back to it: the next variant
                    // of an enum of typed arguments may take it.
                    Err(err) => {
                        tensor.give_back_to(&obj);
                        Err(argument_error(err))
                    }
                }
            }
        }

        impl<T: PlainElement, D: Dimension, M: Memory> std::fmt::Debug for $ty<T, D, M> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple($name).field(&self.tensor).finish()
            }
        }
    };
    (@mutable Tensor) => {
        false
    };
    (@mutable TensorMut) => {
        true
    };
    (@extra Tensor $tensor:ident) => {};
    (@extra TensorMut $tensor:ident) => {
        $tensor.ensure_writable()?;
    };
    (@hint Tensor $t:ident $m:ident) => {
        crate::inspect::Hints::<$t>::readable($m::CUDA_ONLY)
    };
    (@hint TensorMut $t:ident $m:ident) => {
        crate::inspect::Hints::<$t>::writable($m::CUDA_ONLY)
    };
}

shared!(Tensor, "Tensor", "");
shared!(
    TensorMut,
    "TensorMut",
    ", and that the producer allows writes"
);

impl<T: PlainElement, D: Dimension> TensorMut<T, D, Host> {
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
}
