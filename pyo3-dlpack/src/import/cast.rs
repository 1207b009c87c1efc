//! Conversion copies: the elements of an imported tensor as another element
//! type (rust-numpy's `cast`), through the one copy routine (`to_vec`) and
//! one conversion per element.

use crate::import::tensor::PyTensor;
use crate::{DLPackError, DataType, PlainElement};

/// An element type a conversion copy produces ([`PyTensor::to_vec_as`]):
/// the integers and floats, each element converted exactly as Rust's `as`
/// converts it:
///
/// - integers to integers wrap (keep the low bits), as in NumPy's
///   `astype(…, casting="unsafe")`: 300 as `u8` is 44, -1 is 255;
/// - floats to integers truncate toward zero and **saturate**: a value
///   beyond the target's range becomes its maximum or minimum, infinities
///   too, and **NaN becomes 0**. Here NumPy differs: it converts through
///   C, where these cases are undefined, and on x86-64 gives the minimum
///   for NaN, both infinities and out-of-range values of `int32`/`int64`
///   (`np.float64("nan").astype(np.int32)` is -2147483648, with a
///   `RuntimeWarning`), other values on other targets;
/// - to floats, the nearest value (`f64` beyond `f32`'s range becomes an
///   infinity, as in NumPy).
///
/// ```
/// # use pyo3::prelude::*;
/// use pyo3_dlpack::PyTensor;
/// # Python::attach(|py| -> PyResult<()> {
/// let np = py.import("numpy")?;
/// let inf = f64::INFINITY;
/// let floats = np.call_method1("array", (vec![f64::NAN, inf, -inf, 1e10, -1.5, 2.9],))?;
/// let t = PyTensor::from_pyany(&floats)?;
/// let max = i32::MAX;
/// let min = i32::MIN;
/// // NumPy's astype(np.int32) on x86-64: [min, min, min, min, -1, 2].
/// assert_eq!(t.to_vec_as::<i32>()?, vec![0, max, min, max, -1, 2]);
/// # Ok(()) }).unwrap();
/// ```
pub trait CastElement: PlainElement {
    #[doc(hidden)]
    fn from_i64(value: i64) -> Self;
    #[doc(hidden)]
    fn from_u64(value: u64) -> Self;
    #[doc(hidden)]
    fn from_f64(value: f64) -> Self;
}

macro_rules! cast_element {
    ($($ty:ty),*) => {$(
        impl CastElement for $ty {
            fn from_i64(value: i64) -> Self { value as $ty }
            fn from_u64(value: u64) -> Self { value as $ty }
            fn from_f64(value: f64) -> Self { value as $ty }
        }
    )*};
}
cast_element!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);

impl PyTensor {
    /// The elements in row-major order converted to `U` (a host copy, any
    /// strides): from bool, the integers, float16, bfloat16 (feature
    /// `half`), float32 and float64. Complex and float8 tensors are an error.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// use pyo3_dlpack::PyTensor;
    /// # Python::attach(|py| -> PyResult<()> {
    /// let ints = py.import("numpy")?.call_method1("arange", (4,))?; // int64
    /// let t = PyTensor::from_pyany(&ints)?;
    /// assert_eq!(t.to_vec_as::<f64>()?, vec![0.0, 1.0, 2.0, 3.0]);
    /// # Ok(()) }).unwrap();
    /// ```
    pub fn to_vec_as<U: CastElement>(&self) -> Result<Vec<U>, DLPackError> {
        fn map<S, U>(values: Vec<S>, f: impl Fn(S) -> U) -> Vec<U> {
            values.into_iter().map(f).collect()
        }
        Ok(match self.dtype() {
            // A bool is true for any byte but 0 (NumPy's and torch's reading).
            DataType::BOOL => map(self.to_vec::<u8>()?, |v| U::from_u64((v != 0).into())),
            DataType::U8 => map(self.to_vec::<u8>()?, |v| U::from_u64(v.into())),
            DataType::U16 => map(self.to_vec::<u16>()?, |v| U::from_u64(v.into())),
            DataType::U32 => map(self.to_vec::<u32>()?, |v| U::from_u64(v.into())),
            DataType::U64 => map(self.to_vec::<u64>()?, U::from_u64),
            DataType::I8 => map(self.to_vec::<i8>()?, |v| U::from_i64(v.into())),
            DataType::I16 => map(self.to_vec::<i16>()?, |v| U::from_i64(v.into())),
            DataType::I32 => map(self.to_vec::<i32>()?, |v| U::from_i64(v.into())),
            DataType::I64 => map(self.to_vec::<i64>()?, U::from_i64),
            DataType::F32 => map(self.to_vec::<f32>()?, |v| U::from_f64(v.into())),
            DataType::F64 => map(self.to_vec::<f64>()?, U::from_f64),
            #[cfg(feature = "half")]
            DataType::F16 => map(self.to_vec::<half::f16>()?, |v| U::from_f64(v.into())),
            #[cfg(feature = "half")]
            DataType::BF16 => map(self.to_vec::<half::bf16>()?, |v| U::from_f64(v.into())),
            found => {
                return Err(DLPackError::Dtype {
                    expected: U::DTYPE,
                    found,
                });
            }
        })
    }

    /// [`to_vec_as`](Self::to_vec_as) in the tensor's shape, as an
    /// `ndarray` array of dimension `D` (the crate's rank message when the
    /// rank differs). Feature `ndarray`.
    #[cfg(feature = "ndarray")]
    pub fn to_array_as<U: CastElement, D: ndarray::Dimension>(
        &self,
    ) -> Result<ndarray::Array<U, D>, DLPackError> {
        if let Some(expected) = D::NDIM.filter(|&ndim| ndim != self.ndim()) {
            return Err(DLPackError::Ndim {
                expected,
                found: self.ndim(),
            });
        }
        let shape: Vec<usize> = self.shape().iter().map(|&n| n as usize).collect();
        // An empty tensor whose other extents multiply past `isize::MAX` is
        // valid, but no `ndarray` shape holds it.
        let array =
            ndarray::ArrayD::from_shape_vec(shape, self.to_vec_as::<U>()?).map_err(|_| {
                crate::error::SizeOverflow::Elements {
                    shape: self.shape().to_vec(),
                }
            })?;
        Ok(array
            .into_dimensionality::<D>()
            .expect("the rank was checked above"))
    }
}
