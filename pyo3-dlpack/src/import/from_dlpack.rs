//! `FromDLPack`: building a user type from an imported tensor.

use crate::DLPackError;
use crate::import::tensor::PyTensor;

/// A type that can be built from an imported tensor, checking its
/// constraints (dtype, rank, device, layout, …).
///
/// `#[derive(FromDLPack)]` implements it and `FromPyObject`, so the type is
/// a `#[pyfunction]` argument that any DLPack producer can fill:
///
/// | attribute | meaning |
/// |---|---|
/// | struct `dtype = T` | the tensor's dtype must be `T`'s (an [`Element`](crate::Element)) |
/// | struct `ndim = N` | it must have `N` dimensions (a `[usize; N]` shape field implies it) |
/// | struct `device = "cpu"`, `"cuda"`, `"cuda:1"`, … | device type, and index when given |
/// | struct `contiguous` | row-major contiguous |
/// | struct `writable` | not read-only |
/// | struct `shape = [height, width, channels]` | that many dimensions, each extent into its unsigned scalar field, in order |
/// | struct `crate = "path"` | the runtime crate's path, when renamed |
/// | field `#[dlpack(tensor)]` | the [`PyTensor`] (required: it owns the memory) |
/// | field `#[dlpack(shape)]`, `#[dlpack(strides)]` | `[usize; N]`, `Vec<i64>`, … (strides may be an `Option`) |
/// | field `#[dlpack(device)]`, `#[dlpack(dtype)]`, `#[dlpack(read_only)]` | `Device`, `DataType`, `bool` |
/// | field `#[dlpack(data)]` | `*const T`, `*mut T` (needs a writable tensor), `NonNull<T>`, or a `u64`/`usize` address; `T` must be the dtype's type |
///
/// Fields without an attribute get `Default::default()`. A failed
/// constraint is a [`DLPackError`] (a `TypeError` in Python: a tensor of
/// the wrong dtype, rank, device, layout or writability) that names what
/// was expected and what was found; an object that speaks no DLPack is a
/// `TypeError` too.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{FromDLPack, PyTensor};
///
/// #[derive(FromDLPack)]
/// #[dlpack(dtype = f64, ndim = 1, contiguous)]
/// struct Samples {
///     #[dlpack(tensor)]
///     tensor: PyTensor,
///     #[dlpack(shape)]
///     len: [usize; 1],
/// }
///
/// /// Python: `mean(np.arange(4.0))`; `mean(np.ones((2, 2)))` raises
/// /// TypeError("expected a 1-dimensional tensor, got 2 dimensions")
/// #[pyfunction]
/// fn mean(s: Samples) -> PyResult<f64> {
///     Ok(s.tensor.as_slice::<f64>()?.iter().sum::<f64>() / s.len[0].max(1) as f64)
/// }
/// ```
///
/// It can also be written by hand. A `#[pyfunction]` argument needs
/// `FromPyObject` too, which [`impl_from_pyobject!`](crate::impl_from_pyobject)
/// implements (what the derive generates):
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{DataType, DLPackError, FromDLPack, PyTensor};
///
/// /// A float32 matrix.
/// struct Matrix {
///     tensor: PyTensor,
///     rows: usize,
///     cols: usize,
/// }
///
/// impl FromDLPack for Matrix {
///     fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
///         tensor.ensure_dtype(DataType::F32)?;
///         tensor.ensure_ndim(2)?;
///         let (rows, cols) = (tensor.shape()[0] as usize, tensor.shape()[1] as usize);
///         Ok(Matrix { tensor, rows, cols })
///     }
/// }
///
/// pyo3_dlpack::impl_from_pyobject!(Matrix);
///
/// /// Python: `rows(np.zeros((2, 3), dtype="f4"))`
/// #[pyfunction]
/// fn rows(m: Matrix) -> usize {
///     m.rows
/// }
/// ```
pub trait FromDLPack: Sized {
    /// Builds `Self`, or says which constraint the tensor fails.
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError>;
}

impl FromDLPack for PyTensor {
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
        Ok(tensor)
    }
}

/// Implements PyO3's `FromPyObject` for types that implement [`FromDLPack`]
/// by hand, so they are `#[pyfunction]` arguments: the object is imported as
/// a [`PyTensor`] (any DLPack producer; `TypeError` for others) and handed to
/// `from_dlpack`, whose [`DLPackError`] becomes the Python exception (a
/// `TypeError` for a tensor of the wrong dtype, rank, device, layout or
/// writability). `#[derive(FromDLPack)]` does this
/// itself.
///
/// Give one or more types; a generic type takes its parameters in brackets
/// first:
///
/// ```
/// use std::marker::PhantomData;
/// use pyo3_dlpack::{DLPackError, Element, FromDLPack, PyTensor};
///
/// struct Vector<T> {
///     tensor: PyTensor,
///     element: PhantomData<T>,
/// }
///
/// impl<T: Element> FromDLPack for Vector<T> {
///     fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
///         tensor.ensure_dtype(T::DTYPE)?;
///         tensor.ensure_ndim(1)?;
///         Ok(Vector { tensor, element: PhantomData })
///     }
/// }
///
/// pyo3_dlpack::impl_from_pyobject!([T: Element] Vector<T>);
/// ```
#[macro_export]
macro_rules! impl_from_pyobject {
    ([$($generics:tt)*] $ty:ty) => {
        impl<'__dlpack_a, '__dlpack_py, $($generics)*>
            $crate::pyo3::FromPyObject<'__dlpack_a, '__dlpack_py> for $ty
        {
            type Error = $crate::pyo3::PyErr;
            $crate::__input_type!();

            fn extract(
                obj: $crate::pyo3::Borrowed<'__dlpack_a, '__dlpack_py, $crate::pyo3::PyAny>,
            ) -> ::core::result::Result<Self, Self::Error> {
                $crate::__private::extract(&obj)
            }
        }
        $crate::__stub_type!(input [<$($generics)*>] $ty []);
    };
    ($($ty:ty),+ $(,)?) => {
        $($crate::impl_from_pyobject!([] $ty);)+
    };
}
