//! What PyO3's introspection writes into a generated stub (`maturin
//! generate-stubs`, pyo3-introspection) for this crate's argument and return
//! types. Feature `experimental-inspect` (PyO3's `experimental-inspect`).
//!
//! A stub cannot declare a protocol of its own (the introspection data has
//! classes, functions and attributes only), and no protocol a type checker
//! knows accepts every producer: NumPy's private `_SupportsDLPack` refuses
//! `jax.Array`, whose stub declares `__dlpack__(self)` without keywords. So
//! an argument is hinted as the union of the array types of the frameworks
//! it accepts, with the element type where the Rust type names it:
//! `numpy.typing.NDArray[numpy.float64] | torch.Tensor | jax.Array`. A type
//! checker without torch or JAX installed reads their names as unknown.

use pyo3::inspect::PyStaticExpr;
use pyo3::{type_hint_identifier, type_hint_subscript, type_hint_union};

/// `numpy.generic`: the scalar type of an element NumPy has no name for.
pub(crate) const NUMPY_GENERIC: PyStaticExpr = type_hint_identifier!("numpy", "generic");
const NDARRAY: PyStaticExpr = type_hint_identifier!("numpy.typing", "NDArray");
const TORCH_TENSOR: PyStaticExpr = type_hint_identifier!("torch", "Tensor");
const JAX_ARRAY: PyStaticExpr = type_hint_identifier!("jax", "Array");
/// Objects of the buffer protocol (`bytes`, `bytearray`, `memoryview`, a
/// `DLPackTensor`), which a `PyTensor` also imports.
const BUFFER: PyStaticExpr = type_hint_identifier!("typing_extensions", "Buffer");

/// `numpy.<name>`, the scalar type of an element.
pub(crate) const fn numpy_scalar(name: &'static str) -> PyStaticExpr {
    type_hint_identifier!("numpy", name)
}

/// What a `PyTensor` argument accepts: any framework's array, of any
/// element type, or a buffer.
pub const ANY_TENSOR: PyStaticExpr = type_hint_union!(
    type_hint_subscript!(NDARRAY, NUMPY_GENERIC),
    TORCH_TENSOR,
    JAX_ARRAY,
    BUFFER
);

/// The hints of arguments of elements `T`.
#[derive(Debug)]
pub struct Hints<T>(std::marker::PhantomData<T>);

impl<T: crate::Element> Hints<T> {
    /// What a read-only typed argument accepts.
    pub const READABLE: PyStaticExpr = type_hint_union!(
        type_hint_subscript!(NDARRAY, T::NUMPY_SCALAR),
        TORCH_TENSOR,
        JAX_ARRAY
    );
    /// What a writable typed argument accepts (JAX arrays are immutable).
    pub const WRITABLE: PyStaticExpr =
        type_hint_union!(type_hint_subscript!(NDARRAY, T::NUMPY_SCALAR), TORCH_TENSOR);

    /// What a read-only typed argument of CUDA memory accepts (no NumPy
    /// array: NumPy's memory is the host's).
    pub const READABLE_CUDA: PyStaticExpr = type_hint_union!(TORCH_TENSOR, JAX_ARRAY);
    /// What a writable typed argument of CUDA memory accepts.
    pub const WRITABLE_CUDA: PyStaticExpr = TORCH_TENSOR;

    /// [`READABLE`](Self::READABLE), or [`READABLE_CUDA`](Self::READABLE_CUDA)
    /// for memory that must be CUDA's.
    pub const fn readable(cuda_only: bool) -> PyStaticExpr {
        if cuda_only {
            Self::READABLE_CUDA
        } else {
            Self::READABLE
        }
    }

    /// [`WRITABLE`](Self::WRITABLE), or [`WRITABLE_CUDA`](Self::WRITABLE_CUDA)
    /// for memory that must be CUDA's.
    pub const fn writable(cuda_only: bool) -> PyStaticExpr {
        if cuda_only {
            Self::WRITABLE_CUDA
        } else {
            Self::WRITABLE
        }
    }
}

/// The `INPUT_TYPE` of a `FromPyObject` impl that imports a `PyTensor`
/// (derived or [`impl_from_pyobject!`](crate::impl_from_pyobject) types):
/// of elements `$element` when given. Expands to nothing without the
/// feature, so generated code compiles either way.
#[doc(hidden)]
#[macro_export]
macro_rules! __input_type {
    () => {
        const INPUT_TYPE: $crate::pyo3::inspect::PyStaticExpr = $crate::inspect::ANY_TENSOR;
    };
    ($element:ty) => {
        const INPUT_TYPE: $crate::pyo3::inspect::PyStaticExpr =
            $crate::inspect::Hints::<$element>::READABLE;
    };
}

/// The `OUTPUT_TYPE` of a derived export's `IntoPyObject`: `DLPackTensor`.
#[doc(hidden)]
#[macro_export]
macro_rules! __output_type {
    () => {
        const OUTPUT_TYPE: $crate::pyo3::inspect::PyStaticExpr =
            <$crate::DLPackTensor as $crate::pyo3::PyTypeInfo>::TYPE_HINT;
    };
}

/// What a `Native` return is: the array of the framework chosen at run time.
pub(crate) const NATIVE: PyStaticExpr = type_hint_union!(
    type_hint_subscript!(NDARRAY, NUMPY_GENERIC),
    TORCH_TENSOR,
    JAX_ARRAY
);

#[cfg(test)]
mod tests {
    use crate::{PlainElement, PyTensor};
    use pyo3::{FromPyObject, IntoPyObject};

    fn input<'a, T: FromPyObject<'a, 'a>>() -> String {
        T::INPUT_TYPE.to_string()
    }

    #[test]
    fn hints_name_the_frameworks_and_the_element_type() {
        assert_eq!(
            input::<PyTensor>(),
            "numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array | typing_extensions.Buffer"
        );
        assert_eq!(
            <crate::Native<Vec<f32>> as IntoPyObject<'_>>::OUTPUT_TYPE.to_string(),
            "numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array"
        );
        assert_eq!(
            <crate::DLPackTensor as pyo3::PyTypeInfo>::TYPE_HINT.to_string(),
            "pyo3_dlpack.DLPackTensor"
        );
        fn scalar<T: PlainElement>() -> String {
            T::NUMPY_SCALAR.to_string()
        }
        assert_eq!(scalar::<f64>(), "numpy.float64");
        assert_eq!(scalar::<u8>(), "numpy.uint8");
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn typed_arguments_name_their_element_type() {
        use crate::{Tensor2, TensorMutDyn};
        assert_eq!(
            input::<Tensor2<f32>>(),
            "numpy.typing.NDArray[numpy.float32] | torch.Tensor | jax.Array"
        );
        assert_eq!(
            input::<TensorMutDyn<i64>>(),
            "numpy.typing.NDArray[numpy.int64] | torch.Tensor"
        );
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn typed_arguments_of_cuda_memory_name_no_numpy_array() {
        use crate::memory::{AnyDevice, Cuda};
        use crate::{Tensor2, TensorMut1};
        assert_eq!(input::<Tensor2<f32, Cuda>>(), "torch.Tensor | jax.Array");
        assert_eq!(input::<TensorMut1<f32, Cuda>>(), "torch.Tensor");
        assert_eq!(
            input::<Tensor2<f32, AnyDevice>>(),
            "numpy.typing.NDArray[numpy.float32] | torch.Tensor | jax.Array"
        );
    }
}
