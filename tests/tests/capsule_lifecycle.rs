//! Capsule ownership rules, driven from Rust with an embedded interpreter.

use std::ffi::CStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_dlpack::ffi::{DLManagedTensor, DLManagedTensorVersioned, USED_DLTENSOR};
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DLPackTensor, IntoDLPack, TensorInfo,
};

/// A 1-D float32 tensor that counts its drops, optionally running Python
/// code in its `Drop` that clears any pending exception (as careless user
/// code, or a `Py<…>` decref running `__del__`, could).
struct Counted {
    data: AlignedBuffer<f32>,
    drops: Arc<AtomicUsize>,
    clobber_errors_on_drop: bool,
}

impl Counted {
    fn new(drops: &Arc<AtomicUsize>) -> Self {
        Self {
            data: AlignedBuffer::from_fn(4, |i| i as f32),
            drops: drops.clone(),
            clobber_errors_on_drop: false,
        }
    }
}

impl IntoDLPack for Counted {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.data).build()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if self.clobber_errors_on_drop {
            Python::attach(|py| {
                let _ = PyErr::take(py);
                let _ = py.run(c"x = 1 + 1", None, None);
            });
        }
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn pointer(capsule: &Bound<'_, PyCapsule>, name: &CStr) -> *mut std::ffi::c_void {
    // SAFETY: attached (the Bound proves it); GetPointer only reads the capsule.
    unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), name.as_ptr()) }
}

#[test]
fn dropping_an_unconsumed_capsule_drops_the_value_once() {
    Python::attach(|py| {
        for format in [CapsuleFormat::Legacy, CapsuleFormat::Versioned] {
            let drops = Arc::new(AtomicUsize::new(0));
            let capsule = Counted::new(&drops).into_capsule(py, format).unwrap();
            assert_eq!(drops.load(Ordering::SeqCst), 0);
            drop(capsule);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
    });
}

#[test]
fn the_destructor_keeps_a_pending_exception_even_when_the_drop_runs_python() {
    Python::attach(|py| {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut value = Counted::new(&drops);
        value.clobber_errors_on_drop = true;
        let capsule = value.into_capsule(py, CapsuleFormat::Versioned).unwrap();
        // A consumer failed and is dropping the capsule with its error set.
        PyKeyError::new_err("consumer error").restore(py);
        drop(capsule);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let pending = PyErr::take(py).expect("the pending exception survived");
        assert!(pending.is_instance_of::<PyKeyError>(py));
        assert_eq!(pending.value(py).to_string(), "'consumer error'");
    });
}

#[test]
fn a_renamed_capsule_is_left_to_its_consumer() {
    Python::attach(|py| {
        let drops = Arc::new(AtomicUsize::new(0));
        let capsule = Counted::new(&drops)
            .into_capsule(py, CapsuleFormat::Legacy)
            .unwrap();
        let managed = pointer(&capsule, pyo3_dlpack::ffi::DLTENSOR).cast::<DLManagedTensor>();
        assert!(!managed.is_null());
        // Consume it the way NumPy and torch do: rename, then own the struct.
        // SAFETY: attached; the name is a static C string.
        let renamed = unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), USED_DLTENSOR.as_ptr()) };
        assert_eq!(renamed, 0);
        drop(capsule);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            0,
            "the destructor must not free a consumed capsule"
        );
        // SAFETY: we consumed the capsule, so its struct is ours; its deleter is called once.
        let deleter = unsafe { (*managed).deleter }.expect("exports always have a deleter");
        // SAFETY: as above.
        unsafe { deleter(managed) };
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_consumer_may_run_the_deleter_on_another_thread_without_the_gil() {
    struct Managed(*mut DLManagedTensorVersioned);
    // SAFETY: the struct's owner is Send + Sync (IntoDLPack requires it).
    unsafe impl Send for Managed {}

    let drops = Arc::new(AtomicUsize::new(0));
    let managed = Python::attach(|py| {
        let tensor = DLPackTensor::new(Counted::new(&drops)).unwrap();
        let capsule = tensor.to_capsule(py, CapsuleFormat::Versioned).unwrap();
        let managed = pointer(&capsule, pyo3_dlpack::ffi::DLTENSOR_VERSIONED).cast();
        // SAFETY: attached; static name.
        let renamed = unsafe {
            ffi::PyCapsule_SetName(
                capsule.as_ptr(),
                pyo3_dlpack::ffi::USED_DLTENSOR_VERSIONED.as_ptr(),
            )
        };
        assert_eq!(renamed, 0);
        Managed(managed)
        // `tensor` and `capsule` are dropped here; the consumer's share remains.
    });
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    std::thread::spawn(move || {
        let managed = managed;
        // SAFETY: the consumer owns the struct; it calls the deleter once, here,
        // on a thread that never attached to Python.
        let deleter = unsafe { (*managed.0).deleter }.unwrap();
        // SAFETY: as above.
        unsafe { deleter(managed.0) };
    })
    .join()
    .unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn exports_use_the_description_checked_when_wrapped() {
    /// Valid when wrapped, invalid afterwards (through interior mutability).
    struct Shrinks {
        data: Vec<u8>,
        calls: AtomicUsize,
    }
    impl IntoDLPack for Shrinks {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            let n = if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                4usize
            } else {
                99
            };
            TensorInfo::builder(&self.data).shape(vec![n]).build()
        }
    }
    Python::attach(|py| {
        let tensor = Bound::new(
            py,
            DLPackTensor::new(Shrinks {
                data: vec![0; 4],
                calls: AtomicUsize::new(0),
            })
            .unwrap(),
        )
        .unwrap();
        // Zero-copy exports use the checked description: shape [4], never [99].
        let shape: Vec<i64> = tensor.getattr("shape").unwrap().extract().unwrap();
        assert_eq!(shape, vec![4]);
        tensor.call_method0("__dlpack__").unwrap();
        // A copy describes the value again, and refuses the bad description.
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("copy", true).unwrap();
        let err = tensor
            .call_method("__dlpack__", (), Some(&kwargs))
            .unwrap_err();
        assert!(
            err.is_instance_of::<pyo3::exceptions::PyBufferError>(py),
            "{err}"
        );
        assert_eq!(
            err.value(py).to_string(),
            "shape [99] of uint8 needs 99 bytes, but the buffer holds 4 bytes"
        );
        assert!(!err.is_instance_of::<PyRuntimeError>(py));
    });
}

#[test]
fn a_bad_description_is_the_same_value_error_from_every_rust_entry_point() {
    /// A shape that does not fit its buffer.
    struct TooLong {
        data: Vec<u8>,
        drops: Arc<AtomicUsize>,
    }
    impl IntoDLPack for TooLong {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            TensorInfo::new(&self.data, [9usize])
        }
    }
    impl Drop for TooLong {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let make = || TooLong {
        data: vec![0; 4],
        drops: drops.clone(),
    };
    let expected = "shape [9] of uint8 needs 9 bytes, but the buffer holds 4 bytes";
    Python::attach(|py| {
        let from_new: PyErr = DLPackTensor::new(make()).unwrap_err().into();
        let from_capsule = make()
            .into_capsule(py, CapsuleFormat::Versioned)
            .unwrap_err();
        let from_legacy = make().into_capsule(py, CapsuleFormat::Legacy).unwrap_err();
        for err in [from_new, from_capsule, from_legacy] {
            assert!(
                err.is_instance_of::<pyo3::exceptions::PyValueError>(py),
                "{err}"
            );
            assert_eq!(err.value(py).to_string(), expected);
        }
    });
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "each refused value dropped once"
    );
}

#[test]
fn dtypes_the_importer_refuses_are_refused_on_export() {
    use pyo3_dlpack::error::DtypeError;
    use pyo3_dlpack::{DataType, DataTypeCode};
    let bytes = vec![0u8; 16];
    for (dtype, message) in [
        (
            DataType::new(DataTypeCode::FLOAT6_E2M3FN, 8, 1),
            "dtype float6_e2m3fn must have 6 bits per element, got 8",
        ),
        (
            DataType::new(DataTypeCode::FLOAT4_E2M1FN, 8, 1),
            "dtype float4_e2m1fn must have 4 bits per element, got 8",
        ),
        (
            DataType::new(DataTypeCode::FLOAT, 0, 1),
            "dtype float0 has 0 bits per element",
        ),
        (
            DataType::new(DataTypeCode::FLOAT, 32, 0),
            "dtype float32x0 has 0 lanes: vector dtypes (lanes != 1) are not supported, but for float4_e2m1fn_x2",
        ),
    ] {
        let err = TensorInfo::builder(&bytes)
            .shape([1usize])
            .dtype(dtype)
            .build()
            .unwrap_err();
        assert!(matches!(err, DLPackError::InvalidDtype(_)), "{err:?}");
        assert_eq!(err.to_string(), message);
    }
    let err = TensorInfo::builder(&bytes)
        .shape([1usize])
        .dtype(DataType::new(DataTypeCode::FLOAT, 32, 4))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        DLPackError::InvalidDtype(DtypeError::Lanes {
            dtype: DataType::new(DataTypeCode::FLOAT, 32, 4)
        })
    );
}
