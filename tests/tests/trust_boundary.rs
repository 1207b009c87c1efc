//! The trust boundary driven from Rust, so that `make sanitize` runs it under
//! AddressSanitizer: classes that claim NumPy's or torch's name, and every
//! buffer request on strided exports, whose every byte a consumer would read
//! is read here (an out-of-bounds read is an ASan report, not a silent pass).
//! One test, in order: the fast paths' caches are per process, and the fake
//! NumPy array must come before any real one.

use std::ffi::CString;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::{DLPackTensor, DataType, PyTensor};

fn run<'py>(py: Python<'py>, code: &str, locals: &Bound<'py, PyDict>) {
    py.run(&CString::new(code).unwrap(), Some(locals), None)
        .unwrap_or_else(|err| panic!("{err}\n{code}"));
}

#[test]
fn objects_that_lie_and_every_buffer_request() {
    Python::attach(|py| {
        let locals = PyDict::new(py);
        fake_ndarray_is_asked_through_its_own_dlpack(py, &locals);
        fake_torch_tensor_gets_no_torch_c_call(py, &locals);
        every_buffer_request_stays_inside_the_value(py, &locals);
    });
}

fn fake_ndarray_is_asked_through_its_own_dlpack<'py>(py: Python<'py>, locals: &Bound<'py, PyDict>) {
    run(
        py,
        "import numpy as np
real = np.arange(6, dtype=np.float32)
calls = []
class Fake(bytes):
    def __dlpack__(self, **kwargs):
        calls.append(kwargs)
        return real.__dlpack__(**kwargs)
    def __dlpack_device__(self):
        return (1, 0)
Fake.__name__ = Fake.__qualname__ = 'numpy.ndarray'
fake = Fake(b'\\xff' * 256)",
        locals,
    );
    let fake = locals.get_item("fake").unwrap().unwrap();
    for round in 1..=2 {
        let tensor = PyTensor::from_pyany(&fake).unwrap();
        assert_eq!(tensor.shape(), &[6]);
        assert_eq!(tensor.to_vec::<f32>().unwrap()[5], 5.0);
        let calls = locals.get_item("calls").unwrap().unwrap();
        assert_eq!(
            calls.len().unwrap(),
            round,
            "asked through its own __dlpack__"
        );
        // A real array in between: the NumPy fast path is then known.
        let real = locals.get_item("real").unwrap().unwrap();
        assert_eq!(PyTensor::from_pyany(&real).unwrap().numel(), 6);
    }
}

fn fake_torch_tensor_gets_no_torch_c_call<'py>(py: Python<'py>, locals: &Bound<'py, PyDict>) {
    if py.import("torch").is_err() {
        return;
    }
    let exported = Bound::new(py, DLPackTensor::new(vec![1.0f32, 2.0, 3.0]).unwrap()).unwrap();
    locals.set_item("t", exported).unwrap();
    run(
        py,
        "import torch
assert torch.ones(3).sum() == 3
class Tensor(type(t)):
    __slots__ = ()
    requires_grad = False
    def is_conj(self):
        return False
    def is_neg(self):
        return False
Tensor.__module__ = 'torch'
Tensor.__qualname__ = 'Tensor'",
        locals,
    );
    // torch's checks are found on a real tensor first.
    let real = py.eval(c"torch.ones(3)", Some(locals), None).unwrap();
    assert_eq!(PyTensor::from_pyany(&real).unwrap().numel(), 3);
    run(py, "t.__class__ = Tensor", locals);
    let fake = locals.get_item("t").unwrap().unwrap();
    let tensor = PyTensor::from_pyany(&fake).unwrap();
    assert_eq!(tensor.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
}

/// Reads every byte a consumer of `view` reads (walking shape and strides,
/// or `len` bytes from `buf` without strides) and returns their sum.
///
/// # Safety
///
/// `view` was filled by a successful `PyObject_GetBuffer`.
unsafe fn read_all(view: &ffi::Py_buffer) -> u64 {
    let base = view.buf.cast::<u8>();
    let mut sum = 0u64;
    if view.strides.is_null() {
        for i in 0..view.len as usize {
            // SAFETY: the exporter's promise for a strides-free view:
            // `len` bytes from `buf` (what this test checks under ASan).
            let byte = unsafe { base.add(i) };
            // SAFETY: as just said.
            sum += u64::from(unsafe { byte.read() });
        }
        return sum;
    }
    let ndim = view.ndim as usize;
    // SAFETY: with strides, `shape` and `strides` hold `ndim` entries.
    let shape = unsafe { std::slice::from_raw_parts(view.shape, ndim) };
    // SAFETY: as above.
    let strides = unsafe { std::slice::from_raw_parts(view.strides, ndim) };
    if shape.contains(&0) {
        return 0;
    }
    let mut index = vec![0isize; ndim];
    loop {
        let offset: isize = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        for byte in 0..view.itemsize {
            // SAFETY: the exporter's promise for a strided view: every
            // element the shape and strides reach (checked under ASan).
            let at = unsafe { base.offset(offset + byte) };
            // SAFETY: as just said.
            sum += u64::from(unsafe { at.read() });
        }
        let mut axis = ndim;
        loop {
            if axis == 0 {
                return sum;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

fn every_buffer_request_stays_inside_the_value<'py>(py: Python<'py>, locals: &Bound<'py, PyDict>) {
    let layouts = [
        "np.arange(24, dtype=np.float32).reshape(2, 3, 4)",
        "np.arange(24, dtype=np.float32)[::-1]",
        "np.arange(24, dtype=np.float32)[::3]",
        "np.arange(24, dtype=np.float32).reshape(4, 6).T",
        "np.broadcast_to(np.float32(1), (8,))",
        "np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))",
        "np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::-1, 1]",
    ];
    let bits = [0x1, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100];
    let mut granted = 0;
    for layout in layouts {
        let array = py
            .eval(&CString::new(layout).unwrap(), Some(locals), None)
            .unwrap();
        let tensor = PyTensor::from_pyany(&array).unwrap();
        assert_eq!(tensor.dtype(), DataType::F32);
        let exported = Bound::new(py, DLPackTensor::new(tensor).unwrap()).unwrap();
        for mask in 0..256u32 {
            let flags: i32 = (0..8).filter(|i| mask >> i & 1 == 1).map(|i| bits[i]).sum();
            let mut view = ffi::Py_buffer::new();
            // SAFETY: attached; `view` is a writable Py_buffer, released below.
            if unsafe { ffi::PyObject_GetBuffer(exported.as_ptr(), &mut view, flags) } != 0 {
                let err = PyErr::fetch(py);
                assert!(
                    err.is_instance_of::<pyo3::exceptions::PyBufferError>(py),
                    "{layout} {flags:#x}: {err}"
                );
                continue;
            }
            granted += 1;
            // SAFETY: a view just filled.
            let _ = std::hint::black_box(unsafe { read_all(&view) });
            // SAFETY: the view filled above, released once.
            unsafe { ffi::PyBuffer_Release(&mut view) };
        }
    }
    assert!(granted > 0);
}
