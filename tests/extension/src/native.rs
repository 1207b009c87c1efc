//! Framework-native results (`Native`, `to_framework`), with drop counting.

#[allow(unused_imports)]
use super::*;

use pyo3_dlpack::{Framework, Native, to_framework};

fn framework(name: &str) -> PyResult<Framework> {
    Ok(match name {
        "numpy" => Framework::NumPy,
        "torch" => Framework::Torch,
        "jax" => Framework::Jax,
        "cupy" => Framework::CuPy,
        other => return Err(PyValueError::new_err(format!("no framework {other:?}"))),
    })
}

/// `n` elements of `dtype` (element `i` is `i`, as `arange`), with an
/// optional layout, returned as a `framework` array.
#[pyfunction]
#[pyo3(signature = (framework_name, dtype, n, shape=None, strides=None, read_only=false, device=None))]
#[allow(clippy::too_many_arguments)] // Python keywords
pub(crate) fn native_arange<'py>(
    py: Python<'py>,
    framework_name: &str,
    dtype: &str,
    n: usize,
    shape: Option<Vec<i64>>,
    strides: Option<Vec<i64>>,
    read_only: bool,
    device: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let framework = framework(framework_name)?;
    macro_rules! typed {
        ($ty:ty, $convert:expr) => {{
            let values: Vec<$ty> = (0..n).map($convert).collect();
            described!(values, None, shape)
        }};
    }
    macro_rules! described {
        ($values:expr, $dtype:expr, $shape:expr) => {{
            let mut tracked = Tracked::new(AlignedBuffer::from_slice(&$values));
            tracked.dtype = $dtype;
            tracked.shape = $shape;
            tracked.strides = strides;
            tracked.read_only = read_only;
            if let Some(device) = device {
                // A declared device over host memory: only ever described, never read.
                tracked.device =
                    Some(device.parse().map_err(|e: pyo3_dlpack::ParseDeviceError| {
                        PyValueError::new_err(e.to_string())
                    })?);
            }
            to_framework(py, tracked, framework)
        }};
    }
    match dtype {
        "bool" => typed!(bool, |i| i % 2 == 1),
        "int8" => typed!(i8, |i| i as i8),
        "int64" => typed!(i64, |i| i as i64),
        "uint16" => typed!(u16, |i| i as u16),
        "float16" => typed!(half::f16, |i| half::f16::from_f32(i as f32)),
        "bfloat16" => typed!(half::bf16, |i| half::bf16::from_f32(i as f32)),
        "float32" => typed!(f32, |i| i as f32),
        "float64" => typed!(f64, |i| i as f64),
        "complex64" => typed!(num_complex::Complex<f32>, |i| num_complex::Complex::new(
            i as f32,
            -(i as f32)
        )),
        // No Rust element type: the bfloat16 pairs (i, -i) as bytes.
        "bcomplex32" => {
            let bytes: Vec<u8> = (0..n)
                .flat_map(|i| [i as f32, -(i as f32)])
                .flat_map(|part| half::bf16::from_f32(part).to_ne_bytes())
                .collect();
            let shape = shape.or(Some(vec![n as i64]));
            described!(bytes, Some(pyo3_dlpack::DataType::BC32), shape)
        }
        other => Err(PyValueError::new_err(format!(
            "native_arange: no type {other:?}"
        ))),
    }
}

/// A result of the same kind as `like` (a `DLPackTensor` when `like` is
/// none of the frameworks): `n` float32 elements counting from 0.
#[pyfunction]
pub(crate) fn native_like<'py>(
    py: Python<'py>,
    like: &Bound<'py, PyAny>,
    n: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let values = Tracked::new((0..n).map(|i| i as f32).collect::<Vec<f32>>());
    match Framework::of(like)? {
        Some(framework) => Native::new(values, framework).into_pyobject(py),
        None => Ok(Bound::new(py, DLPackTensor::new(values)?)?.into_any()),
    }
}

/// `Framework::of(obj)`, as its variant's name.
#[pyfunction]
pub(crate) fn framework_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    Ok(Framework::of(obj)?.map(|framework| format!("{framework:?}")))
}

/// A value whose description fails (a shape larger than its buffer).
#[pyfunction]
pub(crate) fn native_broken<'py>(
    py: Python<'py>,
    framework_name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mut tracked = Tracked::new(vec![0f32; 4]);
    tracked.shape = Some(vec![5]);
    to_framework(py, tracked, framework(framework_name)?)
}

/// A `shape` tensor of `dtype` allocated by `like`'s framework on its device
/// (`allocate_like`), filled from Rust with 0, 1, 2, … (float32 and int64;
/// other dtypes are left uninitialised).
#[pyfunction]
pub(crate) fn allocate_filled<'py>(
    like: &Bound<'py, PyAny>,
    shape: Vec<i64>,
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mut out = pyo3_dlpack::allocate_like(like, &shape, parse_dtype(dtype)?)?;
    match dtype {
        "float32" => {
            for (i, x) in out.tensor.as_slice_mut::<f32>()?.iter_mut().enumerate() {
                *x = i as f32;
            }
        }
        "int64" => {
            for (i, x) in out.tensor.as_slice_mut::<i64>()?.iter_mut().enumerate() {
                *x = i as i64;
            }
        }
        _ => {}
    }
    Ok(out.object)
}

/// `n` indices counting down, as `Vec<usize>` in a NumPy array (`uintp`).
#[pyfunction]
pub(crate) fn usize_indices(n: usize) -> Native<Vec<usize>> {
    Native::numpy((0..n).rev().collect())
}

/// The sum of a typed `usize` vector, and its `isize` conversion copy.
#[pyfunction]
pub(crate) fn usize_sum(x: pyo3_dlpack::Tensor1<usize>) -> PyResult<(usize, Vec<isize>)> {
    let sum = x.as_array().sum();
    Ok((sum, x.tensor().to_vec_as::<isize>()?))
}
