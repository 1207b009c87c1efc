//! The import path driven from Rust: NumPy arrays and hand-built capsules in
//! an embedded interpreter (run with the venv's site-packages on PYTHONPATH,
//! as `make test` does).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DataType, Device, FromDLPack, ImportOptions,
    IntoDLPack, PyTensor, TensorInfo, Writability,
};

fn numpy_array<'py>(py: Python<'py>, code: &str) -> Bound<'py, PyAny> {
    let locals = PyDict::new(py);
    locals
        .set_item(
            "np",
            py.import("numpy")
                .expect("numpy importable (make test sets PYTHONPATH)"),
        )
        .unwrap();
    py.eval(&std::ffi::CString::new(code).unwrap(), None, Some(&locals))
        .unwrap()
}

#[test]
fn numpy_arrays_import_with_their_layout_and_memory() {
    Python::attach(|py| {
        let a = numpy_array(py, "np.arange(12, dtype='f4').reshape(3, 4)");
        let address: usize = a
            .getattr("ctypes")
            .unwrap()
            .getattr("data")
            .unwrap()
            .extract()
            .unwrap();
        let tensor = PyTensor::from_pyany(&a).unwrap();
        assert_eq!(tensor.shape(), &[3, 4]);
        assert_eq!(tensor.strides(), &[4, 1]);
        assert_eq!(tensor.dtype(), DataType::F32);
        assert_eq!(tensor.device(), Device::cpu());
        assert_eq!(tensor.data_ptr() as usize, address);
        assert_eq!(tensor.as_slice::<f32>().unwrap()[11], 11.0);

        let transposed = PyTensor::from_pyany(&a.getattr("T").unwrap()).unwrap();
        assert!(!transposed.is_contiguous());
        assert_eq!(
            transposed.to_vec::<f32>().unwrap()[..4],
            [0.0, 4.0, 8.0, 1.0]
        );
        assert_eq!(
            transposed.as_slice::<f32>().unwrap_err().to_string(),
            "expected a contiguous (row-major) tensor, got shape [4, 3] with strides [1, 4]"
        );
        assert_eq!(
            tensor.as_slice::<i32>().unwrap_err(),
            DLPackError::Dtype {
                expected: DataType::I32,
                found: DataType::F32
            }
        );
    });
}

#[test]
fn writes_through_a_mutable_slice_reach_numpy() {
    Python::attach(|py| {
        let a = numpy_array(py, "np.zeros(4)");
        let mut tensor = PyTensor::from_pyany(&a).unwrap();
        tensor
            .as_slice_mut::<f64>()
            .unwrap()
            .copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
        let sum: f64 = a.call_method0("sum").unwrap().extract().unwrap();
        assert_eq!(sum, 10.0);

        let frozen = numpy_array(py, "np.zeros(2)");
        frozen
            .getattr("flags")
            .unwrap()
            .setattr("writeable", false)
            .unwrap();
        let mut read_only = PyTensor::from_pyany(&frozen).unwrap();
        assert!(read_only.is_read_only());
        assert_eq!(
            read_only.as_slice_mut::<f64>().unwrap_err(),
            DLPackError::ReadOnly
        );
    });
}

/// The aliasing registry orders a mutable view against imports made after
/// it: with threads running in parallel (free-threaded CPython, or a thread
/// detached from the interpreter), another thread may import the same array
/// while the `&mut` is alive; its shared views are refused until the writer
/// drops (they were not: the check ran only when the mutable view was made).
#[test]
fn a_mutable_view_excludes_reads_through_later_imports_on_other_threads() {
    use std::sync::mpsc::channel;

    let (array, writer) = Python::attach(|py| {
        let a = numpy_array(py, "np.zeros(4)");
        let writer = PyTensor::from_pyany(&a).unwrap();
        (a.unbind(), writer)
    });
    let (claimed_tx, claimed) = channel();
    let (checked_tx, checked) = channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut writer = writer;
        let slice = writer.as_slice_mut::<f64>().unwrap();
        claimed_tx.send(()).unwrap();
        checked.recv().unwrap();
        slice.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
        // `writer` drops here: its deleter (NumPy's) attaches by itself.
    });
    claimed.recv().unwrap();
    Python::attach(|py| {
        let mut reader = PyTensor::from_pyany(array.bind(py)).unwrap();
        let shared = DLPackError::Layout(pyo3_dlpack::error::LayoutError::Shared);
        assert_eq!(reader.as_slice::<f64>().unwrap_err(), shared);
        assert_eq!(reader.to_vec::<f64>().unwrap_err(), shared);
        assert_eq!(reader.as_array::<f64>().unwrap_err(), shared);
        assert_eq!(reader.as_slice_mut::<f64>().unwrap_err(), shared);
        checked_tx.send(()).unwrap();
        py.detach(|| thread.join().unwrap());
        // The writer is gone: reads are allowed again, and see its writes.
        assert_eq!(reader.as_slice::<f64>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    });
}

/// Imports join the aliasing registry at their first view: one that was only
/// described does not stop a mutable view through another, and once that
/// view is out, it cannot be read (a `&` next to the `&mut`).
#[test]
fn imports_without_views_do_not_block_and_are_checked_at_their_first_view() {
    Python::attach(|py| {
        let a = numpy_array(py, "np.zeros(3)");
        let described = PyTensor::from_pyany(&a).unwrap();
        assert_eq!(described.numel(), 3);
        let mut writer = PyTensor::from_pyany(&a).unwrap();
        writer.as_slice_mut::<f64>().unwrap().fill(5.0);
        let shared = DLPackError::Layout(pyo3_dlpack::error::LayoutError::Shared);
        assert_eq!(described.as_slice::<f64>().unwrap_err(), shared);
        assert_eq!(described.to_vec::<f64>().unwrap_err(), shared);
        drop(writer);
        assert_eq!(described.as_slice::<f64>().unwrap(), &[5.0, 5.0, 5.0]);
        // A reader now: a new import's mutable view is refused.
        let mut late = PyTensor::from_pyany(&a).unwrap();
        assert_eq!(late.as_slice_mut::<f64>().unwrap_err(), shared);
    });
}

#[test]
fn ndarray_views_follow_negative_strides() {
    Python::attach(|py| {
        let a = numpy_array(py, "np.arange(6, dtype='i8').reshape(2, 3)[::-1, ::2]");
        let tensor = PyTensor::from_pyany(&a).unwrap();
        assert_eq!(tensor.strides(), &[-3, 2]);
        let view = tensor.as_array::<i64>().unwrap();
        assert_eq!(view.shape(), &[2, 2]);
        assert_eq!(view.iter().copied().collect::<Vec<_>>(), vec![3, 5, 0, 2]);
    });
}

#[test]
fn options_reach_the_producer() {
    Python::attach(|py| {
        let a = numpy_array(py, "np.arange(3.0)");
        let copied = PyTensor::from_pyany_with(&a, &ImportOptions::new().copy(true)).unwrap();
        assert!(copied.is_copied());
        assert_eq!(copied.to_vec::<f64>().unwrap(), vec![0.0, 1.0, 2.0]);
        let legacy =
            PyTensor::from_pyany_with(&a, &ImportOptions::new().with_max_version(0, 8)).unwrap();
        assert_eq!(legacy.version(), None);
        // NumPy exports legacy capsules of writable arrays only, and says so itself.
        assert_eq!(legacy.writability(), Writability::Writable);
        assert_eq!(copied.writability(), Writability::Writable);
        drop(legacy);
        // A bare legacy capsule has no producer to ask.
        let capsule = a.call_method0("__dlpack__").unwrap();
        let bare = PyTensor::from_pyany(&capsule).unwrap();
        assert!(
            bare.is_read_only(),
            "legacy capsules cannot say writes are allowed"
        );
        assert_eq!(bare.writability(), Writability::Unknown);
        assert_eq!(
            bare.ensure_writable().unwrap_err().to_string(),
            "expected a writable tensor, got one from a legacy DLPack capsule, which cannot \
             say whether it may be written (a producer of DLPack 1.0 or later can)"
        );
    });
}

struct Counted {
    data: AlignedBuffer<u16>,
    drops: Arc<AtomicUsize>,
}

impl IntoDLPack for Counted {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::new(&self.data, [2usize, 2])
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn our_own_capsules_round_trip_and_drop_once_on_any_thread() {
    let drops = Arc::new(AtomicUsize::new(0));
    let tensor = Python::attach(|py| {
        let value = Counted {
            data: AlignedBuffer::from_slice(&[1, 2, 3, 4]),
            drops: drops.clone(),
        };
        let capsule = value.into_capsule(py, CapsuleFormat::Versioned).unwrap();
        let tensor = PyTensor::from_capsule(&capsule).unwrap();
        assert_eq!(
            PyTensor::from_capsule(&capsule).unwrap_err(),
            DLPackError::AlreadyConsumed
        );
        assert_eq!(tensor.version().map(|v| (v.major, v.minor)), Some((1, 3)));
        assert_eq!(tensor.to_vec::<u16>().unwrap(), vec![1, 2, 3, 4]);
        tensor
    });
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// A user type built from a tensor, by hand (the derive does the same).
struct Vector {
    values: PyTensor,
}

impl FromDLPack for Vector {
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
        tensor.ensure_dtype(DataType::F64)?;
        tensor.ensure_ndim(1)?;
        tensor.ensure_contiguous()?;
        Ok(Self { values: tensor })
    }
}

#[test]
fn from_dlpack_checks_constraints_with_clear_errors() {
    Python::attach(|py| {
        let good = PyTensor::from_pyany(&numpy_array(py, "np.ones(3)")).unwrap();
        let v = Vector::from_dlpack(good).unwrap();
        assert_eq!(v.values.as_slice::<f64>().unwrap(), &[1.0; 3]);
        let wrong_rank = PyTensor::from_pyany(&numpy_array(py, "np.ones((2, 2))")).unwrap();
        assert_eq!(
            Vector::from_dlpack(wrong_rank).err().unwrap().to_string(),
            "expected a 1-dimensional tensor, got 2 dimensions"
        );
        let wrong_dtype = PyTensor::from_pyany(&numpy_array(py, "np.ones(3, dtype='i2')")).unwrap();
        assert_eq!(
            Vector::from_dlpack(wrong_dtype).err().unwrap().to_string(),
            "expected a float64 tensor, got int16"
        );
        let not_dlpack = PyTensor::from_pyany(&numpy_array(py, "[1, 2]")).unwrap_err();
        assert!(not_dlpack.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
    });
}
