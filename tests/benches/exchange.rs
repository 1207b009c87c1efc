//! Criterion benchmarks of the Rust side of an exchange (`make bench`).
//!
//! - `export/*`: a capsule created from an existing buffer and dropped
//!   (unconsumed), for 1K, 1M and 100M float32 elements; the buffer is
//!   allocated outside the timed region. `floor` is the bare minimum any
//!   crate pays: one 96-byte allocation, `PyCapsule_New`, and the decref that
//!   frees both.
//! - `import/*`: `PyTensor` from a NumPy array (object path), from a raw
//!   capsule NumPy made, and from a torch tensor (owned and borrowed, through
//!   the DLPack C exchange API), each dropped.
//! - `copy/*`: `Vec::clone` of 1K and 1M elements, the cost zero-copy avoids.
//!
//! Run with the venv's site-packages on `PYTHONPATH` (as `make bench` does).

use std::ffi::c_void;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DLPackTensor, DataType, Device, IntoDLPack,
    PyTensor, RawBuffer, TensorInfo,
};

const SIZES: [(&str, usize); 3] = [("1K", 1_000), ("1M", 1_000_000), ("100M", 100_000_000)];

/// A view of a shared buffer: exporting it moves no memory and dropping it frees none.
struct View {
    raw: RawBuffer,
    _buffer: Arc<AlignedBuffer<f32>>,
}

impl View {
    fn of(buffer: &Arc<AlignedBuffer<f32>>) -> Self {
        // SAFETY: the buffer is kept alive by the Arc stored next to the RawBuffer.
        let raw = unsafe {
            RawBuffer::new(
                buffer.as_ptr().cast_mut().cast(),
                buffer.len() * 4,
                Device::cpu(),
            )
        }
        .with_dtype(DataType::F32);
        Self {
            raw,
            _buffer: buffer.clone(),
        }
    }
}

impl IntoDLPack for View {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.raw).build()
    }
}

unsafe extern "C" fn free_floor_block(capsule: *mut ffi::PyObject) {
    // SAFETY: called by CPython for the floor capsule, whose pointer is the box below.
    let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule, c"dltensor".as_ptr()) };
    // SAFETY: the pointer came from `Box::into_raw` of a `[u8; 96]`, freed once here.
    drop(unsafe { Box::from_raw(pointer.cast::<[u8; 96]>()) });
}

fn export(c: &mut Criterion) {
    let mut group = c.benchmark_group("export");
    Python::attach(|py| {
        group.bench_function("floor", |b| {
            b.iter(|| {
                let block = Box::into_raw(Box::new([0u8; 96])).cast::<c_void>();
                // SAFETY: attached; static name; the destructor frees `block`.
                let capsule = unsafe {
                    ffi::PyCapsule_New(block, c"dltensor".as_ptr(), Some(free_floor_block))
                };
                // SAFETY: a new reference, dropped once.
                unsafe { ffi::Py_DECREF(black_box(capsule)) };
            })
        });
        for (name, n) in SIZES {
            let buffer = Arc::new(AlignedBuffer::<f32>::zeroed(n));
            let tensor = DLPackTensor::new(View::of(&buffer)).unwrap();
            group.bench_function(format!("shared_versioned/{name}"), |b| {
                b.iter(|| {
                    drop(black_box(
                        tensor.to_capsule(py, CapsuleFormat::Versioned).unwrap(),
                    ))
                })
            });
            group.bench_function(format!("owned_legacy/{name}"), |b| {
                b.iter_batched(
                    || View::of(&buffer),
                    |view| {
                        drop(black_box(
                            view.into_capsule(py, CapsuleFormat::Legacy).unwrap(),
                        ))
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    });
    group.finish();
}

fn import(c: &mut Criterion) {
    let mut group = c.benchmark_group("import");
    Python::attach(|py| {
        let numpy = py.import("numpy").expect("numpy importable (PYTHONPATH)");
        let array = numpy.call_method1("zeros", (1000,)).unwrap();
        group.bench_function("numpy_object", |b| {
            b.iter(|| drop(black_box(PyTensor::from_pyany(&array).unwrap())))
        });
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("max_version", (1, 0)).unwrap();
        group.bench_function("numpy_capsule", |b| {
            b.iter(|| {
                let capsule = array.call_method("__dlpack__", (), Some(&kwargs)).unwrap();
                let capsule = capsule.cast::<pyo3::types::PyCapsule>().unwrap();
                drop(black_box(PyTensor::from_capsule(capsule).unwrap()))
            })
        });
        if let Ok(torch) = py.import("torch") {
            let tensor = torch.call_method1("zeros", (1000,)).unwrap();
            group.bench_function("torch_owned", |b| {
                b.iter(|| drop(black_box(PyTensor::from_pyany(&tensor).unwrap())))
            });
            group.bench_function("torch_borrowed", |b| {
                b.iter(|| black_box(PyTensor::with_borrowed(&tensor, |t| t.ndim()).unwrap()))
            });
        }
    });
    group.finish();
}

fn copy(c: &mut Criterion) {
    let mut group = c.benchmark_group("copy");
    for (name, n) in &SIZES[..2] {
        let values = vec![0f32; *n];
        group.bench_function(format!("vec_clone/{name}"), |b| {
            b.iter(|| black_box(values.clone()))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = export, import, copy
}
criterion_main!(benches);
