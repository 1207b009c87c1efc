//! NumPy's `datetime64` and `timedelta64` arrays, which DLPack has no dtype
//! for, read as their `int64` counts of a unit the caller names.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::PyTensor;
use crate::error::PythonKind;

/// NumPy's time dtypes: `datetime64` (instants) or `timedelta64`
/// (durations), each counting a unit (`"s"`, `"m"`, `"ns"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumpyTime {
    /// `datetime64[unit]`: counts of `unit` since 1970-01-01T00:00.
    Datetime,
    /// `timedelta64[unit]`: counts of `unit`.
    Timedelta,
}

impl NumpyTime {
    fn name(self) -> &'static str {
        match self {
            Self::Datetime => "datetime64",
            Self::Timedelta => "timedelta64",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Self::Datetime => "M",
            Self::Timedelta => "m",
        }
    }
}

impl PyTensor {
    /// A NumPy `datetime64[unit]` or `timedelta64[unit]` array as its
    /// `int64` counts of `unit`: the same memory (no copy), writable when
    /// the array is, so writes land in the caller's array. DLPack has no
    /// time dtype; rust-numpy puts the unit in the element type
    /// (`Timedelta<units::Seconds>`), this names it here, and checks it.
    ///
    /// A `TypeError` names what was expected and what was found for anything
    /// else: another unit (`timedelta64[m]` where `"s"` was asked for: no
    /// count is converted), the other time dtype, another dtype, or an
    /// object that is not a NumPy array.
    ///
    /// ```
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::{NumpyTime, PyTensor};
    ///
    /// /// Python: `add_minutes_to_seconds(seconds, minutes)`, arrays of
    /// /// `timedelta64[s]` and `timedelta64[m]` (rust-numpy's example).
    /// #[pyfunction]
    /// fn add_minutes_to_seconds(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    ///     let mut seconds = PyTensor::from_numpy_time(x, NumpyTime::Timedelta, "s")?;
    ///     let minutes = PyTensor::from_numpy_time(y, NumpyTime::Timedelta, "m")?;
    ///     for (s, m) in seconds.as_slice_mut::<i64>()?.iter_mut().zip(minutes.as_slice::<i64>()?) {
    ///         *s += 60 * m;
    ///     }
    ///     Ok(())
    /// }
    /// # Python::attach(|py| -> PyResult<()> {
    /// #     let np = py.import("numpy")?;
    /// #     let x = np.call_method1("array", (vec![10, 20], "timedelta64[s]"))?;
    /// #     let y = np.call_method1("array", (vec![1, 2], "timedelta64[m]"))?;
    /// #     let f = wrap_pyfunction!(add_minutes_to_seconds, py)?;
    /// #     f.call1((&x, &y))?;
    /// #     assert_eq!(x.call_method1("astype", ("int64",))?.extract::<Vec<i64>>()?, [70, 140]);
    /// #     let err = f.call1((&y, &x)).unwrap_err();
    /// #     assert!(err.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
    /// #     assert_eq!(err.value(py).to_string(),
    /// #         "expected a NumPy timedelta64[s] array, got one of dtype timedelta64[m]");
    /// #     Ok(())
    /// # }).unwrap();
    /// ```
    pub fn from_numpy_time(obj: &Bound<'_, PyAny>, time: NumpyTime, unit: &str) -> PyResult<Self> {
        let py = obj.py();
        let expected = format!("a NumPy {}[{unit}] array", time.name());
        if !super::is_ndarray(obj) {
            return Err(PythonKind::Type.new_err(format!(
                "expected {expected}, got {}",
                crate::python::type_name(obj)
            )));
        }
        let dtype = obj.getattr(pyo3::intern!(py, "dtype"))?;
        let kind: String = dtype.getattr(pyo3::intern!(py, "kind"))?.extract()?;
        let (found_unit, count): (String, i64) = if kind == time.kind() {
            let data = py
                .import(pyo3::intern!(py, "numpy"))?
                .call_method1(pyo3::intern!(py, "datetime_data"), (&dtype,))?;
            data.cast_into::<PyTuple>()?.extract()?
        } else {
            (String::new(), 0)
        };
        if found_unit != unit || count != 1 {
            return Err(PythonKind::Type.new_err(format!(
                "expected {expected}, got one of dtype {}",
                dtype.str()?
            )));
        }
        let counts = obj.call_method1(pyo3::intern!(py, "view"), ("int64",))?;
        Self::from_pyany(&counts)
    }
}
