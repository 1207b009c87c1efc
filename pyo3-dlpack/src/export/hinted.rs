//! Python objects `DLPackTensor`'s methods take and return, with the type
//! hint a generated stub writes for them (feature `experimental-inspect`):
//! the object itself at run time, where the Rust type would say `Any`.

use std::convert::Infallible;
use std::marker::PhantomData;

use pyo3::prelude::*;

/// A type hint of a Python object (a marker type per hint).
pub(crate) trait Hint {
    /// The hint.
    #[cfg(feature = "experimental-inspect")]
    const HINT: pyo3::inspect::PyStaticExpr;
}

/// A Python object, hinted as `H` says.
pub(crate) struct Hinted<'py, H: Hint>(Bound<'py, PyAny>, PhantomData<H>);

impl<'py, H: Hint> Hinted<'py, H> {
    /// `object`, as what `H` names.
    pub(crate) fn new(object: Bound<'py, PyAny>) -> Self {
        Self(object, PhantomData)
    }

    /// The object.
    #[cfg(any(feature = "pickle", feature = "non-dlpack-export"))]
    pub(crate) fn object(&self) -> &Bound<'py, PyAny> {
        &self.0
    }
}

impl<'py, H: Hint> IntoPyObject<'py> for Hinted<'py, H> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = Infallible;
    #[cfg(feature = "experimental-inspect")]
    const OUTPUT_TYPE: pyo3::inspect::PyStaticExpr = H::HINT;

    fn into_pyobject(self, _py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(self.0)
    }
}

impl<'a, 'py, H: Hint> FromPyObject<'a, 'py> for Hinted<'py, H> {
    type Error = Infallible;
    #[cfg(feature = "experimental-inspect")]
    const INPUT_TYPE: pyo3::inspect::PyStaticExpr = H::HINT;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        Ok(Self::new(object.to_owned()))
    }
}

macro_rules! hints {
    ($($(#[$attr:meta])* $name:ident = $hint:expr;)*) => {$(
        $(#[$attr])*
        pub(crate) struct $name;
        $(#[$attr])*
        impl Hint for $name {
            #[cfg(feature = "experimental-inspect")]
            const HINT: pyo3::inspect::PyStaticExpr = $hint;
        }
    )*};
}

hints! {
    /// `numpy.ndarray`.
    #[cfg(any(feature = "non-dlpack-export", feature = "experimental-inspect"))]
    NumpyArray = pyo3::type_hint_identifier!("numpy", "ndarray");
    /// `numpy.typing.DTypeLike`: what NumPy takes as a dtype.
    #[cfg(any(feature = "non-dlpack-export", feature = "experimental-inspect"))]
    DTypeLike = pyo3::type_hint_identifier!("numpy.typing", "DTypeLike");
    /// `jax.Array`.
    JaxArray = pyo3::type_hint_identifier!("jax", "Array");
    /// `dict`: `copy.deepcopy`'s memo (any object is taken, as NumPy's
    /// `__deepcopy__` takes one).
    #[cfg(any(feature = "pickle", feature = "experimental-inspect"))]
    Memo = pyo3::type_hint_identifier!("builtins", "dict");
    /// The class itself: what `copy.copy` and `copy.deepcopy` return (a
    /// subclass's own reduction makes an instance of the subclass).
    #[cfg(any(feature = "pickle", feature = "experimental-inspect"))]
    Tensor = <crate::DLPackTensor as pyo3::PyTypeInfo>::TYPE_HINT;
    /// `str | tuple`: what `__reduce_ex__` returns (a subclass's own
    /// `__reduce__` may return a global's name).
    #[cfg(any(feature = "pickle", feature = "experimental-inspect"))]
    Reduction = pyo3::inspect::PyStaticExpr::BinOp {
        left: &pyo3::type_hint_identifier!("builtins", "str"),
        op: pyo3::inspect::PyStaticOperator::BitOr,
        right: &pyo3::type_hint_identifier!("builtins", "tuple"),
    };
    /// `collections.abc.Callable[..., types.CapsuleType]`: `__dlpack__`, a
    /// method descriptor made in C.
    DLPackMethod = pyo3::type_hint_subscript!(
        pyo3::type_hint_identifier!("collections.abc", "Callable"),
        pyo3::inspect::PyStaticExpr::Constant {
            value: pyo3::inspect::PyStaticConstant::Ellipsis
        },
        pyo3::type_hint_identifier!("types", "CapsuleType")
    );
}
