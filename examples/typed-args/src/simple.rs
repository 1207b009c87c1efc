//! rust-numpy's `simple` example: typed arguments in, NumPy arrays out.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Zip};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::num_complex::Complex64;
use pyo3_dlpack::{
    AlignedBuffer, FromDLPack, IntoDLPack, Native, PyTensor, Tensor1, Tensor2, TensorDyn,
    TensorMut1, TensorMutDyn,
};

use crate::Result;

/// `a * x + y`: the Rust function, on plain `ndarray` views.
fn axpy_views(a: f64, x: ArrayViewD<'_, f64>, y: ArrayViewD<'_, f64>) -> ArrayD<f64> {
    a * &x + &y
}

/// `x *= a`, in place.
fn mult_view(a: f64, mut x: ArrayViewMutD<'_, f64>) {
    x *= a;
}

/// `a * x + y` as a new NumPy array (any producer, float64, any rank).
#[pyfunction]
pub fn axpy(a: f64, x: TensorDyn<f64>, y: TensorDyn<f64>) -> Native<ArrayD<f64>> {
    Native::numpy(axpy_views(a, x.as_array(), y.as_array()))
}

/// Multiplies `x` by `a` in place (the caller's NumPy array or torch tensor).
#[pyfunction]
pub fn mult(a: f64, mut x: TensorMutDyn<f64>) -> Result<()> {
    mult_view(a, x.as_array_mut()?);
    Ok(())
}

/// The complex conjugate, through the re-exported `num_complex`.
#[pyfunction]
pub fn conj(x: TensorDyn<Complex64>) -> Native<ArrayD<Complex64>> {
    Native::numpy(x.as_array().map(|c| c.conj()))
}

/// The first element of a 1-D float64 tensor (rust-numpy's `head` reads an
/// object array, which DLPack cannot carry: the error says so).
#[pyfunction]
pub fn head(x: Tensor1<f64>) -> Result<f64> {
    x.as_array()
        .first()
        .copied()
        .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("head of an empty tensor"))
}

/// The sum of the float64 vector `d["x"]`: a typed tensor extracted from a
/// dictionary, as any PyO3 value is.
#[pyfunction]
pub fn extract(d: &Bound<'_, PyDict>) -> Result<f64> {
    let x: Tensor1<f64> = d
        .get_item("x")?
        .ok_or_else(|| PyKeyError::new_err("x"))?
        .extract()?;
    Ok(x.as_array().sum())
}

/// Adds minutes to seconds, as int64 counts: NumPy's `timedelta64` arrays
/// have no DLPack dtype, so Python passes `seconds.view("int64")` (the error
/// for the `timedelta64` array itself says so).
#[pyfunction]
pub fn add_minutes_to_seconds(mut seconds: TensorMut1<i64>, minutes: Tensor1<i64>) -> Result<()> {
    let minutes = minutes.as_array();
    Zip::from(seconds.as_array_mut()?)
        .and(&minutes)
        .for_each(|s, &m| *s += 60 * m);
    Ok(())
}

/// `x + y` for tensors of any real dtypes, as float64: rust-numpy's version
/// dispatches on the dtypes by hand; a conversion copy does it in one call.
#[pyfunction]
pub fn polymorphic_add(x: PyTensor, y: PyTensor) -> Result<Native<ArrayD<f64>>> {
    let x = x.to_array_as::<f64, ndarray::IxDyn>()?;
    let y = y.to_array_as::<f64, ndarray::IxDyn>()?;
    Ok(Native::numpy(x + y))
}

/// The trace of a square float64 matrix.
#[pyfunction]
pub fn trace(m: Tensor2<f64>) -> f64 {
    m.as_array().diag().sum()
}

/// A tensor struct with several fields: the derive, for what a typed argument
/// does not hold.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2)]
pub struct Image {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
}

/// The shape of a float32 image and its mean (a derived argument).
#[pyfunction]
pub fn shape_of(image: Image) -> Result<((usize, usize), f32)> {
    let values = image.tensor.to_vec::<f32>()?;
    let mean = values.iter().sum::<f32>() / values.len().max(1) as f32;
    Ok(((image.shape[0], image.shape[1]), mean))
}

/// A derived export: 64-byte aligned zeros.
#[derive(IntoDLPack)]
pub struct Zeros {
    #[dlpack(data)]
    values: AlignedBuffer<f64>,
}

/// `n` float64 zeros, as a `DLPackTensor` any framework imports.
#[pyfunction]
pub fn zeros(n: usize) -> Zeros {
    Zeros {
        values: AlignedBuffer::zeroed(n),
    }
}
