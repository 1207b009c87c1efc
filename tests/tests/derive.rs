//! `#[derive(IntoDLPack, FromDLPack)]` on real structs, driven from Rust.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DataType, Device, Element, FromDLPack, IntoDLPack,
    PyTensor, RawBuffer,
};

#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>,
    #[dlpack(shape)]
    shape: [usize; 3],
    /// Kept alive with the value, otherwise ignored.
    name: String,
}

#[test]
fn into_dlpack_describes_the_fields() {
    let image = Image {
        pixels: AlignedBuffer::zeroed(24),
        shape: [2, 4, 3],
        name: "x".into(),
    };
    let info = image.tensor_info().unwrap();
    assert_eq!(info.shape(), vec![2, 4, 3]);
    assert_eq!(info.strides(), vec![12, 3, 1]);
    assert_eq!(info.dtype(), DataType::U8);
    assert_eq!(info.data_ptr(), image.pixels.as_ptr().cast_mut().cast());
    assert_eq!(image.name, "x");
}

#[test]
fn a_shape_that_does_not_fit_is_a_runtime_error_not_a_lie() {
    let image = Image {
        pixels: AlignedBuffer::zeroed(10),
        shape: [2, 4, 3],
        name: String::new(),
    };
    assert_eq!(
        image.tensor_info().unwrap_err().to_string(),
        "shape [2, 4, 3] of uint8 needs 24 bytes, but the buffer holds 10 bytes"
    );
    Python::attach(|py| {
        let err = image.into_pyobject(py).unwrap_err();
        assert!(err.is_instance_of::<pyo3::exceptions::PyValueError>(py));
    });
}

/// Every attribute at once: raw GPU-style memory with runtime dtype and device.
#[derive(IntoDLPack)]
struct DeviceTensor {
    #[dlpack(data)]
    buffer: RawBuffer,
    #[dlpack(shape)]
    shape: Vec<i64>,
    #[dlpack(strides)]
    strides: Option<Vec<i64>>,
    #[dlpack(device)]
    device: Device,
    #[dlpack(dtype)]
    dtype: DataType,
    #[dlpack(read_only)]
    frozen: bool,
    _memory: Arc<AlignedBuffer<f32>>,
}

#[test]
fn runtime_dtype_device_strides_and_read_only() {
    let memory = Arc::new(AlignedBuffer::<f32>::zeroed(6));
    // SAFETY: `memory` is kept in the same struct, so it outlives the
    // RawBuffer; it is only described, never used as pinned memory.
    let buffer =
        unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), 24, Device::cuda_host()) };
    let t = DeviceTensor {
        buffer,
        shape: vec![3, 2],
        strides: Some(vec![1, 3]),
        device: Device::cuda_host(),
        dtype: DataType::F32,
        frozen: true,
        _memory: memory,
    };
    let info = t.tensor_info().unwrap();
    assert_eq!((info.shape(), info.strides()), (&[3, 2][..], &[1, 3][..]));
    assert_eq!(
        (info.device(), info.dtype(), info.is_read_only()),
        (Device::cuda_host(), DataType::F32, true)
    );
}

/// Generic over the element, with the container dtype for untyped bytes.
#[derive(IntoDLPack)]
struct Signal<E: Element> {
    #[dlpack(data)]
    samples: Vec<E>,
}

#[derive(IntoDLPack)]
#[dlpack(dtype = f32, read_only)]
struct Bytes {
    #[dlpack(data)]
    raw: Vec<u8>,
    #[dlpack(shape)]
    shape: [usize; 1],
}

#[test]
fn generics_and_container_attributes() {
    let info_of = |t: &dyn IntoDLPack| {
        let info = t.tensor_info().unwrap();
        (info.shape().to_vec(), info.dtype(), info.is_read_only())
    };
    assert_eq!(
        info_of(&Signal {
            samples: vec![1i16, 2, 3]
        }),
        (vec![3], DataType::I16, false)
    );
    assert_eq!(
        info_of(&Signal {
            samples: vec![1.0f64]
        }),
        (vec![1], DataType::F64, false)
    );
    assert_eq!(
        info_of(&Bytes {
            raw: vec![0; 8],
            shape: [2]
        }),
        (vec![2], DataType::F32, true)
    );
}

#[test]
fn into_pyobject_exports_plain_and_generic_types() {
    Python::attach(|py| {
        let signal = Signal {
            samples: vec![1.0f32, 2.0, 3.0],
        }
        .into_pyobject(py)
        .unwrap();
        assert_eq!(signal.getattr("dtype").unwrap().to_string(), "float32");
        let bytes = Bytes {
            raw: vec![0; 8],
            shape: [2],
        }
        .into_pyobject(py)
        .unwrap();
        let array = py
            .import("numpy")
            .unwrap()
            .call_method1("from_dlpack", (bytes,))
            .unwrap();
        assert_eq!(array.getattr("shape").unwrap().to_string(), "(2,)");
        assert_eq!(array.getattr("dtype").unwrap().to_string(), "float32");
    });
}

#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(strides)]
    strides: Vec<i64>,
    #[dlpack(data)]
    data: *const f32,
    #[dlpack(read_only)]
    read_only: bool,
    #[dlpack(device)]
    device: Device,
    #[dlpack(dtype)]
    dtype: DataType,
    note: Option<String>,
}

fn numpy<'py>(py: Python<'py>, code: &str) -> Bound<'py, PyAny> {
    let locals = PyDict::new(py);
    locals.set_item("np", py.import("numpy").unwrap()).unwrap();
    py.eval(&std::ffi::CString::new(code).unwrap(), None, Some(&locals))
        .unwrap()
}

#[test]
fn from_dlpack_fills_every_field_and_checks_constraints() {
    Python::attach(|py| {
        let a = numpy(py, "np.arange(6, dtype='f4').reshape(2, 3)");
        let m: Matrix = a.extract().unwrap();
        assert_eq!(m.shape, [2, 3]);
        assert_eq!(m.strides, vec![3, 1]);
        assert_eq!(m.data, m.tensor.data_ptr().cast_const().cast());
        assert!(!m.read_only);
        assert_eq!((m.device, m.dtype), (Device::cpu(), DataType::F32));
        assert_eq!(m.note, None);
        let last = m.data.wrapping_add(5);
        // SAFETY: 6 contiguous f32s, alive while `m.tensor` is; `last` is the 6th.
        assert_eq!(unsafe { last.read() }, 5.0);

        let error = |code: &str| {
            let err = numpy(py, code).extract::<Matrix>().err().unwrap();
            assert!(
                err.is_instance_of::<pyo3::exceptions::PyValueError>(py),
                "{err}"
            );
            err.value(py).to_string()
        };
        assert_eq!(
            error("np.zeros((2, 3))"),
            "expected a float32 tensor, got float64"
        );
        assert_eq!(
            error("np.zeros(3, dtype='f4')"),
            "expected a 2-dimensional tensor, got 1 dimension"
        );
        assert_eq!(
            error("np.zeros((3, 2), dtype='f4').T"),
            "expected a contiguous (row-major) tensor, got shape [2, 3] with strides [1, 2]"
        );
        let not_a_tensor = numpy(py, "'text'").extract::<Matrix>().err().unwrap();
        assert!(not_a_tensor.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
    });
}

#[derive(FromDLPack)]
#[dlpack(writable, device = "cuda:1")]
struct OnGpu {
    #[dlpack(tensor)]
    _tensor: PyTensor,
}

#[test]
fn device_and_writable_constraints() {
    Python::attach(|py| {
        let err = numpy(py, "np.zeros(2)").extract::<OnGpu>().err().unwrap();
        assert_eq!(
            err.value(py).to_string(),
            "expected a tensor on cuda:1, got one on cpu:0"
        );
        let capsule = Image {
            pixels: AlignedBuffer::zeroed(1),
            shape: [1, 1, 1],
            name: String::new(),
        }
        .into_capsule(py, CapsuleFormat::Versioned)
        .unwrap();
        let tensor = PyTensor::from_capsule(&capsule).unwrap();
        assert_eq!(tensor.to_vec::<u8>().unwrap(), vec![0]);
        assert_eq!(
            OnGpu::from_dlpack(tensor).err().unwrap(),
            DLPackError::Device {
                expected: Device::cuda(1),
                found: Device::cpu()
            }
        );
    });
}

#[derive(FromDLPack)]
#[dlpack(device = "cuda")]
struct OnAnyGpu {
    #[dlpack(tensor)]
    _tensor: PyTensor,
}

#[test]
fn a_device_type_without_an_index_accepts_any_index_and_says_so() {
    Python::attach(|py| {
        let err = numpy(py, "np.zeros(2)")
            .extract::<OnAnyGpu>()
            .err()
            .unwrap();
        // Was "expected a tensor on cuda:0": the index of the tensor found.
        assert_eq!(
            err.value(py).to_string(),
            "expected a tensor on cuda, got one on cpu:0"
        );
    });
}

#[test]
fn read_only_rejected_by_writable() {
    #[derive(FromDLPack)]
    #[dlpack(writable)]
    struct Out {
        #[dlpack(tensor)]
        _tensor: PyTensor,
    }
    Python::attach(|py| {
        let a = numpy(py, "np.zeros(2)");
        a.getattr("flags")
            .unwrap()
            .setattr("writeable", false)
            .unwrap();
        assert_eq!(
            a.extract::<Out>().err().unwrap().value(py).to_string(),
            "expected a writable tensor, got a read-only one"
        );
    });
}
