//! rust-numpy's `simple` example: typed arguments in, NumPy arrays out.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Zip};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::num_complex::Complex64;
use pyo3_dlpack::{
    AlignedBuffer, FromDLPack, IntoDLPack, Native, NumpyTime, PyTensor, Tensor1, Tensor2,
    TensorDyn, TensorMut1, TensorMutDyn,
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

/// The first element of an array of Python objects (rust-numpy's `head`,
/// `head(np.array(["first", None, 42]))`). DLPack carries numbers only, so an
/// object array is no tensor: it stays a Python object, indexed as one.
#[pyfunction]
pub fn head<'py>(x: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
    x.get_item(0)
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

/// Adds minutes to seconds in place: `x` is a `timedelta64[s]` array, `y`
/// a `timedelta64[m]` one (rust-numpy's `Timedelta<units::Seconds>` and
/// `Timedelta<units::Minutes>`). DLPack has no time dtype: each is read as
/// its int64 counts, its unit checked (another unit is a `TypeError`).
#[pyfunction]
pub fn add_minutes_to_seconds(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> Result<()> {
    let seconds = PyTensor::from_numpy_time(x, NumpyTime::Timedelta, "s")?;
    let minutes = PyTensor::from_numpy_time(y, NumpyTime::Timedelta, "m")?;
    let mut seconds = TensorMut1::<i64>::from_tensor(seconds)?;
    let minutes = Tensor1::<i64>::from_tensor(minutes)?;
    Zip::from(seconds.as_array_mut()?)
        .and(&minutes.as_array())
        .for_each(|s, &m| *s += 60 * m);
    Ok(())
}

/// The element types `polymorphic_add` takes, as rust-numpy's enum: the
/// first variant that fits takes the argument.
#[derive(FromPyObject)]
pub enum SupportedArray {
    F64(Tensor1<f64>),
    I64(Tensor1<i64>),
}

/// `x + y` in the arguments' dtype when they agree (int64 + int64 stays
/// int64), as float64 when they differ (the int64 one converted).
#[pyfunction]
pub fn polymorphic_add<'py>(
    py: Python<'py>,
    x: SupportedArray,
    y: SupportedArray,
) -> Result<Bound<'py, PyAny>> {
    use SupportedArray::{F64, I64};
    match (x, y) {
        (F64(x), F64(y)) => Native::numpy(&x.as_array() + &y.as_array()).into_pyobject(py),
        (I64(x), I64(y)) => Native::numpy(&x.as_array() + &y.as_array()).into_pyobject(py),
        (F64(x), I64(y)) | (I64(y), F64(x)) => {
            Native::numpy(&x.as_array() + &y.cast::<f64>()?).into_pyobject(py)
        }
    }
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
