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
                err.is_instance_of::<pyo3::exceptions::PyTypeError>(py),
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

/// An ndarray array as the data: its own layout, whatever its order.
#[derive(IntoDLPack)]
struct Volume {
    #[dlpack(data)]
    voxels: ndarray::Array3<f32>,
}

/// An ndarray array with the shape field beside it that real structs have.
#[derive(IntoDLPack)]
struct ShapedVolume {
    #[dlpack(data)]
    voxels: ndarray::Array3<f32>,
    #[dlpack(shape)]
    dims: [usize; 3],
}

#[test]
fn an_array_field_exports_its_own_layout_in_any_order() {
    use ndarray::{Array3, Axis, ShapeBuilder, s};
    let values = |i: usize, j: usize, k: usize| (i * 100 + j * 10 + k) as f32;
    let fortran = Array3::from_shape_fn((2, 3, 4).f(), |(i, j, k)| values(i, j, k));
    let mut reversed = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| values(i, j, k));
    reversed.invert_axis(Axis(2));
    let mut sliced = Array3::from_shape_fn((4, 3, 8), |(i, j, k)| values(i, j, k));
    sliced.slice_collapse(s![1..3, .., ..;2]);
    for array in [fortran, reversed, sliced] {
        let expected = (array.shape().to_vec(), array.strides().to_vec());
        let first = array.as_ptr();
        let volume = Volume { voxels: array };
        let info = volume.tensor_info().unwrap();
        let shape: Vec<usize> = info.shape().iter().map(|&d| d as usize).collect();
        let strides: Vec<isize> = info.strides().iter().map(|&d| d as isize).collect();
        assert_eq!((shape, strides), expected);
        assert_eq!(info.data_ptr().cast_const(), first.cast());
        // Element [i, j, k] of the description is the array's.
        let [i, j, k] = [1usize, 1, 1];
        let at = info.strides()[0] * i as i64
            + info.strides()[1] * j as i64
            + info.strides()[2] * k as i64;
        // SAFETY: [1, 1, 1] is inside every array above, `at` elements from
        // the first, so the offset stays inside the allocation.
        let element = unsafe { info.data_ptr().cast::<f32>().offset(at as isize) };
        // SAFETY: an initialized, aligned f32 of the array, not written meanwhile.
        let value = unsafe { *element };
        assert_eq!(value, volume.voxels[[i, j, k]]);
    }
}

#[test]
fn a_shape_field_that_contradicts_the_array_names_the_field() {
    let voxels = ndarray::Array3::<f32>::zeros((2, 3, 4));
    let agreeing = ShapedVolume {
        voxels: voxels.clone(),
        dims: [2, 3, 4],
    };
    assert_eq!(agreeing.tensor_info().unwrap().shape(), &[2, 3, 4]);
    let permuted = ShapedVolume {
        voxels,
        dims: [4, 3, 2],
    };
    let err = permuted.tensor_info().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the #[dlpack(shape)] field `dims` says shape [4, 3, 2], but the data's own shape is [2, 3, 4] \
         (it brings its own layout: drop the shape or make it agree)"
    );
}

/// Host memory with a device field, as a user might write it.
#[derive(IntoDLPack)]
struct Placed {
    #[dlpack(data)]
    values: Vec<f32>,
    #[dlpack(device)]
    place: Device,
}

#[test]
fn host_memory_with_a_device_field_of_another_device_is_refused() {
    let host = Placed {
        values: vec![1.0; 4],
        place: Device::cpu(),
    };
    assert_eq!(host.tensor_info().unwrap().device(), Device::cpu());
    let lie = Placed {
        values: vec![1.0; 4],
        place: Device::cuda(1),
    };
    let err = lie.tensor_info().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the #[dlpack(device)] field `place` says device cuda:1, but the memory is on cpu:0 \
         (memory on another device is vouched for by RawBuffer::new)"
    );
    Python::attach(|py| {
        let err = lie.into_pyobject(py).unwrap_err();
        assert!(err.is_instance_of::<pyo3::exceptions::PyValueError>(py));
    });
}

/// Raw memory that knows its dtype, and a dtype field.
#[derive(IntoDLPack)]
struct Declared {
    #[dlpack(data)]
    raw: RawBuffer,
    #[dlpack(dtype)]
    kind: DataType,
    _memory: AlignedBuffer<f32>,
}

#[test]
fn a_dtype_field_that_contradicts_the_memory_names_the_field() {
    let memory = AlignedBuffer::<f32>::zeroed(4);
    // SAFETY: `memory` is kept in the same struct, so it outlives the RawBuffer.
    let raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), 16, Device::cpu()) }
        .with_dtype(DataType::F32);
    let value = Declared {
        raw,
        kind: DataType::I32,
        _memory: memory,
    };
    assert_eq!(
        value.tensor_info().unwrap_err().to_string(),
        "the #[dlpack(dtype)] field `kind` says dtype int32, but the memory holds float32 elements \
         (a runtime dtype is for untyped bytes: Vec<u8>, RawBuffer)"
    );
}

/// An offset into the data, and a field named like a part but kept out.
#[derive(IntoDLPack)]
struct Window {
    #[dlpack(data)]
    samples: Vec<f32>,
    #[dlpack(shape)]
    shape: [usize; 1],
    #[dlpack(byte_offset)]
    start: usize,
    #[dlpack(skip)]
    dtype: String,
}

#[test]
fn a_byte_offset_field_moves_the_first_element_and_keeps_it_aligned() {
    let window = Window {
        samples: vec![0.0, 1.0, 2.0, 3.0],
        shape: [2],
        start: 8,
        dtype: "f32".into(),
    };
    let info = window.tensor_info().unwrap();
    assert_eq!(
        info.data_ptr().cast_const(),
        window.samples[2..].as_ptr().cast()
    );
    assert_eq!(
        info.dtype(),
        DataType::F32,
        "the skipped `dtype` field is no dtype"
    );
    let misaligned = Window { start: 2, ..window };
    let err = misaligned.tensor_info().unwrap_err();
    assert!(
        err.to_string()
            .contains("is not aligned for float32 (4 bytes)"),
        "{err}"
    );
}

/// The shape from scalar fields, as image types keep it.
#[derive(IntoDLPack)]
#[dlpack(shape = [height, width, channels])]
struct Picture {
    #[dlpack(data)]
    pixels: Vec<u8>,
    width: u32,
    height: u32,
    channels: usize,
}

#[test]
fn a_shape_from_scalar_fields_in_the_order_given() {
    let picture = Picture {
        pixels: vec![0; 24],
        width: 4,
        height: 2,
        channels: 3,
    };
    let info = picture.tensor_info().unwrap();
    assert_eq!(
        (info.shape(), info.strides()),
        (&[2i64, 4, 3][..], &[12i64, 3, 1][..])
    );
    let too_big = Picture {
        width: 5,
        ..picture
    };
    assert_eq!(
        too_big.tensor_info().unwrap_err().to_string(),
        "shape [2, 5, 3] of uint8 needs 30 bytes, but the buffer holds 24 bytes"
    );
}

/// An import whose shape goes into scalar fields, as an image type keeps it.
#[derive(FromDLPack)]
#[dlpack(dtype = u8, shape = [height, width, channels])]
struct PictureIn {
    #[dlpack(tensor)]
    pixels: PyTensor,
    height: usize,
    width: u32,
    channels: u8,
    label: Option<String>,
}

#[test]
fn an_import_fills_the_scalar_fields_of_its_shape_in_order() {
    Python::attach(|py| {
        let array = numpy(py, "np.zeros((2, 4, 3), dtype='u1')");
        let picture: PictureIn = array.extract().unwrap();
        assert_eq!((picture.height, picture.width, picture.channels), (2, 4, 3));
        assert_eq!(picture.pixels.shape(), [2, 4, 3]);
        assert_eq!(picture.label, None);

        let error = |code: &str| numpy(py, code).extract::<PictureIn>().err().unwrap();
        let flat = error("np.zeros(24, dtype='u1')");
        assert!(flat.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
        assert_eq!(
            flat.value(py).to_string(),
            "expected a 3-dimensional tensor, got 1 dimension"
        );
        let too_many_channels = error("np.zeros((1, 1, 256), dtype='u1')");
        assert!(too_many_channels.is_instance_of::<pyo3::exceptions::PyOverflowError>(py));
        assert_eq!(
            too_many_channels.value(py).to_string(),
            "extent 2 of the imported shape, for the field `channels`, must be an integer in range [0, 255], got 256"
        );
    });
}

/// One struct both ways: the import's PyTensor is the export's memory.
#[derive(IntoDLPack, FromDLPack)]
#[dlpack(dtype = u8, shape = [height, width, channels])]
struct PictureBoth {
    #[dlpack(tensor)]
    pixels: PyTensor,
    height: usize,
    width: u32,
    channels: u8,
}

#[test]
fn a_struct_deriving_both_exports_what_it_imported() {
    Python::attach(|py| {
        let array = numpy(
            py,
            "np.arange(24, dtype='u1').reshape(4, 2, 3).transpose(1, 0, 2)",
        );
        let picture: PictureBoth = array.extract().unwrap();
        assert_eq!((picture.height, picture.width, picture.channels), (2, 4, 3));
        let address = picture.pixels.data_ptr();
        let info = picture.tensor_info().unwrap();
        assert_eq!(
            (info.shape(), info.strides(), info.data_ptr()),
            (&[2i64, 4, 3][..], &[3i64, 6, 1][..], address)
        );
        let back = numpy(py, "np.from_dlpack")
            .call1((picture.into_pyobject(py).unwrap(),))
            .unwrap();
        assert!(
            back.call_method1("__eq__", (&array,))
                .unwrap()
                .call_method0("all")
                .unwrap()
                .is_truthy()
                .unwrap()
        );
        let interface = back.getattr("__array_interface__").unwrap();
        let data: (usize, bool) = interface.get_item("data").unwrap().extract().unwrap();
        assert_eq!(data.0, address as usize);
    });
}

/// A struct whose tensor is another derived value, with metadata beside it.
#[derive(IntoDLPack)]
struct Labelled {
    #[dlpack(inner)]
    image: Image,
    label: String,
}

#[test]
fn an_inner_value_is_the_tensor() {
    let labelled = Labelled {
        image: Image {
            pixels: AlignedBuffer::zeroed(24),
            shape: [2, 4, 3],
            name: String::new(),
        },
        label: "cat".into(),
    };
    let info = labelled.tensor_info().unwrap();
    assert_eq!(info.shape(), &[2, 4, 3]);
    assert_eq!(
        info.data_ptr(),
        labelled.image.pixels.as_ptr().cast_mut().cast()
    );
    Python::attach(|py| {
        let tensor = labelled.into_pyobject(py).unwrap();
        let tensor = tensor.borrow();
        let info = tensor.info();
        assert!(
            !info.is_read_only(),
            "the inner value lies inside the exported one"
        );
        assert_eq!(info.shape(), &[2, 4, 3]);
    });
}

/// An imported tensor kept as an export's memory, with a shape field.
#[derive(IntoDLPack)]
struct Reexported {
    #[dlpack(data)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: Vec<usize>,
}

#[test]
fn an_imported_tensor_as_data_exports_its_own_layout() {
    Python::attach(|py| {
        let import = |code: &str| numpy(py, code).extract::<PyTensor>().unwrap();
        let transposed = Reexported {
            tensor: import("np.arange(6, dtype='f4').reshape(2, 3).T"),
            shape: vec![3, 2],
        };
        let info = transposed.tensor_info().unwrap();
        assert_eq!(
            (info.shape(), info.strides()),
            (&[3i64, 2][..], &[1i64, 3][..])
        );
        assert_eq!(info.data_ptr(), transposed.tensor.data_ptr());
        let reversed = Reexported {
            tensor: import("np.arange(4, dtype='f4')[::-1]"),
            shape: vec![4],
        };
        let info = reversed.tensor_info().unwrap();
        assert_eq!(
            (info.strides(), info.data_ptr()),
            (&[-1i64][..], reversed.tensor.data_ptr())
        );
        let permuted = Reexported {
            shape: vec![2, 3],
            ..transposed
        };
        assert_eq!(
            permuted.tensor_info().unwrap_err().to_string(),
            "the #[dlpack(shape)] field `shape` says shape [2, 3], but the data's own shape is [3, 2] \
             (it brings its own layout: drop the shape or make it agree)"
        );
    });
}
