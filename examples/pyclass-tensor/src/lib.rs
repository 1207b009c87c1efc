//! A `#[pyclass]` with its own Python methods that also speaks DLPack: it
//! extends `DLPackTensor`, so `np.from_dlpack(signal)` and
//! `torch.from_dlpack(signal)` work, and shares its samples with it.
//!
//! Shared with Rust methods, the samples are exported read-only (a consumer
//! writing while `rms` reads would be a data race). If your methods never
//! run while consumers write, `DLPackTensor::with_subclass_writable`
//! (`unsafe`, with that promise) exports them writable.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, DLPackTensor, IntoDLPack};

/// The tensor: samples in a 64-byte-aligned buffer.
#[derive(IntoDLPack)]
struct Samples {
    #[dlpack(data)]
    values: AlignedBuffer<f32>,
}

/// A sampled signal, as a Python class.
#[pyclass(extends = DLPackTensor)]
struct Signal {
    samples: Arc<Samples>,
    #[pyo3(get)]
    sample_rate: f64,
}

#[pymethods]
impl Signal {
    #[new]
    fn new(values: Vec<f32>, sample_rate: f64) -> PyResult<PyClassInitializer<Self>> {
        let samples = Arc::new(Samples {
            values: AlignedBuffer::from_slice(&values),
        });
        DLPackTensor::with_subclass(
            samples.clone(),
            Self {
                samples,
                sample_rate,
            },
        )
    }

    /// Length in seconds.
    fn duration(&self) -> f64 {
        self.samples.values.len() as f64 / self.sample_rate
    }

    /// Root mean square, computed in Rust over the shared samples.
    fn rms(&self) -> f32 {
        let values = &self.samples.values;
        (values.iter().map(|v| v * v).sum::<f32>() / values.len().max(1) as f32).sqrt()
    }
}

#[pymodule]
fn pyclass_tensor(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Signal>()
}
