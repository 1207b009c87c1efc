//! candle tensors through torch and back (feature `candle`): exports share
//! candle's storage (pointer equality, drop counts), imports copy exact values.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_dlpack::candle_core::{DType, Device, IndexOp, Tensor};
use pyo3_dlpack::{CandleTensor, DLPackError, DLPackTensor, IntoDLPack, PyTensor, TensorInfo};

/// A held candle tensor whose drop is counted.
struct Counted(CandleTensor, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

impl IntoDLPack for Counted {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.0.tensor_info()
    }
}

/// `code` evaluated with `torch` and the given locals.
fn eval<'py>(py: Python<'py>, code: &str, locals: &Bound<'py, PyDict>) -> Bound<'py, PyAny> {
    locals
        .set_item("torch", py.import("torch").unwrap())
        .unwrap();
    py.eval(&std::ffi::CString::new(code).unwrap(), None, Some(locals))
        .unwrap()
}

/// The address of a candle tensor's first element, as the export reports it.
fn first_element(t: &Tensor) -> usize {
    CandleTensor::new(t.clone())
        .unwrap()
        .tensor_info()
        .unwrap()
        .data_ptr() as usize
}

/// Weights with small integer values, so that candle's and torch's matrix
/// products agree exactly whatever order they sum in.
fn weights(rows: usize, cols: usize, seed: i64) -> Tensor {
    let values: Vec<f32> = (0..(rows * cols) as i64)
        .map(|i| ((i * 7 + seed * 3) % 5 - 2) as f32)
        .collect();
    Tensor::from_vec(values, (rows, cols), &Device::Cpu).unwrap()
}

#[test]
fn a_candle_model_runs_in_torch_over_candle_memory_and_its_output_comes_back() {
    Python::attach(|py| {
        let drops = Arc::new(AtomicUsize::new(0));
        // A two-layer perceptron, 2 × 1024 × 1024 float32 (8 MiB of weights).
        let (w1, w2) = (weights(1024, 1024, 1), weights(1024, 1024, 2));
        let x = weights(16, 1024, 3);
        let expected = x.matmul(&w1).unwrap().relu().unwrap().matmul(&w2).unwrap();

        let locals = PyDict::new(py);
        for (name, t) in [("x", &x), ("w1", &w1), ("w2", &w2)] {
            let held = Counted(CandleTensor::new(t.clone()).unwrap(), drops.clone());
            let exported = DLPackTensor::new(held).unwrap();
            let torch_tensor = eval(py, "torch.from_dlpack(e)", &{
                let l = PyDict::new(py);
                l.set_item("e", exported).unwrap();
                l
            });
            let address: usize = torch_tensor
                .call_method0("data_ptr")
                .unwrap()
                .extract()
                .unwrap();
            assert_eq!(address, first_element(t), "{name} was copied");
            locals.set_item(name, torch_tensor).unwrap();
        }
        let y = eval(py, "torch.relu(x @ w1) @ w2", &locals);
        let back = PyTensor::from_pyany(&y)
            .unwrap()
            .to_candle_tensor()
            .unwrap();
        assert_eq!(
            (back.dims(), back.dtype()),
            (&[16usize, 1024][..], DType::F32)
        );
        assert_eq!(
            back.to_vec2::<f32>().unwrap(),
            expected.to_vec2::<f32>().unwrap()
        );

        // torch's tensors hold the exports: dropping them drops each once.
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(y);
        locals.clear();
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        // The candle tensors are untouched, and writable again.
        w1.zero_set().unwrap();
        assert_eq!(w1.i((0, 0)).unwrap().to_scalar::<f32>().unwrap(), 0.0);
    });
}

#[test]
fn every_shared_dtype_round_trips_through_torch_exactly() {
    Python::attach(|py| {
        let base = Tensor::new(&[[0f32, 1.5, -2.0], [448.0, -0.25, 3.0]], &Device::Cpu).unwrap();
        for (dtype, torch_dtype) in [
            (DType::U8, "torch.uint8"),
            (DType::I16, "torch.int16"),
            (DType::I32, "torch.int32"),
            (DType::I64, "torch.int64"),
            (DType::F16, "torch.float16"),
            (DType::BF16, "torch.bfloat16"),
            (DType::F32, "torch.float32"),
            (DType::F64, "torch.float64"),
            (DType::F8E4M3, "torch.float8_e4m3fn"),
        ] {
            let t = base.abs().unwrap().to_dtype(dtype).unwrap();
            let locals = PyDict::new(py);
            let exported = DLPackTensor::new(CandleTensor::new(t.clone()).unwrap()).unwrap();
            locals.set_item("e", exported).unwrap();
            // torch's own view of the export, transposed: a strided import.
            let seen = eval(
                py,
                "(lambda v: (str(v.dtype), v.t()))(torch.from_dlpack(e))",
                &locals,
            );
            let (seen_dtype, transposed): (String, Bound<'_, PyAny>) = seen.extract().unwrap();
            assert_eq!(seen_dtype, torch_dtype);
            let back = PyTensor::from_pyany(&transposed)
                .unwrap()
                .to_candle_tensor()
                .unwrap();
            assert_eq!(back.dtype(), dtype);
            // As float32: candle 0.11's float8 to float64 conversion recurses forever.
            let (expected, found) = (
                t.t().unwrap().to_dtype(DType::F32),
                back.to_dtype(DType::F32),
            );
            assert_eq!(
                found.unwrap().to_vec2::<f32>().unwrap(),
                expected.unwrap().to_vec2::<f32>().unwrap(),
                "{dtype:?}"
            );
        }
    });
}

#[test]
fn a_dtype_candle_cannot_hold_is_a_type_error() {
    Python::attach(|py| {
        let locals = PyDict::new(py);
        let t = eval(py, "torch.zeros(3, dtype=torch.int8)", &locals);
        let err = PyTensor::from_pyany(&t)
            .unwrap()
            .to_candle_tensor()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected a dtype candle_core::Tensor can hold, got int8"
        );
        assert!(PyErr::from(err).is_instance_of::<pyo3::exceptions::PyTypeError>(py));
    });
}

/// A layer of a model, derived: candle's weights as its data field.
#[derive(IntoDLPack)]
struct Layer {
    #[dlpack(data)]
    weights: CandleTensor,
    #[dlpack(shape)]
    shape: Vec<usize>,
    #[dlpack(strides)]
    strides: Vec<usize>,
}

impl Layer {
    fn new(weights: Tensor) -> Self {
        let (shape, strides) = (weights.dims().to_vec(), weights.stride().to_vec());
        Self {
            weights: CandleTensor::new(weights).unwrap(),
            shape,
            strides,
        }
    }
}

#[test]
fn a_derived_type_exports_candle_weights_as_its_data_field() {
    Python::attach(|py| {
        // The second and third columns of a (4, 3) matrix: an offset, strided view.
        let full = weights(4, 3, 0);
        let part = full.narrow(1, 1, 2).unwrap();
        let exported = Layer::new(part.clone()).into_dlpack_tensor().unwrap();
        let locals = PyDict::new(py);
        locals.set_item("e", exported).unwrap();
        let t = eval(py, "torch.from_dlpack(e)", &locals);
        let address: usize = t.call_method0("data_ptr").unwrap().extract().unwrap();
        assert_eq!(address, first_element(&part));
        let values: Vec<Vec<f32>> = t.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, part.to_vec2::<f32>().unwrap());
    });
}

#[test]
fn numpy_sees_candle_memory_read_only() {
    Python::attach(|py| {
        let t = weights(3, 5, 4);
        let locals = PyDict::new(py);
        locals.set_item("np", py.import("numpy").unwrap()).unwrap();
        let exported = DLPackTensor::new(CandleTensor::new(t.clone()).unwrap()).unwrap();
        locals.set_item("e", exported).unwrap();
        let a = eval(py, "np.from_dlpack(e)", &locals);
        let (address, writeable): (usize, bool) = (
            a.getattr("ctypes")
                .unwrap()
                .getattr("data")
                .unwrap()
                .extract()
                .unwrap(),
            a.getattr("flags")
                .unwrap()
                .getattr("writeable")
                .unwrap()
                .extract()
                .unwrap(),
        );
        assert_eq!((address, writeable), (first_element(&t), false));
        let values: Vec<Vec<f32>> = a.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, t.to_vec2::<f32>().unwrap());
    });
}
