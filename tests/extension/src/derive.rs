//! `#[derive(IntoDLPack, FromDLPack)]` and the `#[pyclass]` pattern.

#[allow(unused_imports)]
use super::*;

/// A derived exporter: an image whose layout and flags come from its fields.
#[derive(IntoDLPack)]
pub(crate) struct DerivedImage {
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
pub(crate) fn derived_image(
    height: usize,
    width: usize,
    channels_first: bool,
    frozen: bool,
) -> DerivedImage {
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
pub(crate) struct DerivedRaw {
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
pub(crate) fn derived_raw(
    nbytes: usize,
    dtype: &str,
    shape: Vec<i64>,
    device_type: i32,
    device_id: i32,
) -> PyResult<DerivedRaw> {
    let memory = AlignedBuffer::<u8>::zeroed(nbytes);
    let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
    // SAFETY: the memory is stored in the same value as the RawBuffer, so it
    // lives exactly as long; nothing else touches it. The device is the
    // tests' claim: such a value is only described, never read as `device`'s.
    let raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), nbytes, device) };
    Ok(DerivedRaw {
        raw,
        shape,
        dtype: parse_dtype(dtype)?,
        device,
        _memory: memory,
    })
}

/// An ndarray array as the data field: exported with its own layout.
#[derive(IntoDLPack)]
pub(crate) struct DerivedArray {
    #[dlpack(data)]
    values: ndarray::Array3<f32>,
    _guard: DropGuard,
}

/// A `(2, 3, 4)` float32 array holding `100 i + 10 j + k` at `[i, j, k]`,
/// laid out as `layout` says: `"c"`, `"f"` (Fortran order), `"reversed"`
/// (its last axis inverted in place: negative strides from an offset) or
/// `"sliced"` (every other element of a `(2, 3, 8)` array). Returns the
/// value and the address of its `[0, 0, 0]` element.
#[pyfunction]
pub(crate) fn derived_array(layout: &str) -> PyResult<(DerivedArray, usize)> {
    use ndarray::{Array3, Axis, ShapeBuilder, s};
    let value = |(i, j, k): (usize, usize, usize)| (100 * i + 10 * j + k) as f32;
    let values = match layout {
        "c" => Array3::from_shape_fn((2, 3, 4), value),
        "f" => Array3::from_shape_fn((2, 3, 4).f(), value),
        "reversed" => {
            let mut a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| value((i, j, 3 - k)));
            a.invert_axis(Axis(2));
            a
        }
        "sliced" => {
            let mut a = Array3::from_shape_fn((2, 3, 8), |(i, j, k)| value((i, j, k / 2)));
            a.slice_collapse(s![.., .., ..;2]);
            a
        }
        other => return Err(PyValueError::new_err(format!("unknown layout {other:?}"))),
    };
    let first = values.as_ptr() as usize;
    Ok((
        DerivedArray {
            values,
            _guard: DropGuard::new(),
        },
        first,
    ))
}

/// A derived importer with every constraint.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous, writable)]
pub(crate) struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
    #[dlpack(data)]
    data: *mut f32,
}

/// Adds `value` to the diagonal in place; returns the old trace.
#[pyfunction]
pub(crate) fn add_to_diagonal(mut m: Matrix, value: f32) -> PyResult<f32> {
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

/// A derived float64 vector.
#[derive(FromDLPack)]
#[dlpack(dtype = f64, ndim = 1)]
pub(crate) struct Floats {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

/// A derived int64 vector.
#[derive(FromDLPack)]
#[dlpack(dtype = i64, ndim = 1)]
pub(crate) struct Ints {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

/// Dispatch over derived variants: the first that fits.
#[derive(FromPyObject)]
pub(crate) enum DerivedNumbers {
    F64(Floats),
    I64(Ints),
}

/// Which variant took `x`, and its sum.
#[pyfunction]
pub(crate) fn derived_enum_sum(x: DerivedNumbers) -> PyResult<(&'static str, f64)> {
    Ok(match x {
        DerivedNumbers::F64(x) => ("f64", x.tensor.to_vec::<f64>()?.iter().sum()),
        DerivedNumbers::I64(x) => ("i64", x.tensor.to_vec::<i64>()?.iter().sum::<i64>() as f64),
    })
}

/// What a lenient derived importer saw.
#[derive(FromDLPack)]
pub(crate) struct Anything {
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
pub(crate) fn derived_describe(t: Anything) -> (Vec<usize>, Vec<i64>, String, String, bool, bool) {
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
pub(crate) struct Spectrum {
    samples: std::sync::Arc<Samples>,
}

#[derive(IntoDLPack)]
pub(crate) struct Samples {
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

/// A hand-written `FromDLPack` (no derive), made an argument type by `impl_from_pyobject!`.
pub(crate) struct HandVector<T> {
    tensor: PyTensor,
    element: std::marker::PhantomData<T>,
}

impl<T: pyo3_dlpack::Element> FromDLPack for HandVector<T> {
    fn from_dlpack(tensor: PyTensor) -> Result<Self, DLPackError> {
        tensor.ensure_dtype(T::DTYPE)?;
        tensor.ensure_ndim(1)?;
        Ok(Self {
            tensor,
            element: std::marker::PhantomData,
        })
    }
}

pyo3_dlpack::impl_from_pyobject!([T: pyo3_dlpack::Element] HandVector<T>);

/// The length and first element of a 1-D float64 tensor (`HandVector<f64>` as an argument).
#[pyfunction]
pub(crate) fn hand_vector_head(v: HandVector<f64>) -> PyResult<(usize, Option<f64>)> {
    let values = v.tensor.to_vec::<f64>()?;
    Ok((values.len(), values.first().copied()))
}

/// A derived mask of Rust `bool`s whose `Drop` reads them (as a user's type
/// may): exported read-only, so no consumer can write a byte other than 0
/// or 1 that this `Drop` would then read as a `bool`.
#[derive(IntoDLPack)]
pub(crate) struct DerivedMask {
    #[dlpack(data)]
    mask: Vec<bool>,
    _guard: DropGuard,
}

impl Drop for DerivedMask {
    fn drop(&mut self) {
        let set = self.mask.iter().filter(|&&b| b).count();
        MASK_BITS_SET_AT_DROP.store(set, Ordering::SeqCst);
    }
}

static MASK_BITS_SET_AT_DROP: AtomicUsize = AtomicUsize::new(usize::MAX);

/// `n` bools, every other one set.
#[pyfunction]
pub(crate) fn derived_mask(n: usize) -> DerivedMask {
    DerivedMask {
        mask: (0..n).map(|i| i % 2 == 1).collect(),
        _guard: DropGuard::new(),
    }
}

/// How many bools the last `DerivedMask` dropped held set.
#[pyfunction]
pub(crate) fn mask_bits_set_at_drop() -> usize {
    MASK_BITS_SET_AT_DROP.load(Ordering::SeqCst)
}

/// A hand-written exporter of a mask of `n` bools, which does not vouch
/// for them: exported read-only.
pub(crate) struct UnvouchedMask {
    mask: Vec<bool>,
    _guard: DropGuard,
}

impl IntoDLPack for UnvouchedMask {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.mask).build()
    }
}

#[pyfunction]
pub(crate) fn unvouched_mask(n: usize) -> PyResult<DLPackTensor> {
    Ok(DLPackTensor::new(UnvouchedMask {
        mask: vec![false; n],
        _guard: DropGuard::new(),
    })?)
}

/// `n` bools exported as a plain `Vec<bool>`, the whole value: no Rust code
/// reads it afterwards, so it is exported writable.
#[pyfunction]
pub(crate) fn plain_mask(n: usize) -> PyResult<DLPackTensor> {
    Ok(DLPackTensor::new(vec![false; n])?)
}

/// `n` bools returned as a `numpy.ndarray` (`Native::numpy` of a `Vec<bool>`).
#[pyfunction]
pub(crate) fn native_mask(n: usize) -> pyo3_dlpack::Native<Vec<bool>> {
    pyo3_dlpack::Native::numpy(vec![true; n])
}

/// A mask of `n` bools exported writable on the owner's promise
/// (`TensorInfoBuilder::writable_bool`): nothing reads it as bool again.
pub(crate) struct VouchedMask {
    mask: Vec<bool>,
    _guard: DropGuard,
}

impl IntoDLPack for VouchedMask {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        // SAFETY: nothing reads `mask` as bool: its only reader is `Drop`,
        // which frees it unread.
        unsafe { TensorInfo::builder(&self.mask).writable_bool() }.build()
    }
}

#[pyfunction]
pub(crate) fn vouched_mask(n: usize) -> PyResult<DLPackTensor> {
    Ok(DLPackTensor::new(VouchedMask {
        mask: vec![false; n],
        _guard: DropGuard::new(),
    })?)
}
