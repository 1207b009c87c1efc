//! Head-to-head benchmark module for dlpark 0.10 (crates.io).
//!
//! dlpark has no ready-made Python class: a producer implements
//! `python::DlpackExporter` on its own `#[pyclass]` and forwards `__dlpack__`
//! to `python::export_dlpack`, as dlpark's own demos do. Two such classes:
//! `Exporter` (the Python protocol only) and `ExporterX` (the same, plus the
//! DLPack 1.3 C exchange table installed with `python::install_exchange_api`,
//! including the borrowed-view callback, as dlpark's CUDA demo does).

use std::ffi::c_void;
use std::sync::Arc;

use dlpark::{
    DlpackFlags, Managed, ManagedTensorBase,
    ffi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor},
    metadata::Fixed,
    python::{
        DlpackExchangeProducer, DlpackExporter, ExportRequest, ImportedDlpack, export_dlpack,
        from_dlpack, install_exchange_api,
    },
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A float32 buffer allocated once and shared (by `Arc`) with every export.
struct Buffer {
    data: Arc<Vec<f32>>,
    shape: [i64; 1],
    strides: [i64; 1],
}

impl Buffer {
    fn new(n: usize) -> Self {
        Self { data: Arc::new(vec![0f32; n]), shape: [n as i64], strides: [1] }
    }

    /// A fresh managed tensor (one allocation holding header, shape and
    /// strides) owning a clone of the `Arc`.
    fn export<M: ManagedTensorBase>(&self) -> PyResult<Managed<M>> {
        let prepared = Fixed::new(self.shape, self.strides).prepare_as::<M>().map_err(runtime_error)?;
        let mut initialized = prepared.initialize(Arc::clone(&self.data));
        initialized
            .set_data(self.data.as_ptr() as *mut c_void)
            .set_dtype(DLDataType::F32)
            .set_device(DLDevice::CPU);
        // SAFETY: the header owns an Arc of the buffer it points to, and copied
        // shape/strides that describe exactly that buffer.
        Ok(unsafe { initialized.finish() })
    }

    fn view(&self) -> DLTensor {
        DLTensor {
            data: self.data.as_ptr() as *mut c_void,
            device: DLDevice::CPU,
            ndim: 1,
            dtype: DLDataType::F32,
            shape: self.shape.as_ptr().cast_mut(),
            strides: self.strides.as_ptr().cast_mut(),
            byte_offset: 0,
        }
    }
}

macro_rules! exporter_class {
    ($name:ident) => {
        #[pyclass(frozen)]
        struct $name {
            buf: Buffer,
        }

        #[pymethods]
        impl $name {
            fn __dlpack_device__(&self) -> (u32, i32) {
                DLDevice::CPU.into()
            }

            #[pyo3(signature = (stream=None, *, max_version=None, dl_device=None, copy=None))]
            fn __dlpack__(
                &self,
                py: Python<'_>,
                stream: Option<&Bound<'_, PyAny>>,
                max_version: Option<(u32, u32)>,
                dl_device: Option<(u32, i32)>,
                copy: Option<bool>,
            ) -> PyResult<Py<PyAny>> {
                let request = ExportRequest::parse(stream, max_version, dl_device, copy)?;
                export_dlpack(self, py, request)
            }
        }

        impl DlpackExporter for $name {
            fn device(&self) -> DLDevice {
                DLDevice::CPU
            }
            fn flags(&self) -> DlpackFlags {
                DlpackFlags::empty()
            }
            fn prepare_export(&self, _py: Python<'_>, _r: &ExportRequest<'_>) -> PyResult<()> {
                Ok(())
            }
            fn export_legacy(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensor>> {
                self.buf.export()
            }
            fn export_versioned(
                &self,
                _py: Python<'_>,
            ) -> PyResult<Managed<DLManagedTensorVersioned>> {
                self.buf.export()
            }
        }
    };
}

exporter_class!(Exporter);
exporter_class!(ExporterX);

// SAFETY: the view points into the frozen class's own buffer and metadata
// arrays, which live as long as the object; CPU memory has no work stream.
unsafe impl DlpackExchangeProducer for ExporterX {
    const HAS_DLTENSOR_VIEW: bool = true;

    fn managed_tensor_no_sync(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensorVersioned>> {
        self.buf.export()
    }

    fn tensor_view_no_sync(&self, _py: Python<'_>) -> PyResult<DLTensor> {
        Ok(self.buf.view())
    }

    fn current_work_stream(_py: Python<'_>, _device: DLDevice) -> PyResult<*mut c_void> {
        Ok(std::ptr::null_mut())
    }
}

/// An `Exporter` (Python protocol only) over `n` zeroed float32 elements.
#[pyfunction]
fn export_object(n: usize) -> Exporter {
    Exporter { buf: Buffer::new(n) }
}

/// An `ExporterX` (Python protocol + C exchange API) over `n` float32 elements.
#[pyfunction]
fn export_object_xapi(n: usize) -> ExporterX {
    ExporterX { buf: Buffer::new(n) }
}

/// What `export_capsule*` takes: the exporter object.
#[pyfunction]
fn capsule_source(n: usize) -> Exporter {
    export_object(n)
}

/// A bare legacy (`dltensor`) capsule sharing the source's buffer.
#[pyfunction]
fn export_capsule(py: Python<'_>, src: &Bound<'_, Exporter>) -> PyResult<Py<PyAny>> {
    let managed: Managed<DLManagedTensor> = src.get().buf.export()?;
    Ok(managed.into_pyobject(py)?.unbind())
}

/// A bare versioned (`dltensor_versioned`, writable) capsule.
#[pyfunction]
fn export_capsule_versioned(py: Python<'_>, src: &Bound<'_, Exporter>) -> PyResult<Py<PyAny>> {
    let managed: Managed<DLManagedTensorVersioned> = src.get().buf.export()?;
    Ok(managed.into_pyobject(py)?.unbind())
}

/// Imports any DLPack producer (or capsule) with `python::from_dlpack`
/// (C exchange API when offered, else the Python protocol); returns its ndim.
#[pyfunction]
fn import_tensor(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    let imported = from_dlpack(obj.as_borrowed(), None, None)?;
    let ndim = imported.validate().map_err(|e| PyValueError::new_err(e.to_string()))?.ndim();
    Ok(ndim)
}

/// Imports every element of a list as in `import_tensor`, keeping them all
/// (`Vec<ImportedDlpack>`) until the call returns; returns how many. dlpark's
/// tensor types implement no `FromPyObject`, so a `Vec<ImportedDlpack>` cannot
/// be the argument itself: the list is extracted as `Vec<Bound<PyAny>>` and
/// each element goes through `python::from_dlpack` + `validate()`.
#[pyfunction]
fn import_list(objs: Vec<Bound<'_, PyAny>>) -> PyResult<usize> {
    let mut imported: Vec<ImportedDlpack> = Vec::with_capacity(objs.len());
    for obj in &objs {
        let one = from_dlpack(obj.as_borrowed(), None, None)?;
        one.validate().map_err(|e| PyValueError::new_err(e.to_string()))?;
        imported.push(one);
    }
    Ok(imported.len())
}

/// The floor of a `#[pyfunction]` call taking one object.
#[pyfunction]
fn noop(_obj: &Bound<'_, PyAny>) -> usize {
    0
}

#[pymodule]
fn bench_dlpark(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CRATE", "dlpark 0.10 (crates.io)")?;
    m.add_class::<Exporter>()?;
    m.add_class::<ExporterX>()?;
    install_exchange_api::<ExporterX>(m.py())?;
    m.add_function(wrap_pyfunction!(export_object, m)?)?;
    m.add_function(wrap_pyfunction!(export_object_xapi, m)?)?;
    m.add_function(wrap_pyfunction!(capsule_source, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule_versioned, m)?)?;
    m.add_function(wrap_pyfunction!(import_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(import_list, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)
}
