//! A subclass of `DLPackTensor` with state of its own and a reduction of
//! its own, for `tests/python/test_travel_surprises.py`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3_dlpack::{AlignedBuffer, DLPackTensor, IntoDLPack};

#[derive(IntoDLPack)]
pub(crate) struct Ramp {
    #[dlpack(data)]
    values: AlignedBuffer<f32>,
}

/// `0.0, 1.0, …` with a tag; pickles and copies through its `__reduce__`.
#[pyclass(extends = DLPackTensor, frozen, subclass, module = "dlpack_testext")]
pub(crate) struct Tagged {
    n: usize,
    #[pyo3(get)]
    tag: String,
}

#[pymethods]
impl Tagged {
    #[new]
    fn new(n: usize, tag: String) -> PyResult<PyClassInitializer<Self>> {
        let ramp = Arc::new(Ramp {
            values: AlignedBuffer::from_fn(n, |i| i as f32),
        });
        DLPackTensor::with_subclass(ramp, Self { n, tag })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, (usize, String)) {
        let this = slf.get();
        (slf.get_type(), (this.n, this.tag.clone()))
    }
}
