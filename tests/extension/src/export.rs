//! Exports: typed and raw buffers, declared devices, bare capsules.

#[allow(unused_imports)]
use super::*;

/// A dtype by name, with an `x{lanes}` suffix for several lanes (`float32x2`;
/// `complex64` is one lane: its `x` starts no suffix).
pub(crate) fn parse_dtype(name: &str) -> PyResult<DataType> {
    let suffixed = name.rsplit_once('x');
    let parsed = suffixed.map(|(scalar, lanes)| (scalar.parse::<DataType>(), lanes.parse::<u16>()));
    if let Some((Ok(scalar), Ok(lanes))) = parsed {
        return Ok(DataType::new(scalar.code, scalar.bits, lanes));
    }
    name.parse::<DataType>()
        .map_err(|err| PyValueError::new_err(err.to_string()))
}

/// `n` elements of `dtype` in a typed `storage` (`"vec"`, `"box"`, `"arc"`
/// or `"aligned"`), element `i` being `i` converted to the type (`i % 2` for
/// bool, `i - i·j` for complex), so Python can compare with its own arange.
#[pyfunction]
#[pyo3(signature = (dtype, n, storage="aligned"))]
pub(crate) fn arange(dtype: &str, n: usize, storage: &str) -> PyResult<DLPackTensor> {
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

pub(crate) fn export_typed<T: pyo3_dlpack::Element>(
    values: Vec<T>,
    storage: &str,
) -> PyResult<DLPackTensor> {
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
pub(crate) fn from_bytes(
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
/// `stream`: the CUDA stream the buffer says pending work writes it on.
#[pyfunction]
#[pyo3(signature = (n, device_type, device_id, stream=None))]
pub(crate) fn on_device(
    n: usize,
    device_type: i32,
    device_id: i32,
    stream: Option<usize>,
) -> PyResult<DLPackTensor> {
    let memory = AlignedBuffer::<f32>::zeroed(n);
    let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
    // SAFETY: the memory is the `AlignedBuffer` stored next to the RawBuffer in
    // the same value, so it lives exactly as long; nothing else touches it.
    // The device is the tests' claim: such a value is exported to the
    // stand-in driver or refused, and its memory is never read as `device`'s.
    let mut raw = unsafe { RawBuffer::new(memory.as_ptr().cast_mut().cast(), n * 4, device) }
        .with_dtype(DataType::F32);
    if let Some(stream) = stream {
        // SAFETY: the tests' promise: 1, 2 or a live stream of the memory's
        // device (the stand-in driver's, or a real one on a GPU machine).
        raw = unsafe { raw.with_stream(stream) };
    }
    struct OnDevice {
        raw: RawBuffer,
        _memory: AlignedBuffer<f32>,
        _guard: DropGuard,
    }
    impl IntoDLPack for OnDevice {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            TensorInfo::builder(&self.raw).build()
        }
    }
    Ok(DLPackTensor::new(OnDevice {
        raw,
        _memory: memory,
        _guard: DropGuard::new(),
    })?)
}

/// `0..n` float32 whose memory reports no length (`TensorData::byte_len`
/// is `None`): exported as described, never read by the crate itself.
#[pyfunction]
pub(crate) fn unmeasured(n: usize) -> PyResult<DLPackTensor> {
    struct Unmeasured(Vec<f32>);
    // SAFETY: the Vec's buffer, which does not move with the value, is its
    // memory, and holds float32s; no length is reported, so none is promised.
    unsafe impl pyo3_dlpack::TensorData for Unmeasured {
        fn data_ptr(&self) -> *mut std::ffi::c_void {
            self.0.as_ptr().cast_mut().cast()
        }
        fn byte_len(&self) -> Option<usize> {
            None
        }
    }
    impl IntoDLPack for Unmeasured {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            TensorInfo::builder(self)
                .dtype(DataType::F32)
                .shape([self.0.len()])
                .build()
        }
    }
    Ok(DLPackTensor::new(Unmeasured(
        (0..n).map(|i| i as f32).collect(),
    ))?)
}

/// Elements of `dtype` (float32 unless said) over memory the caller
/// allocated (stand-in CUDA memory: `device_type`/`device_id` are DLPack
/// codes), `nbytes` long from `address`, of `shape` and element `strides`
/// (row-major if none), read-only if said; `stream`: the CUDA stream pending
/// work writes it on. The caller keeps the memory alive while the tensor and
/// its exports live.
#[pyfunction]
#[pyo3(signature = (
    address, nbytes, device_type, device_id, shape, strides=None, stream=None, dtype="float32",
    read_only=false
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn over_memory(
    address: usize,
    nbytes: usize,
    device_type: i32,
    device_id: i32,
    shape: Vec<usize>,
    strides: Option<Vec<i64>>,
    stream: Option<usize>,
    dtype: &str,
    read_only: bool,
) -> PyResult<DLPackTensor> {
    let device = Device::new(pyo3_dlpack::DeviceType::from_code(device_type), device_id);
    // SAFETY: the test's promise: `nbytes` of memory on `device` at
    // `address`, alive while the tensor and its exports live.
    let mut raw = unsafe { RawBuffer::new(address as *mut std::ffi::c_void, nbytes, device) }
        .with_dtype(parse_dtype(dtype)?);
    if let Some(stream) = stream {
        // SAFETY: the tests' promise: 1, 2 or a live stream of the memory's
        // device (the stand-in driver's, or a real one on a GPU machine).
        raw = unsafe { raw.with_stream(stream) };
    }
    struct Over {
        raw: RawBuffer,
        shape: Vec<usize>,
        strides: Option<Vec<i64>>,
        read_only: bool,
        _guard: DropGuard,
    }
    impl IntoDLPack for Over {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            let builder = TensorInfo::builder(&self.raw)
                .shape(&self.shape)
                .read_only(self.read_only);
            match &self.strides {
                Some(strides) => builder.strides(strides).build(),
                None => builder.build(),
            }
        }
    }
    Ok(DLPackTensor::new(Over {
        raw,
        shape,
        strides,
        read_only,
        _guard: DropGuard::new(),
    })?)
}

/// A bare capsule owning a fresh `arange` of float32 (for capsule consumers).
#[pyfunction]
pub(crate) fn capsule(py: Python<'_>, n: usize, versioned: bool) -> PyResult<Bound<'_, PyCapsule>> {
    let values = Tracked::new(AlignedBuffer::from_fn(n, |i| i as f32));
    values.into_capsule(py, format(versioned))
}

/// A bare capsule sharing ownership of an existing exporter's value.
#[pyfunction]
pub(crate) fn capsule_of<'py>(
    py: Python<'py>,
    tensor: &DLPackTensor,
    versioned: bool,
) -> PyResult<Bound<'py, PyCapsule>> {
    tensor.to_capsule(py, format(versioned))
}

pub(crate) fn format(versioned: bool) -> CapsuleFormat {
    if versioned {
        CapsuleFormat::Versioned
    } else {
        CapsuleFormat::Legacy
    }
}

/// Byte `index` of the exported memory, read from Rust (to see consumers' writes).
#[pyfunction]
pub(crate) fn read_byte(tensor: &DLPackTensor, index: usize) -> PyResult<u8> {
    let info = tensor.info();
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

/// Four float32 zeros whose value panics when dropped (a user bug the deleter must contain).
#[pyfunction]
pub(crate) fn panicking_on_drop() -> PyResult<DLPackTensor> {
    struct PanicsOnDrop(AlignedBuffer<f32>);
    impl IntoDLPack for PanicsOnDrop {
        fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
            TensorInfo::new(&self.0, [4usize])
        }
    }
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("PanicsOnDrop::drop");
        }
    }
    Ok(DLPackTensor::new(PanicsOnDrop(AlignedBuffer::zeroed(4)))?)
}
