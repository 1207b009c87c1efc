//! Which path an object whose type offers a C exchange table takes: the
//! table with the `exchange-api` feature, `__dlpack__` capsules without it
//! (`make rust-test` runs these in both builds). The table here refuses
//! every call and counts them; with the feature the import then asks
//! `__dlpack__`, as for a torch tensor its C path refuses, so both builds
//! import the same tensor and only the counts tell the paths apart.

use std::ffi::{c_char, c_void};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::ffi::{
    DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackSetError, DLTensor,
};
use crate::{DLPackTensor, DataType, Native, PyTensor, allocate_like};

/// Calls of the table's functions, one counter each.
static OWNED: AtomicUsize = AtomicUsize::new(0);
static BORROWED: AtomicUsize = AtomicUsize::new(0);
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// How many calls the table gets where the build takes it.
const TABLE: usize = if cfg!(feature = "exchange-api") { 1 } else { 0 };

unsafe extern "C" fn refuse_owned(
    _py_object: *mut c_void,
    _out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    OWNED.fetch_add(1, Ordering::SeqCst);
    -1
}

unsafe extern "C" fn refuse_borrowed(_py_object: *mut c_void, _out: *mut DLTensor) -> i32 {
    BORROWED.fetch_add(1, Ordering::SeqCst);
    -1
}

unsafe extern "C" fn refuse_allocation(
    _prototype: *mut DLTensor,
    _out: *mut *mut DLManagedTensorVersioned,
    ctx: *mut c_void,
    set_error: DLPackSetError,
) -> i32 {
    ALLOCATED.fetch_add(1, Ordering::SeqCst);
    if let Some(set_error) = set_error {
        // SAFETY: the consumer's callback with its context, and two static
        // NUL-terminated strings.
        unsafe {
            set_error(
                ctx,
                c"RuntimeError".as_ptr(),
                c"the table's allocator refused".as_ptr().cast::<c_char>(),
            );
        }
    }
    -1
}

struct Table(DLPackExchangeAPI);

// SAFETY: immutable; its only pointer (`prev_api`) is NULL.
unsafe impl Sync for Table {}

static REFUSING: Table = Table(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: crate::ffi::DLPackVersion::CURRENT,
        prev_api: ptr::null_mut(),
    },
    managed_tensor_allocator: Some(refuse_allocation),
    managed_tensor_from_py_object_no_sync: Some(refuse_owned),
    managed_tensor_to_py_object_no_sync: None,
    dltensor_from_py_object_no_sync: Some(refuse_borrowed),
    current_work_stream: None,
});

/// A class whose type offers the refusing table, wrapping a `DLPackTensor`
/// of three floats whose `__dlpack__` it counts: `(instance, tensor, calls)`
/// where `calls()` reads the count.
fn producer(py: Python<'_>) -> (Bound<'_, PyAny>, Bound<'_, DLPackTensor>, Bound<'_, PyAny>) {
    let table = NonNull::from(&REFUSING.0).cast::<c_void>();
    // SAFETY: a static table that outlives every capsule; nothing to free.
    let capsule = unsafe { PyCapsule::new_with_pointer(py, table, DLPACK_EXCHANGE_API) }.unwrap();
    let globals = PyDict::new(py);
    globals.set_item("table", capsule).unwrap();
    py.run(
        c"class Producer:
    calls = 0
    __dlpack_c_exchange_api__ = table
    def __init__(self, inner):
        self.inner = inner
    def __dlpack__(self, **kwargs):
        Producer.calls += 1
        return self.inner.__dlpack__(**kwargs)
    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()
def calls():
    return Producer.calls
",
        Some(&globals),
        None,
    )
    .unwrap();
    let tensor = Bound::new(py, DLPackTensor::new(vec![1.0f32, 2.0, 3.0]).unwrap()).unwrap();
    let class = globals.get_item("Producer").unwrap().unwrap();
    let instance = class.call1((&tensor,)).unwrap();
    let calls = globals.get_item("calls").unwrap().unwrap();
    (instance, tensor, calls)
}

fn count(calls: &Bound<'_, PyAny>) -> usize {
    calls.call0().unwrap().extract().unwrap()
}

#[test]
fn an_import_takes_the_table_only_with_the_feature() {
    super::attach_with_frameworks(|py| {
        let (obj, tensor, calls) = producer(py);
        let imported = PyTensor::from_pyany(&obj).unwrap();
        assert_eq!(OWNED.load(Ordering::SeqCst), TABLE);
        assert_eq!(count(&calls), 1, "one __dlpack__ call either way");
        assert_eq!(imported.shape(), [3]);
        assert_eq!(
            imported.data_ptr(),
            tensor.get().info().data_ptr(),
            "zero-copy"
        );

        let view = PyTensor::with_borrowed(&obj, |view| view.data_ptr()).unwrap();
        assert_eq!(BORROWED.load(Ordering::SeqCst), TABLE);
        assert_eq!(count(&calls), 2);
        assert_eq!(view, tensor.get().info().data_ptr());
    });
}

#[test]
fn allocate_like_takes_the_tables_allocator_only_with_the_feature() {
    super::attach_with_frameworks(|py| {
        let (obj, _, _) = producer(py);
        let err = allocate_like(&obj, &[2, 3], DataType::F32).unwrap_err();
        assert_eq!(ALLOCATED.load(Ordering::SeqCst), TABLE);
        if cfg!(feature = "exchange-api") {
            assert!(err.is_instance_of::<PyRuntimeError>(py));
            assert_eq!(err.value(py).to_string(), "the table's allocator refused");
        } else {
            // The constructor path, as for any object of no framework.
            assert!(err.is_instance_of::<PyTypeError>(py));
            assert_eq!(
                err.value(py).to_string(),
                "cannot allocate like a Producer: expected a numpy.ndarray, torch.Tensor or \
                 cupy.ndarray"
            );
        }
    });
}

#[test]
fn dlpack_tensor_offers_its_table_only_with_the_feature() {
    super::attach_with_frameworks(|py| {
        let class = py.get_type::<DLPackTensor>();
        assert_eq!(
            class.hasattr("__dlpack_c_exchange_api__").unwrap(),
            cfg!(feature = "exchange-api")
        );
    });
}

/// `Native::torch` hands its value to torch's table (torch ≥ 2.10) with the
/// feature, to `torch.from_dlpack` without it (counted by a wrapper, on this
/// thread only: other tests run meanwhile).
#[test]
fn native_torch_takes_torchs_table_only_with_the_feature() {
    super::attach_with_frameworks(|py| {
        let torch = py.import("torch").unwrap();
        assert!(
            torch
                .getattr("Tensor")
                .unwrap()
                .hasattr("__dlpack_c_exchange_api__")
                .unwrap(),
            "torch 2.10 or later"
        );
        let globals = PyDict::new(py);
        globals.set_item("torch", &torch).unwrap();
        py.run(
            c"import threading
original = torch.from_dlpack
counted = []
me = threading.get_ident()
def from_dlpack(*args, **kwargs):
    if threading.get_ident() == me:
        counted.append(1)
    return original(*args, **kwargs)
",
            Some(&globals),
            None,
        )
        .unwrap();
        let wrapper = globals.get_item("from_dlpack").unwrap().unwrap();
        torch.setattr("from_dlpack", wrapper).unwrap();
        let made = Native::torch(vec![1.0f32, 2.0, 3.0]).into_array(py);
        let original = globals.get_item("original").unwrap().unwrap();
        torch.setattr("from_dlpack", original).unwrap();
        let made = made.unwrap();
        assert!(made.is_instance(&torch.getattr("Tensor").unwrap()).unwrap());
        let sum: f64 = made.call_method0("sum").unwrap().extract().unwrap();
        assert_eq!(sum, 6.0);
        let counted = globals.get_item("counted").unwrap().unwrap().len().unwrap();
        assert_eq!(counted, 1 - TABLE);
    });
}
