//! Imports: `PyTensor` described, read, written, borrowed, dropped on threads.

#[allow(unused_imports)]
use super::*;

/// Everything a `PyTensor` reports, as a dict.
#[pyfunction]
pub(crate) fn describe<'py>(py: Python<'py>, tensor: PyTensor) -> PyResult<Bound<'py, PyDict>> {
    describe_tensor(py, &tensor)
}

pub(crate) fn describe_tensor<'py>(
    py: Python<'py>,
    tensor: &PyTensor,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("shape", PyTuple::new(py, tensor.shape())?)?;
    d.set_item("strides", PyTuple::new(py, tensor.strides())?)?;
    d.set_item("ndim", tensor.ndim())?;
    d.set_item("numel", tensor.numel())?;
    d.set_item("nbytes", tensor.nbytes())?;
    d.set_item("dtype", tensor.dtype().to_string())?;
    let device = tensor.device();
    d.set_item("device", (device.device_type.code(), device.device_id))?;
    d.set_item("version", tensor.version().map(|v| (v.major, v.minor)))?;
    d.set_item("read_only", tensor.is_read_only())?;
    d.set_item("writability", format!("{:?}", tensor.writability()))?;
    d.set_item("copied", tensor.is_copied())?;
    d.set_item("contiguous", tensor.is_contiguous())?;
    d.set_item("data_ptr", tensor.data_ptr() as usize)?;
    d.set_item("stream", tensor.stream())?;
    Ok(d)
}

/// Runs `$body` with `$T` bound to the Rust type named `$name`, converting
/// each element to a Python-friendly value with `$to_py`.
macro_rules! with_type {
    ($name:expr, |$T:ident| $body:expr) => {
        match $name {
            "int8" => {
                type $T = i8;
                $body
            }
            "int16" => {
                type $T = i16;
                $body
            }
            "int32" => {
                type $T = i32;
                $body
            }
            "int64" => {
                type $T = i64;
                $body
            }
            "uint8" => {
                type $T = u8;
                $body
            }
            "uint16" => {
                type $T = u16;
                $body
            }
            "uint32" => {
                type $T = u32;
                $body
            }
            "uint64" => {
                type $T = u64;
                $body
            }
            "float16" => {
                type $T = half::f16;
                $body
            }
            "bfloat16" => {
                type $T = half::bf16;
                $body
            }
            "float32" => {
                type $T = f32;
                $body
            }
            "float64" => {
                type $T = f64;
                $body
            }
            "complex64" => {
                type $T = num_complex::Complex<f32>;
                $body
            }
            "complex128" => {
                type $T = num_complex::Complex<f64>;
                $body
            }
            other => Err(PyValueError::new_err(format!(
                "no Rust view type {other:?}"
            ))),
        }
    };
}

/// `describe`, importing with explicit options; with `read_as`, also the
/// elements (`to_vec` of that type) under "values"; with `keep`, the import
/// itself under "held" (dropped with it).
#[pyfunction]
#[pyo3(signature = (obj, *, max_version=None, stream=None, dl_device=None, copy=None, protocols=None, stream_ordered=false, read_as=None, keep=false))]
#[allow(clippy::too_many_arguments)] // Python keywords
pub(crate) fn import_with<'py>(
    obj: &Bound<'py, PyAny>,
    max_version: Option<(u32, u32)>,
    stream: Option<i64>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
    protocols: Option<Vec<String>>,
    stream_ordered: bool,
    read_as: Option<&str>,
    keep: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = ImportOptions::new();
    if stream_ordered {
        options = options.stream_mode(pyo3_dlpack::StreamMode::StreamOrdered);
    }
    if let Some(names) = protocols {
        let mut accepted = pyo3_dlpack::Protocols::NONE;
        for name in names {
            accepted = accepted
                | match name.as_str() {
                    "cuda_array_interface" => pyo3_dlpack::Protocols::CUDA_ARRAY_INTERFACE,
                    "array_interface" => pyo3_dlpack::Protocols::ARRAY_INTERFACE,
                    "buffer" => pyo3_dlpack::Protocols::BUFFER,
                    other => return Err(PyValueError::new_err(format!("no protocol {other:?}"))),
                };
        }
        options = options.protocols(accepted);
    }
    if let Some((major, minor)) = max_version {
        options = options.with_max_version(major, minor);
    }
    if let Some(stream) = stream {
        // SAFETY: the tests' promise: -1, 0, 1, 2 or a live stream of the
        // producer's device (the stand-in driver's, or a real one on a GPU machine).
        options = unsafe { options.stream(stream) };
    }
    if let Some((device_type, id)) = dl_device {
        options = options.dl_device(Device::new(
            pyo3_dlpack::DeviceType::from_code(device_type),
            id,
        ));
    }
    if let Some(copy) = copy {
        options = options.copy(copy);
    }
    let py = obj.py();
    let tensor = PyTensor::from_pyany_with(obj, &options)?;
    let d = describe_tensor(py, &tensor)?;
    if let Some(as_type) = read_as {
        d.set_item(
            "values",
            with_type!(as_type, |T| list(py, tensor.to_vec::<T>()?))?,
        )?;
    }
    if keep {
        d.set_item("held", HeldView { _tensor: tensor })?;
    }
    Ok(d)
}

/// A value Python can compare: numbers as float or int, complex as (re, im).
pub(crate) trait ToPy {
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
}
macro_rules! to_py_via {
    ($($ty:ty => $conv:expr),*) => {$(
        impl ToPy for $ty {
            fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let convert: fn(&$ty) -> _ = $conv;
                Ok(convert(self).into_pyobject(py)?.into_any())
            }
        }
    )*};
}
to_py_via!(
    i8 => |v| i64::from(*v), i16 => |v| i64::from(*v), i32 => |v| i64::from(*v), i64 => |v| *v,
    u8 => |v| u64::from(*v), u16 => |v| u64::from(*v), u32 => |v| u64::from(*v), u64 => |v| *v,
    half::f16 => |v| v.to_f64(), half::bf16 => |v| v.to_f64(), f32 => |v| f64::from(*v), f64 => |v| *v,
    num_complex::Complex<f32> => |v| (f64::from(v.re), f64::from(v.im)),
    num_complex::Complex<f64> => |v| (v.re, v.im)
);

pub(crate) fn list<'py, T: ToPy>(
    py: Python<'py>,
    values: impl IntoIterator<Item = T>,
) -> PyResult<Bound<'py, PyList>> {
    let items = values
        .into_iter()
        .map(|v| v.to_py(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// The elements, row-major, read with `to_vec::<type>()` (any strides).
#[pyfunction]
pub(crate) fn to_list<'py>(
    py: Python<'py>,
    tensor: PyTensor,
    as_type: &str,
) -> PyResult<Bound<'py, PyList>> {
    with_type!(as_type, |T| list(py, tensor.to_vec::<T>()?))
}

/// The elements read with `as_slice::<type>()` (contiguous tensors only).
#[pyfunction]
pub(crate) fn slice_values<'py>(
    py: Python<'py>,
    tensor: PyTensor,
    as_type: &str,
) -> PyResult<Bound<'py, PyList>> {
    with_type!(as_type, |T| list(
        py,
        tensor.as_slice::<T>()?.iter().copied()
    ))
}

/// The elements in logical (row-major) order through an ndarray view.
#[pyfunction]
pub(crate) fn array_values<'py>(
    py: Python<'py>,
    tensor: PyTensor,
    as_type: &str,
) -> PyResult<Bound<'py, PyList>> {
    with_type!(as_type, |T| list(
        py,
        tensor.as_array::<T>()?.iter().copied()
    ))
}

/// Sets every element to `value` (as `as_type`) through `as_slice_mut` (or,
/// when `through_ndarray`, through `as_array_mut`, which takes any strides).
#[pyfunction]
#[pyo3(signature = (tensor, value, as_type="float64", through_ndarray=false))]
pub(crate) fn fill(
    mut tensor: PyTensor,
    value: f64,
    as_type: &str,
    through_ndarray: bool,
) -> PyResult<()> {
    match as_type {
        "float64" if through_ndarray => tensor.as_array_mut::<f64>()?.fill(value),
        "float64" => tensor.as_slice_mut::<f64>()?.fill(value),
        "uint8" if through_ndarray => tensor.as_array_mut::<u8>()?.fill(value as u8),
        "uint8" => tensor.as_slice_mut::<u8>()?.fill(value as u8),
        other => return Err(PyValueError::new_err(format!("fill: no {other:?}"))),
    }
    Ok(())
}

/// `out += inp`, elementwise, for float64 tensors of one length.
#[pyfunction]
pub(crate) fn add_into(mut out: PyTensor, inp: PyTensor) -> PyResult<()> {
    let source = inp.as_slice::<f64>()?;
    let target = out.as_slice_mut::<f64>()?;
    if source.len() != target.len() {
        return Err(PyValueError::new_err("add_into: lengths differ"));
    }
    for (t, s) in target.iter_mut().zip(source) {
        *t += s;
    }
    Ok(())
}

/// Imports `obj`, then drops the `PyTensor` on a new Rust thread that never
/// attaches to Python, with this thread's GIL released meanwhile.
#[pyfunction]
pub(crate) fn drop_on_thread(py: Python<'_>, tensor: PyTensor) {
    py.detach(|| std::thread::spawn(move || drop(tensor)).join())
        .expect("the dropping thread panicked");
}

/// `describe`, through a borrowed view (`PyTensor::with_borrowed`).
#[pyfunction]
pub(crate) fn describe_borrowed<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    PyTensor::with_borrowed(obj, |tensor| describe_tensor(obj.py(), tensor))?
}

/// The sum of a float32 tensor read through a borrowed view.
#[pyfunction]
pub(crate) fn sum_borrowed(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    PyTensor::with_borrowed(obj, |tensor| -> PyResult<f64> {
        Ok(tensor.to_vec::<f32>()?.iter().map(|&x| f64::from(x)).sum())
    })?
}

/// The imported tensor, exported again as it came (zero-copy).
#[pyfunction]
pub(crate) fn reexport(tensor: PyTensor) -> PyResult<DLPackTensor> {
    Ok(DLPackTensor::new(tensor)?)
}

/// `locate::<f32>()` in one match: ("host", sum, None) or (device, None, stream).
#[pyfunction]
pub(crate) fn locate(tensor: PyTensor) -> PyResult<(String, Option<f32>, Option<i64>)> {
    Ok(match tensor.locate::<f32>()? {
        pyo3_dlpack::Located::Host(values) => ("host".to_owned(), Some(values.iter().sum()), None),
        pyo3_dlpack::Located::Device(device) => (device.device.to_string(), None, device.stream),
    })
}

/// An import kept alive after it handed out a float32 view (shared, or
/// mutable), so that later calls, of this module or of another extension
/// built on pyo3-dlpack, meet its registration in the aliasing registry.
#[pyclass(frozen)]
pub(crate) struct HeldView {
    _tensor: PyTensor,
}

#[pyfunction]
#[pyo3(signature = (tensor, mutable=false))]
pub(crate) fn hold_view(mut tensor: PyTensor, mutable: bool) -> PyResult<HeldView> {
    if mutable {
        tensor.as_slice_mut::<f32>()?;
    } else {
        tensor.as_slice::<f32>()?;
    }
    Ok(HeldView { _tensor: tensor })
}

/// A producer whose C exchange table's owning export always fails (with a
/// `RuntimeError` set) while its `__dlpack__` works, delegating to a
/// `DLPackTensor` of `n` float32 zeros and counting its calls.
#[pyclass(frozen)]
pub(crate) struct FailingExchange {
    inner: Py<DLPackTensor>,
    calls: AtomicUsize,
}

struct FailingTable(pyo3_dlpack::ffi::DLPackExchangeAPI);

// SAFETY: immutable, its only pointer (`prev_api`) NULL.
unsafe impl Sync for FailingTable {}

static FAILING_TABLE: FailingTable = FailingTable(pyo3_dlpack::ffi::DLPackExchangeAPI {
    header: pyo3_dlpack::ffi::DLPackExchangeAPIHeader {
        version: pyo3_dlpack::ffi::DLPackVersion::CURRENT,
        prev_api: std::ptr::null_mut(),
    },
    managed_tensor_allocator: None,
    managed_tensor_from_py_object_no_sync: Some(failing_export),
    managed_tensor_to_py_object_no_sync: None,
    dltensor_from_py_object_no_sync: None,
    current_work_stream: None,
});

/// # Safety
///
/// Called attached, as the exchange API is.
unsafe extern "C" fn failing_export(
    _obj: *mut std::ffi::c_void,
    _out: *mut *mut pyo3_dlpack::ffi::DLManagedTensorVersioned,
) -> i32 {
    // SAFETY: exchange-API consumers call it attached.
    let py = unsafe { Python::assume_attached() };
    pyo3::exceptions::PyRuntimeError::new_err("the exchange export failed").restore(py);
    -1
}

#[pymethods]
impl FailingExchange {
    #[new]
    fn new(n: usize) -> PyResult<Self> {
        let inner = Python::attach(|py| Py::new(py, DLPackTensor::new(vec![0f32; n])?))?;
        Ok(Self {
            inner,
            calls: AtomicUsize::new(0),
        })
    }

    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Py<PyCapsule>> {
        let table = std::ptr::NonNull::from(&FAILING_TABLE.0).cast::<std::ffi::c_void>();
        // SAFETY: an immutable static table, alive as long as the module.
        let capsule = unsafe {
            PyCapsule::new_with_pointer(py, table, pyo3_dlpack::ffi::DLPACK_EXCHANGE_API)
        }?;
        Ok(capsule.unbind())
    }

    #[pyo3(signature = (**kwargs))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.bind(py).call_method("__dlpack__", (), kwargs)
    }

    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.inner.bind(py).call_method0("__dlpack_device__")
    }

    /// How many times `__dlpack__` was called.
    #[getter]
    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

/// rust-numpy's `axpy`, with typed arguments: `a·x + y` as a list.
#[pyfunction]
pub(crate) fn typed_axpy(
    a: f64,
    x: pyo3_dlpack::TensorDyn<f64>,
    y: pyo3_dlpack::TensorDyn<f64>,
) -> PyResult<Vec<f64>> {
    let sum = a * &x.as_array() + &y.as_array();
    Ok(sum.iter().copied().collect())
}

/// The trace of a float32 matrix (a 2-D typed argument).
#[pyfunction]
pub(crate) fn typed_trace(m: pyo3_dlpack::Tensor2<f32>) -> f32 {
    m.as_array().diag().sum()
}

/// rust-numpy's dispatch over typed variants: the first that fits.
#[derive(FromPyObject)]
pub(crate) enum TypedNumbers {
    F64(pyo3_dlpack::Tensor1<f64>),
    I64(pyo3_dlpack::Tensor1<i64>),
    Bytes(pyo3_dlpack::TensorMut1<u8>),
}

/// Which variant took `x`, and its sum.
#[pyfunction]
pub(crate) fn typed_enum_sum(x: TypedNumbers) -> (&'static str, f64) {
    match x {
        TypedNumbers::F64(x) => ("f64", x.as_array().sum()),
        TypedNumbers::I64(x) => ("i64", x.as_array().sum() as f64),
        TypedNumbers::Bytes(x) => ("u8", x.as_array().iter().map(|&b| f64::from(b)).sum()),
    }
}

/// A typed argument's conversion copy in its own rank, as a list.
#[pyfunction]
pub(crate) fn typed_cast(x: pyo3_dlpack::Tensor2<i32>) -> PyResult<(Vec<usize>, Vec<f64>)> {
    let copy = x.cast::<f64>()?;
    Ok((copy.shape().to_vec(), copy.iter().copied().collect()))
}

/// A typed 2-D argument through nalgebra: the view's strides when nalgebra
/// can hold them (`None` otherwise), and the copy's column-major elements.
#[pyfunction]
pub(crate) fn typed_dmatrix(m: pyo3_dlpack::Tensor2<f64>) -> (Option<(usize, usize)>, Vec<f64>) {
    let strides = m.as_dmatrix_view().ok().map(|view| view.strides());
    (strides, m.to_dmatrix().as_slice().to_vec())
}

/// Multiplies a writable float32 vector by `factor` in place.
#[pyfunction]
pub(crate) fn typed_scale(mut v: pyo3_dlpack::TensorMut1<f32>, factor: f32) -> PyResult<()> {
    v.as_array_mut()?.mapv_inplace(|x| x * factor);
    Ok(())
}

/// The sum of complex128 elements (a typed argument of `num_complex`'s type, re-exported).
#[pyfunction]
pub(crate) fn typed_complex_sum(
    z: pyo3_dlpack::Tensor1<pyo3_dlpack::num_complex::Complex64>,
) -> (f64, f64) {
    let total = z.as_array().sum();
    (total.re, total.im)
}

/// A CUDA float32 matrix for a kernel (`Tensor2<f32, Cuda>`): its address,
/// `(rows, cols)` and the stream the data is ready on, read without touching it.
#[pyfunction]
pub(crate) fn typed_cuda_matrix(
    m: pyo3_dlpack::Tensor2<f32, pyo3_dlpack::memory::Cuda>,
) -> (usize, (usize, usize), Option<i64>) {
    let device = m.device_tensor();
    (device.data_ptr as usize, m.dim(), device.stream)
}

/// A writable CUDA float32 vector (`TensorMut1<f32, Cuda>`): its address.
#[pyfunction]
pub(crate) fn typed_cuda_out(
    out: pyo3_dlpack::TensorMut1<f32, pyo3_dlpack::memory::Cuda>,
) -> usize {
    out.device_tensor().data_ptr as usize
}

/// Any float32 tensor, on any device (`TensorDyn<f32, AnyDevice>`): the
/// host's sum, or the device's name.
#[pyfunction]
pub(crate) fn typed_anywhere(
    x: pyo3_dlpack::TensorDyn<f32, pyo3_dlpack::memory::AnyDevice>,
) -> PyResult<String> {
    Ok(match x.locate_array()? {
        pyo3_dlpack::Located::Host(view) => format!("sum {}", view.sum()),
        pyo3_dlpack::Located::Device(gpu) => format!("on {}", gpu.device),
    })
}

/// A 0-D float64 tensor's value (`Tensor0<f64>`).
#[pyfunction]
pub(crate) fn typed_scalar(x: pyo3_dlpack::Tensor0<f64>) -> f64 {
    x.as_array()[()]
}

/// The elements of any real tensor converted to float64, row-major
/// (`PyTensor::to_vec_as`), and as an `ndarray` of the tensor's rank.
#[pyfunction]
pub(crate) fn cast_f64(tensor: PyTensor) -> PyResult<(Vec<f64>, Vec<usize>)> {
    let values = tensor.to_vec_as::<f64>()?;
    let array = tensor.to_array_as::<f64, ndarray::IxDyn>()?;
    assert_eq!(array.iter().copied().collect::<Vec<_>>(), values);
    Ok((values, array.shape().to_vec()))
}

/// The elements converted to int8 (wrapping, truncating: `as`).
#[pyfunction]
pub(crate) fn cast_i8(tensor: PyTensor) -> PyResult<Vec<i8>> {
    Ok(tensor.to_vec_as::<i8>()?)
}
