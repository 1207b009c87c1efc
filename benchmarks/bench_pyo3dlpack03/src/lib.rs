//! Head-to-head benchmark module for the published pyo3-dlpack 0.3 (crates.io,
//! renamed `old` here).
//!
//! pyo3-dlpack 0.3 exports only bare capsules (`IntoDLPack::into_dlpack`, a
//! writable legacy capsule; `into_dlpack_readonly`, a read-only versioned one)
//! and has no `__dlpack__` exporter class, so this module has no
//! `export_object`: NumPy and JAX cannot consume its exports at all, torch only
//! through a fresh capsule per call.

use std::ffi::c_void;
use std::sync::Arc;

use old::{IntoDLPack, PyTensor, TensorInfo, cpu_device, dtype_f32};
use pyo3::prelude::*;

/// A float32 buffer allocated once; every capsule owns a clone of its `Arc`.
#[pyclass(frozen)]
struct Buffer {
    data: Arc<Vec<f32>>,
}

struct Shared(Arc<Vec<f32>>);

impl IntoDLPack for Shared {
    fn tensor_info(&self) -> TensorInfo {
        TensorInfo::contiguous(
            self.0.as_ptr() as *mut c_void,
            cpu_device(),
            dtype_f32(),
            vec![self.0.len() as i64],
        )
    }
}

/// What `export_capsule*` takes: a plain holder of `n` zeroed float32 elements
/// (no `__dlpack__`; the crate has no exporter class).
#[pyfunction]
fn capsule_source(n: usize) -> Buffer {
    Buffer { data: Arc::new(vec![0f32; n]) }
}

/// A bare legacy (`dltensor`, writable) capsule sharing the source's buffer.
#[pyfunction]
fn export_capsule(py: Python<'_>, src: &Bound<'_, Buffer>) -> PyResult<Py<PyAny>> {
    Shared(Arc::clone(&src.get().data)).into_dlpack(py)
}

/// A bare versioned capsule; the crate emits versioned capsules only read-only.
#[pyfunction]
fn export_capsule_versioned(py: Python<'_>, src: &Bound<'_, Buffer>) -> PyResult<Py<PyAny>> {
    Shared(Arc::clone(&src.get().data)).into_dlpack_readonly(py)
}

/// Imports any DLPack producer through `PyTensor::from_pyany`; returns its ndim.
#[pyfunction]
fn import_tensor(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(PyTensor::from_pyany(py, obj)?.ndim())
}

/// The floor of a `#[pyfunction]` call taking one object.
#[pyfunction]
fn noop(_obj: &Bound<'_, PyAny>) -> usize {
    0
}

#[pymodule]
fn bench_pyo3dlpack03(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CRATE", "pyo3-dlpack 0.3 (crates.io)")?;
    m.add_class::<Buffer>()?;
    m.add_function(wrap_pyfunction!(capsule_source, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule_versioned, m)?)?;
    m.add_function(wrap_pyfunction!(import_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)
}
