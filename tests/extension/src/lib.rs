//! The Python extension the pytest suite drives (`tests/python/`): it
//! exports tensors (with drop counting) and imports them (`PyTensor`).
//!
//! Every value it exports carries a [`Tracked`] guard that counts creations
//! and drops, so tests can assert that each exported value is dropped exactly
//! once, whichever path its capsules take.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::PyClassInitializer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyTuple};
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DLPackTensor, DataType, Device, FromDLPack,
    ImportOptions, IntoDLPack, PyTensor, RawBuffer, TensorInfo,
};

static CREATED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
/// Drops that happened while the dropping thread held the GIL.
static DROPPED_WITH_GIL: AtomicUsize = AtomicUsize::new(0);

/// Counts one creation now and one drop when dropped.
struct DropGuard;

impl DropGuard {
    fn new() -> Self {
        CREATED.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        // SAFETY: PyGILState_Check may be called on any thread, attached or not.
        if unsafe { pyo3::ffi::PyGILState_Check() } == 1 {
            DROPPED_WITH_GIL.fetch_add(1, Ordering::SeqCst);
        }
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tensor over some storage, with an explicit layout and a drop counter.
struct Tracked<D> {
    data: D,
    dtype: Option<DataType>,
    shape: Option<Vec<i64>>,
    strides: Option<Vec<i64>>,
    byte_offset: usize,
    device: Option<Device>,
    read_only: bool,
    _guard: DropGuard,
}

impl<D> Tracked<D> {
    fn new(data: D) -> Self {
        Self {
            data,
            dtype: None,
            shape: None,
            strides: None,
            byte_offset: 0,
            device: None,
            read_only: false,
            _guard: DropGuard::new(),
        }
    }
}

impl<D: pyo3_dlpack::TensorData + Send + Sync + 'static> IntoDLPack for Tracked<D> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let mut builder = TensorInfo::builder(&self.data)
            .maybe_strides(self.strides.as_ref())
            .byte_offset(self.byte_offset)
            .read_only(self.read_only);
        if let Some(shape) = &self.shape {
            builder = builder.shape(shape);
        }
        if let Some(dtype) = self.dtype {
            builder = builder.dtype(dtype);
        }
        if let Some(device) = self.device {
            builder = builder.device(device);
        }
        builder.build()
    }
}

/// `(created, dropped, dropped while holding the GIL)` counts of exported values so far.
#[pyfunction]
fn drop_counts() -> (usize, usize, usize) {
    (
        CREATED.load(Ordering::SeqCst),
        DROPPED.load(Ordering::SeqCst),
        DROPPED_WITH_GIL.load(Ordering::SeqCst),
    )
}

/// A bfloat16 value whose `Drop` runs Python code that clears any pending
/// exception, as a careless `Drop` (or a `Py<…>` whose `__del__` runs) could.
struct ClobbersErrorsOnDrop {
    data: AlignedBuffer<half::bf16>,
    _guard: DropGuard,
}

impl IntoDLPack for ClobbersErrorsOnDrop {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.data).build()
    }
}

impl Drop for ClobbersErrorsOnDrop {
    fn drop(&mut self) {
        Python::attach(|py| {
            let _ = PyErr::take(py);
            let _ = py.run(c"import gc", None, None);
        });
    }
}

/// A versioned capsule that is the only owner of a `ClobbersErrorsOnDrop`.
#[pyfunction]
fn clobbering_capsule(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyCapsule>> {
    let value = ClobbersErrorsOnDrop {
        data: AlignedBuffer::zeroed(n),
        _guard: DropGuard::new(),
    };
    value.into_capsule(py, CapsuleFormat::Versioned)
}

fn parse_dtype(name: &str) -> PyResult<DataType> {
    name.parse::<DataType>()
        .map_err(|err| PyValueError::new_err(err.to_string()))
}

/// `n` elements of `dtype` in a typed `storage` (`"vec"`, `"box"`, `"arc"`
/// or `"aligned"`), element `i` being `i` converted to the type (`i % 2` for
/// bool, `i - i·j` for complex), so Python can compare with its own arange.
#[pyfunction]
#[pyo3(signature = (dtype, n, storage="aligned"))]
fn arange(dtype: &str, n: usize, storage: &str) -> PyResult<DLPackTensor> {
    macro_rules! typed {
        ($ty:ty, $convert:expr) => {{
            let values: Vec<$ty> = (0..n).map($convert).collect();
            export_typed(values, storage)
        }};
    }
    match dtype {
        "bool" => typed!(bool, |i| i % 2 == 1),
        "int8" => typed!(i8, |i| i as i8),
        "int16" => typed!(i16, |i| i as i16),
        "int32" => typed!(i32, |i| i as i32),
        "int64" => typed!(i64, |i| i as i64),
        "uint8" => typed!(u8, |i| i as u8),
        "uint16" => typed!(u16, |i| i as u16),
        "uint32" => typed!(u32, |i| i as u32),
        "uint64" => typed!(u64, |i| i as u64),
        "float16" => typed!(half::f16, |i| half::f16::from_f32(i as f32)),
        "bfloat16" => typed!(half::bf16, |i| half::bf16::from_f32(i as f32)),
        "float32" => typed!(f32, |i| i as f32),
        "float64" => typed!(f64, |i| i as f64),
        "complex64" => typed!(num_complex::Complex<f32>, |i| num_complex::Complex::new(
            i as f32,
            -(i as f32)
        )),
        "complex128" => typed!(num_complex::Complex<f64>, |i| num_complex::Complex::new(
            i as f64,
            -(i as f64)
        )),
        other => Err(PyValueError::new_err(format!(
            "arange: no Rust type for {other:?}"
        ))),
    }
}

fn export_typed<T: pyo3_dlpack::Element>(values: Vec<T>, storage: &str) -> PyResult<DLPackTensor> {
    let tensor = match storage {
        "vec" => DLPackTensor::new(Tracked::new(values)),
        "box" => DLPackTensor::new(Tracked::new(values.into_boxed_slice())),
        "arc" => DLPackTensor::new(Tracked::new(std::sync::Arc::<[T]>::from(values))),
        "aligned" => DLPackTensor::new(Tracked::new(AlignedBuffer::from_slice(&values))),
        other => return Err(PyValueError::new_err(format!("unknown storage {other:?}"))),
    };
    Ok(tensor?)
}

/// Exports a copy of `data` (in a 64-byte-aligned buffer) as a tensor of
/// `dtype` with the given layout. The layout is checked by `TensorInfo`.
#[pyfunction]
#[pyo3(signature = (data, dtype, shape, strides=None, byte_offset=0, read_only=false))]
fn from_bytes(
    data: &[u8],
    dtype: &str,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    byte_offset: usize,
    read_only: bool,
) -> PyResult<DLPackTensor> {
    let mut tracked = Tracked::new(AlignedBuffer::from_slice(data));
    tracked.dtype = Some(parse_dtype(dtype)?);
    tracked.shape = Some(shape);
    tracked.strides = strides;
    tracked.byte_offset = byte_offset;
    tracked.read_only = read_only;
    Ok(DLPackTensor::new(tracked)?)
}

/// A host buffer that claims to live on another device (to test device
/// negotiation without that device): `device_type`/`device_id` are DLPack codes.
#[pyfunction]
fn on_device(n: usize, device_type: i32, device_id: i32) -> PyResult<DLPackTensor> {
    let memory = AlignedBuffer::<f32>::zeroed(n);
    // SAFETY: the memory is the `AlignedBuffer` stored next to the RawBuffer in
    // the same value, so it lives exactly as long; nothing else touches it.
    let raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), n * 4, Device::cpu()) }
        .with_dtype(DataType::F32);
    struct OnDevice {
        raw: RawBuffer,
        device: Device,
        _memory: AlignedBuffer<f32>,
        _guard: DropGuard,
    }
    impl IntoDLPack for OnDevice {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            TensorInfo::builder(&self.raw).device(self.device).build()
        }
    }
    let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
    Ok(DLPackTensor::new(OnDevice {
        raw,
        device,
        _memory: memory,
        _guard: DropGuard::new(),
    })?)
}

/// A bare capsule owning a fresh `arange` of float32 (for capsule consumers).
#[pyfunction]
fn capsule(py: Python<'_>, n: usize, versioned: bool) -> PyResult<Bound<'_, PyCapsule>> {
    let values = Tracked::new(AlignedBuffer::from_fn(n, |i| i as f32));
    values.into_capsule(py, format(versioned))
}

/// A bare capsule sharing ownership of an existing exporter's value.
#[pyfunction]
fn capsule_of<'py>(
    py: Python<'py>,
    tensor: &DLPackTensor,
    versioned: bool,
) -> PyResult<Bound<'py, PyCapsule>> {
    tensor.to_capsule(py, format(versioned))
}

fn format(versioned: bool) -> CapsuleFormat {
    if versioned {
        CapsuleFormat::Versioned
    } else {
        CapsuleFormat::Legacy
    }
}

/// Byte `index` of the exported memory, read from Rust (to see consumers' writes).
#[pyfunction]
fn read_byte(tensor: &DLPackTensor, index: usize) -> PyResult<u8> {
    let info = tensor.tensor_info()?;
    let bytes = info.numel() * info.dtype().itemsize();
    if index >= bytes || !info.is_contiguous() || !info.device().is_host_accessible() {
        return Err(PyValueError::new_err(
            "read_byte: index outside a contiguous host tensor",
        ));
    }
    let byte = info.data_ptr().cast::<u8>().wrapping_add(index);
    // SAFETY: the checked TensorInfo describes `bytes` contiguous host bytes
    // from `data_ptr`, alive while `tensor` is borrowed; `index < bytes`.
    Ok(unsafe { byte.read_volatile() })
}

// ---------------------------------------------------------------- derive

/// A derived exporter: an image whose layout and flags come from its fields.
#[derive(IntoDLPack)]
struct DerivedImage {
    #[dlpack(data)]
    pixels: AlignedBuffer<u8>,
    #[dlpack(shape)]
    shape: [usize; 3],
    #[dlpack(strides)]
    strides: Option<[i64; 3]>,
    #[dlpack(read_only)]
    frozen: bool,
    _guard: DropGuard,
}

/// `height × width × 3` bytes, pixel `i` holding `i % 256`; `channels_first`
/// describes the same bytes as `(3, H, W)` through strides.
#[pyfunction]
#[pyo3(signature = (height, width, channels_first=false, frozen=false))]
fn derived_image(height: usize, width: usize, channels_first: bool, frozen: bool) -> DerivedImage {
    let n = height * width * 3;
    let (shape, strides) = if channels_first {
        ([3, height, width], Some([1, 3 * width as i64, 3]))
    } else {
        ([height, width, 3], None)
    };
    DerivedImage {
        pixels: AlignedBuffer::from_fn(n, |i| (i % 256) as u8),
        shape,
        strides,
        frozen,
        _guard: DropGuard::new(),
    }
}

/// Raw memory with a runtime dtype and a declared device (host memory that
/// claims `device_type:device_id`, to test device handling without one).
#[derive(IntoDLPack)]
struct DerivedRaw {
    #[dlpack(data)]
    raw: RawBuffer,
    #[dlpack(shape)]
    shape: Vec<i64>,
    #[dlpack(dtype)]
    dtype: DataType,
    #[dlpack(device)]
    device: Device,
    _memory: AlignedBuffer<u8>,
}

#[pyfunction]
fn derived_raw(
    nbytes: usize,
    dtype: &str,
    shape: Vec<i64>,
    device_type: i32,
    device_id: i32,
) -> PyResult<DerivedRaw> {
    let memory = AlignedBuffer::<u8>::zeroed(nbytes);
    // SAFETY: the memory is stored in the same value as the RawBuffer, so it
    // lives exactly as long; nothing else touches it.
    let raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), nbytes, Device::cpu()) };
    Ok(DerivedRaw {
        raw,
        shape,
        dtype: parse_dtype(dtype)?,
        device: Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id),
        _memory: memory,
    })
}

/// A derived importer with every constraint.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous, writable)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(data)]
    data: *mut f32,
}

/// Adds `value` to the diagonal in place; returns the old trace.
#[pyfunction]
fn add_to_diagonal(mut m: Matrix, value: f32) -> PyResult<f32> {
    let [rows, cols] = m.shape;
    let _ = m.data; // the derived pointer equals the slice's start
    let cells = m.tensor.as_slice_mut::<f32>()?;
    let mut trace = 0.0;
    for i in 0..rows.min(cols) {
        trace += cells[i * cols + i];
        cells[i * cols + i] += value;
    }
    Ok(trace)
}

/// What a lenient derived importer saw.
#[derive(FromDLPack)]
struct Anything {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: Vec<usize>,
    #[dlpack(strides)]
    strides: Vec<i64>,
    #[dlpack(device)]
    device: Device,
    #[dlpack(dtype)]
    dtype: DataType,
    #[dlpack(read_only)]
    read_only: bool,
    #[dlpack(data)]
    address: usize,
}

#[pyfunction]
fn derived_describe(t: Anything) -> (Vec<usize>, Vec<i64>, String, String, bool, bool) {
    let same_address = t.address == t.tensor.data_ptr() as usize;
    (
        t.shape,
        t.strides,
        t.device.to_string(),
        t.dtype.to_string(),
        t.read_only,
        same_address,
    )
}

/// The #[pyclass] pattern: a Python class with its own methods that also
/// speaks DLPack, by extending `DLPackTensor`.
#[pyclass(extends = DLPackTensor)]
struct Spectrum {
    samples: std::sync::Arc<Samples>,
}

#[derive(IntoDLPack)]
struct Samples {
    #[dlpack(data)]
    values: AlignedBuffer<f32>,
    _guard: DropGuard,
}

#[pymethods]
impl Spectrum {
    #[new]
    #[pyo3(signature = (n, writable=false))]
    fn new(n: usize, writable: bool) -> PyResult<PyClassInitializer<Self>> {
        let samples = std::sync::Arc::new(Samples {
            values: AlignedBuffer::from_fn(n, |i| i as f32),
            _guard: DropGuard::new(),
        });
        if writable {
            // SAFETY: `total` reads f32s (any bits are valid) and the tests
            // never run it while a consumer writes (single-threaded).
            unsafe { DLPackTensor::with_subclass_writable(samples.clone(), Self { samples }) }
        } else {
            DLPackTensor::with_subclass(samples.clone(), Self { samples })
        }
    }

    /// A method of the class itself, reading the shared samples from Rust.
    fn total(&self) -> f32 {
        self.samples.values.iter().sum()
    }
}

// ---------------------------------------------------------------- import

/// Everything a `PyTensor` reports, as a dict.
#[pyfunction]
fn describe<'py>(py: Python<'py>, tensor: PyTensor) -> PyResult<Bound<'py, PyDict>> {
    describe_tensor(py, &tensor)
}

fn describe_tensor<'py>(py: Python<'py>, tensor: &PyTensor) -> PyResult<Bound<'py, PyDict>> {
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
    d.set_item("copied", tensor.is_copied())?;
    d.set_item("contiguous", tensor.is_contiguous())?;
    d.set_item("data_ptr", tensor.data_ptr() as usize)?;
    Ok(d)
}

/// `describe`, importing with explicit options.
#[pyfunction]
#[pyo3(signature = (obj, *, max_version=None, stream=None, dl_device=None, copy=None))]
fn import_with<'py>(
    obj: &Bound<'py, PyAny>,
    max_version: Option<(u32, u32)>,
    stream: Option<i64>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = ImportOptions::new();
    if let Some((major, minor)) = max_version {
        options = options.with_max_version(major, minor);
    }
    if let Some(stream) = stream {
        options = options.stream(stream);
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
    describe_tensor(obj.py(), &PyTensor::from_pyany_with(obj, &options)?)
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

/// A value Python can compare: numbers as float or int, complex as (re, im).
trait ToPy {
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

fn list<'py, T: ToPy>(
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
fn to_list<'py>(py: Python<'py>, tensor: PyTensor, as_type: &str) -> PyResult<Bound<'py, PyList>> {
    with_type!(as_type, |T| list(py, tensor.to_vec::<T>()?))
}

/// The elements read with `as_slice::<type>()` (contiguous tensors only).
#[pyfunction]
fn slice_values<'py>(
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
fn array_values<'py>(
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
fn fill(mut tensor: PyTensor, value: f64, as_type: &str, through_ndarray: bool) -> PyResult<()> {
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
fn add_into(mut out: PyTensor, inp: PyTensor) -> PyResult<()> {
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
fn drop_on_thread(py: Python<'_>, tensor: PyTensor) {
    py.detach(|| std::thread::spawn(move || drop(tensor)).join())
        .expect("the dropping thread panicked");
}

/// `describe`, through a borrowed view (`PyTensor::with_borrowed`).
#[pyfunction]
fn describe_borrowed<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    PyTensor::with_borrowed(obj, |tensor| describe_tensor(obj.py(), tensor))?
}

/// The sum of a float32 tensor read through a borrowed view.
#[pyfunction]
fn sum_borrowed(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    PyTensor::with_borrowed(obj, |tensor| -> PyResult<f64> {
        Ok(tensor.to_vec::<f32>()?.iter().map(|&x| f64::from(x)).sum())
    })?
}

/// A lenient derived importer: a float32 vector of any layout.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 1)]
struct VectorIn {
    #[dlpack(tensor)]
    _tensor: PyTensor,
    #[dlpack(shape)]
    len: [usize; 1],
}

/// Imports through the derive and returns the length (the derived path's cost).
#[pyfunction]
fn consume_derived(v: VectorIn) -> usize {
    v.len[0]
}

/// Borrows and returns ndim (the borrowed path's cost).
#[pyfunction]
fn consume_borrowed(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    PyTensor::with_borrowed(obj, PyTensor::ndim)
}

// ---------------------------------------------------------------- timing floors

/// Takes any object and does nothing (the floor of a #[pyfunction] call).
#[pyfunction]
fn noop(obj: &Bound<'_, PyAny>) -> usize {
    obj.as_ptr() as usize
}

/// Imports a tensor and drops it (the import path's cost).
#[pyfunction]
fn consume(tensor: PyTensor) -> usize {
    tensor.ndim()
}

#[pymodule]
fn dlpack_testext(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DLPackTensor>()?;
    m.add_function(wrap_pyfunction!(drop_counts, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    m.add_function(wrap_pyfunction!(consume, m)?)?;
    m.add_function(wrap_pyfunction!(describe_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(sum_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(consume_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(consume_derived, m)?)?;
    m.add_function(wrap_pyfunction!(derived_image, m)?)?;
    m.add_function(wrap_pyfunction!(derived_raw, m)?)?;
    m.add_function(wrap_pyfunction!(add_to_diagonal, m)?)?;
    m.add_function(wrap_pyfunction!(derived_describe, m)?)?;
    m.add_class::<Spectrum>()?;
    m.add_function(wrap_pyfunction!(clobbering_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(on_device, m)?)?;
    m.add_function(wrap_pyfunction!(capsule, m)?)?;
    m.add_function(wrap_pyfunction!(capsule_of, m)?)?;
    m.add_function(wrap_pyfunction!(read_byte, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(import_with, m)?)?;
    m.add_function(wrap_pyfunction!(to_list, m)?)?;
    m.add_function(wrap_pyfunction!(slice_values, m)?)?;
    m.add_function(wrap_pyfunction!(array_values, m)?)?;
    m.add_function(wrap_pyfunction!(fill, m)?)?;
    m.add_function(wrap_pyfunction!(add_into, m)?)?;
    m.add_function(wrap_pyfunction!(drop_on_thread, m)?)?;
    Ok(())
}
