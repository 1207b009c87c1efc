//! Imports of hand-made versioned capsules: producers whose deleter and
//! flags the test controls.

use std::ffi::c_void;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_dlpack::ffi::{
    DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPackVersion,
    DLTENSOR_VERSIONED, DLTensor,
};
use pyo3_dlpack::{DLPackTensor, DataType, Device, PyTensor};

/// A managed tensor and the shape it points to, in one allocation that its
/// deleter frees.
struct Handmade {
    managed: DLManagedTensorVersioned,
    shape: [i64; 1],
}

type Deleter = unsafe extern "C" fn(*mut DLManagedTensorVersioned);

/// A capsule holding a 1-D tensor of `len` elements of `dtype` at `data`,
/// with these flags and deleter.
fn capsule<'py>(
    py: Python<'py>,
    data: *mut c_void,
    len: i64,
    dtype: DataType,
    flags: u64,
    deleter: Deleter,
) -> Bound<'py, PyCapsule> {
    let block = Box::into_raw(Box::new(Handmade {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
            flags,
            dl_tensor: DLTensor {
                data,
                device: Device::cpu(),
                ndim: 1,
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: [len],
    }));
    // SAFETY: `block` is the live allocation just made; nothing else has it yet.
    let handmade = unsafe { &mut *block };
    handmade.managed.manager_ctx = block.cast();
    handmade.managed.dl_tensor.shape = handmade.shape.as_mut_ptr();
    let managed: *mut DLManagedTensorVersioned = &mut handmade.managed;
    // SAFETY: attached; the pointer is non-NULL and the name a `&'static CStr`;
    // no destructor: the importer takes the tensor (tests always import it).
    let capsule =
        unsafe { pyo3::ffi::PyCapsule_New(managed.cast(), DLTENSOR_VERSIONED.as_ptr(), None) };
    // SAFETY: a new reference, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, capsule) }
        .expect("PyCapsule_New")
        .cast_into::<PyCapsule>()
        .expect("a capsule")
}

/// Frees the block `capsule` made.
///
/// # Safety
///
/// `managed` is the `managed` field of a live `Handmade` made by `capsule`.
unsafe fn free(managed: *mut DLManagedTensorVersioned) -> *mut c_void {
    // SAFETY: the caller's contract: a live struct.
    let context = unsafe { (*managed).manager_ctx };
    // SAFETY: `manager_ctx` is the address of the block `capsule` boxed, freed once here.
    let block = unsafe { Box::from_raw(context.cast::<Handmade>()) };
    block.managed.dl_tensor.data
}

unsafe extern "C" fn plain_deleter(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: called once by the importer, with the struct `capsule` made.
    unsafe { free(managed) };
}

/// What a mutable view of memory imported again from inside the first
/// producer's deleter said.
static REIMPORT: Mutex<Option<Result<usize, String>>> = Mutex::new(None);

/// A producer's deleter after which the memory is reused at once (as an
/// allocator would hand it out again, here on the same thread): a fresh,
/// unshared tensor over the same address is imported, and a mutable view
/// of it asked for.
unsafe extern "C" fn deleter_whose_memory_is_reused(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: called once by the importer, with the struct `capsule` made.
    let data = unsafe { free(managed) };
    let outcome = Python::attach(|py| {
        let fresh = capsule(py, data, 4, DataType::F32, 0, plain_deleter);
        let mut tensor = PyTensor::from_capsule(&fresh).map_err(|e| e.to_string())?;
        let view = tensor.as_slice_mut::<f32>().map_err(|e| e.to_string())?;
        Ok(view.len())
    });
    *REIMPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
}

#[test]
fn the_aliasing_registry_is_left_before_the_producers_deleter_runs() {
    let memory: &'static mut [f32] = Box::leak(vec![0.0f32; 4].into_boxed_slice());
    let data: *mut c_void = memory.as_mut_ptr().cast();
    Python::attach(|py| {
        let first = capsule(
            py,
            data,
            4,
            DataType::F32,
            0,
            deleter_whose_memory_is_reused,
        );
        let mut tensor = PyTensor::from_capsule(&first).unwrap();
        assert_eq!(tensor.as_slice_mut::<f32>().unwrap().len(), 4);
        drop(tensor);
    });
    let outcome = REIMPORT.lock().unwrap().take();
    assert_eq!(
        outcome,
        Some(Ok(4)),
        "memory freed by the deleter is no longer claimed by the dropped import"
    );
}

#[test]
fn nbytes_follows_the_padded_sub_byte_flag() {
    let mut memory = [0u8; 8];
    let data: *mut c_void = memory.as_mut_ptr().cast();
    Python::attach(|py| {
        let padded = capsule(
            py,
            data,
            8,
            DataType::F4_E2M1FN,
            DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
            plain_deleter,
        );
        let tensor = PyTensor::from_capsule(&padded).unwrap();
        assert_eq!((tensor.numel(), tensor.nbytes()), (8, 8), "a byte each");
        // Exported again it would be described packed: refused, not misread.
        assert_eq!(
            DLPackTensor::new(tensor).unwrap_err().to_string(),
            "the float4_e2m1fn elements are padded to a byte each, \
             but this crate exports sub-byte types packed only"
        );
        let packed = capsule(py, data, 8, DataType::F4_E2M1FN, 0, plain_deleter);
        let tensor = PyTensor::from_capsule(&packed).unwrap();
        assert_eq!((tensor.numel(), tensor.nbytes()), (8, 4), "two per byte");
        assert!(DLPackTensor::new(tensor).is_ok());
    });
}
