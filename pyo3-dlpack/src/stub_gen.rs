//! What a stub generated with pyo3-stub-gen names for this crate's argument
//! and return types (feature `stub-gen`): the hints of
//! `experimental-inspect` (see `inspect.rs`, whose reasons hold here too),
//! as pyo3-stub-gen's [`TypeInfo`]s.
//!
//! An argument is the union of the array types of the frameworks it
//! accepts, with the element type where the Rust type names it
//! (`numpy.typing.NDArray[numpy.float64] | torch.Tensor | jax.Array`); a
//! `Native` return the array of the framework chosen at run time; a
//! `DLPackTensor`, and a derived export, the `DLPackTensor` class of the
//! extension's own module (where `DLPackTensor::add_to_module` puts it).

use std::collections::{HashMap, HashSet};

use pyo3_stub_gen::{ModuleRef, PyStubType, TypeInfo};

/// `module.name`, importing `module`.
fn identifier(module: &str, name: &str) -> TypeInfo {
    TypeInfo {
        name: format!("{module}.{name}"),
        source_module: None,
        import: HashSet::from([module.into()]),
        type_refs: HashMap::new(),
    }
}

/// `numpy.typing.NDArray[numpy.<scalar>]`.
fn ndarray(scalar: &str) -> TypeInfo {
    TypeInfo {
        name: format!("numpy.typing.NDArray[numpy.{scalar}]"),
        source_module: None,
        import: HashSet::from(["numpy".into(), "numpy.typing".into()]),
        type_refs: HashMap::new(),
    }
}

fn torch_tensor() -> TypeInfo {
    identifier("torch", "Tensor")
}

fn jax_array() -> TypeInfo {
    identifier("jax", "Array")
}

/// What a `PyTensor` argument accepts: any framework's array, of any
/// element type, or a buffer (`inspect::ANY_TENSOR`).
pub fn any_tensor() -> TypeInfo {
    native() | identifier("typing_extensions", "Buffer")
}

/// What a `Native` return is (`inspect::NATIVE`).
fn native() -> TypeInfo {
    ndarray("generic") | torch_tensor() | jax_array()
}

/// What a typed argument of elements `T` accepts (`inspect::Hints`):
/// writable ones no JAX array (JAX arrays are immutable), those of CUDA
/// memory no NumPy array (NumPy's memory is the host's).
pub fn typed<T: crate::Element>(writable: bool, cuda_only: bool) -> TypeInfo {
    let mut hint = (!cuda_only).then(|| ndarray(T::NUMPY_NAME));
    for framework in [Some(torch_tensor()), (!writable).then(jax_array)]
        .into_iter()
        .flatten()
    {
        hint = Some(match hint {
            Some(hint) => hint | framework,
            None => framework,
        });
    }
    hint.expect("torch.Tensor is always there")
}

/// A `DLPackTensor`: the class of the extension's default module, where
/// `DLPackTensor::add_to_module` puts it.
pub fn dlpack_tensor() -> TypeInfo {
    TypeInfo::locally_defined("DLPackTensor", ModuleRef::Default)
}

impl PyStubType for crate::PyTensor {
    fn type_output() -> TypeInfo {
        any_tensor()
    }
}

impl PyStubType for crate::DLPackTensor {
    fn type_output() -> TypeInfo {
        dlpack_tensor()
    }
}

impl<T: crate::IntoDLPack> PyStubType for crate::Native<T> {
    fn type_output() -> TypeInfo {
        native()
    }
}

#[cfg(feature = "ndarray")]
mod typed_arguments {
    use crate::memory::Memory;
    use crate::{PlainElement, Tensor, TensorMut};
    use ndarray::Dimension;
    use pyo3_stub_gen::{PyStubType, TypeInfo};

    impl<T: PlainElement, D: Dimension, M: Memory> PyStubType for Tensor<T, D, M> {
        fn type_output() -> TypeInfo {
            super::typed::<T>(false, M::CUDA_ONLY)
        }
    }

    impl<T: PlainElement, D: Dimension, M: Memory> PyStubType for TensorMut<T, D, M> {
        fn type_output() -> TypeInfo {
            super::typed::<T>(true, M::CUDA_ONLY)
        }
    }
}

/// `PyStubType` for a derived type or an
/// [`impl_from_pyobject!`](crate::impl_from_pyobject) one: `input` (of
/// elements `$element` when given: what a `PyTensor` argument accepts
/// otherwise), `derived_input` (the same, and a `DLPackTensor` as an output)
/// or `output` (a `DLPackTensor`), in brackets the impl's
/// generics (`<T: Element>`, or nothing) and its where clause. Expands to
/// nothing without the feature, so generated code compiles either way.
#[doc(hidden)]
#[macro_export]
macro_rules! __stub_type {
    (input [$($generics:tt)*] $ty:ty [$($where:tt)*] $($element:ty)?) => {
        impl $($generics)* $crate::__private::pyo3_stub_gen::PyStubType for $ty $($where)* {
            fn type_output() -> $crate::__private::pyo3_stub_gen::TypeInfo {
                $crate::__stub_type!(@input $($element)?)
            }
        }
    };
    // A derived `FromDLPack` type: its input as `input`'s, and as an output a
    // `DLPackTensor`, for the struct that derives `IntoDLPack` too (whose
    // derive then leaves this one impl to this derive); a type that derives
    // only `FromDLPack` is never returned, so its output is never asked.
    (derived_input [$($generics:tt)*] $ty:ty [$($where:tt)*] $($element:ty)?) => {
        impl $($generics)* $crate::__private::pyo3_stub_gen::PyStubType for $ty $($where)* {
            fn type_output() -> $crate::__private::pyo3_stub_gen::TypeInfo {
                $crate::stub_gen::dlpack_tensor()
            }
            fn type_input() -> $crate::__private::pyo3_stub_gen::TypeInfo {
                $crate::__stub_type!(@input $($element)?)
            }
        }
    };
    (output [$($generics:tt)*] $ty:ty [$($where:tt)*]) => {
        impl $($generics)* $crate::__private::pyo3_stub_gen::PyStubType for $ty $($where)* {
            fn type_output() -> $crate::__private::pyo3_stub_gen::TypeInfo {
                $crate::stub_gen::dlpack_tensor()
            }
        }
    };
    (@input) => {
        $crate::stub_gen::any_tensor()
    };
    (@input $element:ty) => {
        $crate::stub_gen::typed::<$element>(false, false)
    };
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use pyo3_stub_gen::{ImportRef, ModuleRef, PyStubType};

    fn input<T: PyStubType>() -> String {
        T::type_input().name
    }

    fn imports<T: PyStubType>() -> HashSet<ImportRef> {
        T::type_input().import
    }

    fn modules(names: &[&str]) -> HashSet<ImportRef> {
        names.iter().map(|&name| name.into()).collect()
    }

    #[test]
    fn stubs_name_the_frameworks_and_the_element_type() {
        use crate::{DLPackTensor, Native, PyTensor};
        assert_eq!(
            input::<PyTensor>(),
            "numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array | typing_extensions.Buffer"
        );
        assert_eq!(
            imports::<PyTensor>(),
            modules(&["numpy", "numpy.typing", "torch", "jax", "typing_extensions"])
        );
        assert_eq!(
            Native::<Vec<f32>>::type_output().name,
            "numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array"
        );
        let tensor = DLPackTensor::type_output();
        assert_eq!(tensor.name, "DLPackTensor");
        assert_eq!(tensor.source_module, Some(ModuleRef::Default));
        assert_eq!(
            tensor.import,
            HashSet::from([ImportRef::Module(ModuleRef::Default)])
        );
        let mut resolved = tensor.clone();
        resolved.resolve_default_module("my_module");
        assert_eq!(resolved.qualified_for_module("my_module"), "DLPackTensor");
        assert_eq!(
            resolved.qualified_for_module("other"),
            "my_module.DLPackTensor"
        );
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn typed_arguments_name_their_element_type_and_memory() {
        use crate::memory::{AnyDevice, Cuda};
        use crate::{Tensor2, TensorDyn, TensorMut1, TensorMutDyn};
        assert_eq!(
            input::<Tensor2<f64>>(),
            "numpy.typing.NDArray[numpy.float64] | torch.Tensor | jax.Array"
        );
        assert_eq!(
            imports::<Tensor2<f64>>(),
            modules(&["numpy", "numpy.typing", "torch", "jax"])
        );
        assert_eq!(
            input::<TensorMutDyn<i64>>(),
            "numpy.typing.NDArray[numpy.int64] | torch.Tensor"
        );
        assert_eq!(input::<TensorDyn<u8, Cuda>>(), "torch.Tensor | jax.Array");
        assert_eq!(input::<TensorMut1<f32, Cuda>>(), "torch.Tensor");
        assert_eq!(imports::<TensorMut1<f32, Cuda>>(), modules(&["torch"]));
        assert_eq!(
            input::<Tensor2<u16, AnyDevice>>(),
            "numpy.typing.NDArray[numpy.uint16] | torch.Tensor | jax.Array"
        );
        // NumPy has no bfloat16.
        #[cfg(feature = "half")]
        assert_eq!(
            input::<Tensor2<half::bf16>>(),
            "numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array"
        );
    }

    /// Derived and `impl_from_pyobject!` types, through the macro the
    /// derive calls.
    #[test]
    fn derived_types_take_the_hints_of_their_kind() {
        struct Any;
        struct Typed<T>(T);
        struct Export<S>(S);
        crate::__stub_type!(input [] Any []);
        crate::__stub_type!(input [<T>] Typed<T> [where T: Copy] f32);
        crate::__stub_type!(output [<S: Clone>] Export<S> [where S: Send]);
        assert_eq!(input::<Any>(), input::<crate::PyTensor>());
        assert_eq!(
            input::<Typed<u8>>(),
            "numpy.typing.NDArray[numpy.float32] | torch.Tensor | jax.Array"
        );
        assert_eq!(Export::<u8>::type_output().name, "DLPackTensor");
        // A struct that derives both traits: its import's hint as an argument,
        // a `DLPackTensor` as a return.
        struct Both;
        crate::__stub_type!(derived_input [] Both [] f32);
        assert_eq!(input::<Both>(), input::<Typed<u8>>());
        assert_eq!(Both::type_output().name, "DLPackTensor");
    }

    #[cfg(feature = "derive")]
    #[test]
    fn derives_implement_the_stub_type() {
        use crate::{AlignedBuffer, FromDLPack, IntoDLPack, PyTensor, TensorData};

        #[derive(IntoDLPack)]
        #[dlpack(crate = "crate")]
        struct Image<S: TensorData + Send + Sync + 'static> {
            #[dlpack(data)]
            pixels: S,
        }

        #[derive(FromDLPack)]
        #[dlpack(crate = "crate", dtype = f64, ndim = 2)]
        struct Matrix {
            #[dlpack(tensor)]
            _tensor: PyTensor,
        }

        #[derive(FromDLPack)]
        #[dlpack(crate = "crate")]
        struct Anything {
            #[dlpack(tensor)]
            _tensor: PyTensor,
        }

        assert_eq!(
            Image::<AlignedBuffer<u8>>::type_output().name,
            "DLPackTensor"
        );
        assert_eq!(
            input::<Matrix>(),
            "numpy.typing.NDArray[numpy.float64] | torch.Tensor | jax.Array"
        );
        assert_eq!(input::<Anything>(), input::<PyTensor>());
    }

    /// A stub pyo3-stub-gen writes for functions of this crate's types.
    #[cfg(all(feature = "derive", feature = "ndarray"))]
    #[test]
    fn generated_stubs_name_the_types() {
        use crate::{AlignedBuffer, IntoDLPack, Native, PyTensor, Tensor2, TensorMut1};
        use pyo3::prelude::*;
        use pyo3_stub_gen::derive::gen_stub_pyfunction;

        #[derive(IntoDLPack)]
        #[dlpack(crate = "crate")]
        struct Image {
            #[dlpack(data)]
            pixels: AlignedBuffer<u8>,
        }

        #[gen_stub_pyfunction]
        #[pyfunction]
        fn render(_m: Tensor2<f64>, _out: TensorMut1<f32>, _any: PyTensor) -> Image {
            Image {
                pixels: AlignedBuffer::zeroed(1),
            }
        }

        #[gen_stub_pyfunction]
        #[pyfunction]
        fn native(_like: PyTensor) -> Native<Vec<u8>> {
            Native::numpy(vec![0])
        }

        let _ = (render, native);
        let root = std::env::temp_dir();
        let config = pyo3_stub_gen::StubGenConfig::default();
        let info = pyo3_stub_gen::StubInfo::from_project_root("my_ext".into(), root, false, config)
            .expect("stub info");
        let stub = info.modules["my_ext"].to_string();
        for line in [
            "import jax",
            "import numpy",
            "import numpy.typing",
            "import torch",
            "import typing_extensions",
            "def native(_like: numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array | \
             typing_extensions.Buffer) -> numpy.typing.NDArray[numpy.generic] | torch.Tensor | \
             jax.Array: ...",
            "def render(_m: numpy.typing.NDArray[numpy.float64] | torch.Tensor | jax.Array, \
             _out: numpy.typing.NDArray[numpy.float32] | torch.Tensor, \
             _any: numpy.typing.NDArray[numpy.generic] | torch.Tensor | jax.Array | \
             typing_extensions.Buffer) -> DLPackTensor: ...",
        ] {
            assert!(stub.contains(line), "no {line:?} in\n{stub}");
        }
        assert!(!stub.contains("import my_ext"), "{stub}");
    }

    /// The stubs of both features name the same types.
    #[cfg(all(feature = "experimental-inspect", feature = "ndarray"))]
    #[test]
    fn stubs_mirror_the_introspection_hints() {
        use crate::memory::{AnyDevice, Cuda, Host};
        use crate::{PyTensor, Tensor2, TensorMut2};
        use pyo3::{FromPyObject, IntoPyObject};

        fn same<'a, T: FromPyObject<'a, 'a> + PyStubType>() {
            assert_eq!(T::INPUT_TYPE.to_string(), input::<T>());
        }
        same::<PyTensor>();
        same::<Tensor2<f32, Host>>();
        same::<Tensor2<i16, Cuda>>();
        same::<Tensor2<u32, AnyDevice>>();
        same::<TensorMut2<f64, Host>>();
        same::<TensorMut2<f64, Cuda>>();
        same::<TensorMut2<u16, AnyDevice>>();
        assert_eq!(
            <crate::Native<Vec<f32>> as IntoPyObject<'_>>::OUTPUT_TYPE.to_string(),
            crate::Native::<Vec<f32>>::type_output().name
        );
    }
}
