//! Builds without feature `pickle`: pickling and copying a `DLPackTensor`
//! fail with an error that names the feature.
//!
//! `DLPackTensor.__reduce__` raises it. `pickle` (every protocol) and
//! `copy.copy`/`copy.deepcopy` (which reduce an object without `__copy__`
//! or `__deepcopy__`) reach it through `object.__reduce_ex__`, which calls
//! an overriding `__reduce__`; a subclass's own `__reduce__` or
//! `__reduce_ex__` is found first and pickles it. Without the method,
//! protocols 2 and later and the copies fail with "cannot pickle
//! 'DLPackTensor' object" (no word of the remedy), and protocols 0 and 1
//! with pickle's failed import of `pyo3_dlpack`, or, for a class in its
//! module (`add_to_module`), make a pickle whose loading fails
//! ("object.__new__(DLPackTensor) is not safe").

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::export::DLPackTensor;

/// `DLPackTensor.__reduce__` of this build: [`without_pickle`].
pub(crate) fn reduce<'py>(
    _tensor: &Bound<'py, DLPackTensor>,
    _protocol: i32,
) -> PyResult<Bound<'py, PyTuple>> {
    Err(without_pickle())
}

/// What pickling or copying a tensor raises in this build.
#[cold]
fn without_pickle() -> PyErr {
    PyTypeError::new_err(
        "cannot pickle or copy a DLPackTensor: pickle, copy.copy and copy.deepcopy need \
         pyo3-dlpack's feature `pickle` (on by default), which this extension was built \
         without; build it with that feature, or copy through DLPack: \
         np.from_dlpack(t, copy=True)",
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pyo3::exceptions::PyTypeError;
    use pyo3::prelude::*;
    use pyo3::types::{PyCapsule, PyDict, PyString, PyTuple};

    use crate::{DLPackTensor, PyTensor};

    /// `code` evaluated with `t` bound to `tensor`, `pickle` and `copy` imported.
    fn eval<'py>(tensor: &Bound<'py, PyAny>, code: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = tensor.py();
        let globals = PyDict::new(py);
        globals.set_item("t", tensor)?;
        globals.set_item("pickle", py.import("pickle")?)?;
        globals.set_item("copy", py.import("copy")?)?;
        py.eval(&std::ffi::CString::new(code)?, Some(&globals), None)
    }

    #[test]
    fn pickling_and_copies_raise_a_type_error_naming_the_feature() {
        Python::attach(|py| {
            let t = Bound::new(py, DLPackTensor::new(vec![1.0f32, 2.0, 3.0]).unwrap()).unwrap();
            let calls = [
                "pickle.dumps(t, 0)",
                "pickle.dumps(t, 1)",
                "pickle.dumps(t, 2)",
                "pickle.dumps(t, 4)",
                "pickle.dumps(t, 5)",
                "pickle.dumps(t, 5, buffer_callback=list.append)",
                "copy.copy(t)",
                "copy.deepcopy(t)",
                "copy.deepcopy([t])",
            ];
            for call in calls {
                let err = eval(t.as_any(), call).expect_err(call);
                assert!(err.is_instance_of::<PyTypeError>(py), "{call}: {err}");
                assert_eq!(
                    err.value(py).to_string(),
                    super::without_pickle().value(py).to_string(),
                    "{call}"
                );
            }
            let message = super::without_pickle().value(py).to_string();
            assert!(
                message.contains("pyo3-dlpack's feature `pickle`"),
                "{message}"
            );
        });
    }

    #[test]
    fn a_dlpack_copy_still_copies() {
        Python::attach(|py| {
            let t = Bound::new(py, DLPackTensor::new(vec![1.0f32, 2.0, 3.0]).unwrap()).unwrap();
            let capsule = eval(t.as_any(), "t.__dlpack__(copy=True, max_version=(1, 0))").unwrap();
            let copy = PyTensor::from_capsule(capsule.cast::<PyCapsule>().unwrap()).unwrap();
            assert!(copy.is_copied());
            assert_ne!(copy.data_ptr(), t.get().info().data_ptr().cast());
            assert_eq!(copy.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
        });
    }

    /// A subclass that pickles as a name (its own `__reduce__`).
    #[pyclass(extends = DLPackTensor)]
    struct Named;

    #[pymethods]
    impl Named {
        fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
            (py.get_type::<PyString>(), ("named",)).into_pyobject(py)
        }
    }

    #[test]
    fn a_subclass_pickles_and_copies_through_its_own_reduce() {
        Python::attach(|py| {
            let init = DLPackTensor::with_subclass(Arc::new(vec![1u8, 2]), Named).unwrap();
            let named = Bound::new(py, init).unwrap().into_any();
            for call in [
                "pickle.loads(pickle.dumps(t, 0))",
                "pickle.loads(pickle.dumps(t, 5))",
                "copy.copy(t)",
                "copy.deepcopy(t)",
            ] {
                let found = eval(&named, call).expect(call);
                assert_eq!(found.extract::<String>().unwrap(), "named", "{call}");
            }
        });
    }
}
