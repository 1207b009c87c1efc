//! A hand-written `IntoDLPack` may describe memory it does not hold inline:
//! such memory may be read by other Rust code while a consumer writes it
//! (UB under Rust's aliasing rules), so it is exported read-only unless the
//! description vouches, unsafely, that nothing else reaches it.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_dlpack::{CapsuleFormat, DLPackError, DLPackTensor, IntoDLPack, PyTensor, TensorInfo};

/// Describes the contents of an `Arc` other Rust code may hold.
struct ThroughArc(Arc<Vec<f32>>);

impl IntoDLPack for ThroughArc {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::new(&*self.0, [self.0.len()])
    }
}

/// Owns its buffer inline: a field of the value.
struct Inline(Vec<f32>);

impl IntoDLPack for Inline {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::new(&self.0, [self.0.len()])
    }
}

/// Owns its buffer alone, but not inline (one of several), and says so.
struct Planes {
    planes: Vec<Vec<f32>>,
    vouched: bool,
}

impl IntoDLPack for Planes {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let builder = TensorInfo::builder(&self.planes[1]).shape([self.planes[1].len()]);
        let builder = match self.vouched {
            // SAFETY: the planes are the value's alone; nothing else reaches them.
            true => unsafe { builder.unshared() },
            false => builder,
        };
        builder.build()
    }
}

/// Hands on another value's description: its buffer is not inside the wrapper.
struct Wrapper {
    inner: Box<dyn IntoDLPack>,
    vouched: bool,
}

impl IntoDLPack for Wrapper {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let info = self.inner.tensor_info()?;
        Ok(match self.vouched {
            // SAFETY: the inner value is the wrapper's alone.
            true => unsafe { info.unshared() },
            false => info,
        })
    }
}

fn exported_read_only<T: IntoDLPack>(value: T) -> bool {
    let tensor = DLPackTensor::new(value).unwrap();
    tensor.info().is_read_only()
}

#[test]
fn memory_outside_the_value_is_exported_read_only_unless_vouched() {
    let data = Arc::new(vec![1.0f32, 2.0, 3.0]);
    // Was writable: NumPy wrote while `data` was read through its other clone.
    assert!(exported_read_only(ThroughArc(Arc::clone(&data))));
    assert!(!exported_read_only(Inline(vec![1.0; 3])));
    let planes = || vec![vec![0.0f32; 2], vec![1.0; 3]];
    assert!(exported_read_only(Planes {
        planes: planes(),
        vouched: false
    }));
    assert!(!exported_read_only(Planes {
        planes: planes(),
        vouched: true
    }));
    // The whole-value exports (a `Vec` itself, the derive's fields) stay writable.
    assert!(!exported_read_only(vec![1.0f32; 3]));
    let wrapped = |vouched| Wrapper {
        inner: Box::new(Inline(vec![1.0; 3])),
        vouched,
    };
    assert!(exported_read_only(wrapped(false)));
    assert!(!exported_read_only(wrapped(true)));
}

#[test]
fn a_capsule_of_memory_outside_the_value_is_read_only_too() {
    Python::attach(|py| {
        let data = Arc::new(vec![1.0f32, 2.0, 3.0]);
        let capsule = ThroughArc(Arc::clone(&data))
            .into_capsule(py, CapsuleFormat::Versioned)
            .unwrap();
        let tensor = PyTensor::from_capsule(&capsule).unwrap();
        assert!(tensor.is_read_only());
        assert_eq!(tensor.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
        let capsule = Inline(vec![1.0; 3])
            .into_capsule(py, CapsuleFormat::Versioned)
            .unwrap();
        assert!(!PyTensor::from_capsule(&capsule).unwrap().is_read_only());
    });
}
