//! Head-to-head benchmark module for this repository's `pyo3-dlpack`.
//!
//! Exposes the same functions as `bench_dlpark` and `bench_pyo3dlpack03`, so one
//! Python process can time all three (see `../head_to_head.py`).

use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_dlpack::{CapsuleFormat, DLPackTensor, FromDLPack, Native, PyTensor};

fn to_py_err(e: pyo3_dlpack::DLPackError) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(e.to_string())
}

/// An object with `__dlpack__`/`__dlpack_device__` over `n` zeroed float32
/// elements (allocated here, outside any timed region).
#[pyfunction]
fn export_object(n: usize) -> PyResult<DLPackTensor> {
    DLPackTensor::new(vec![0f32; n]).map_err(to_py_err)
}

/// What `export_capsule*` takes: here the same exporter object.
#[pyfunction]
fn capsule_source(n: usize) -> PyResult<DLPackTensor> {
    export_object(n)
}

/// A bare legacy (`dltensor`) capsule sharing the source's buffer.
#[pyfunction]
fn export_capsule<'py>(
    py: Python<'py>,
    src: &Bound<'py, DLPackTensor>,
) -> PyResult<Bound<'py, PyCapsule>> {
    src.get().to_capsule(py, CapsuleFormat::Legacy)
}

/// A bare versioned (`dltensor_versioned`, DLPack 1.3, writable) capsule.
#[pyfunction]
fn export_capsule_versioned<'py>(
    py: Python<'py>,
    src: &Bound<'py, DLPackTensor>,
) -> PyResult<Bound<'py, PyCapsule>> {
    src.get().to_capsule(py, CapsuleFormat::Versioned)
}

/// Imports any DLPack producer (or capsule) through `PyTensor`; returns its ndim.
#[pyfunction]
fn import_tensor(t: PyTensor) -> usize {
    t.ndim()
}

/// A float32, C-contiguous CPU tensor of any rank: the checks of nanobind's
/// `nb::ndarray<float, nb::c_contig, nb::device::cpu>`.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, device = "cpu", contiguous)]
struct F32Host {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

/// Imports through the derived, typed `F32Host`; returns its ndim.
#[pyfunction]
fn import_typed(t: F32Host) -> usize {
    t.tensor.ndim()
}

/// A fresh `DLPackTensor` over `n` zeroed float32 elements, made in the call
/// (the "fresh buffer → framework" rows: `np.from_dlpack(fresh(n))`).
#[pyfunction]
fn fresh(n: usize) -> PyResult<DLPackTensor> {
    export_object(n)
}

/// `n` zeroed float32 elements made in the call, returned as a `numpy.ndarray`.
#[pyfunction]
fn native_numpy(n: usize) -> Native<Vec<f32>> {
    Native::numpy(vec![0f32; n])
}

/// `n` zeroed float32 elements made in the call, returned as a `torch.Tensor`.
#[pyfunction]
fn native_torch(n: usize) -> Native<Vec<f32>> {
    Native::torch(vec![0f32; n])
}

/// The floor of a `#[pyfunction]` call taking one object.
#[pyfunction]
fn noop(_obj: &Bound<'_, PyAny>) -> usize {
    0
}

#[pymodule]
fn bench_ours(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CRATE", "pyo3-dlpack (this repository, path dependency)")?;
    m.add("SOURCE", env!("BENCH_OURS_SOURCE"))?;
    m.add_function(wrap_pyfunction!(export_object, m)?)?;
    m.add_function(wrap_pyfunction!(capsule_source, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule_versioned, m)?)?;
    m.add_function(wrap_pyfunction!(import_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(import_typed, m)?)?;
    m.add_function(wrap_pyfunction!(fresh, m)?)?;
    m.add_function(wrap_pyfunction!(native_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(native_torch, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)
}
