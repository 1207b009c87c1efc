//! `DLPackTensor`: the Python object an exported Rust value becomes.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use pyo3::{PyClass, PyClassInitializer};

use crate::DLPackError;
use crate::export::export_shared;
use crate::export::info::TensorInfo;
use crate::export::into::IntoDLPack;
use crate::export::plan::{CapsuleFormat, ExportRequest};

/// A Rust tensor as a Python object that speaks DLPack: `__dlpack__` and
/// `__dlpack_device__`, so `numpy.from_dlpack`, `torch.from_dlpack`,
/// `jax.numpy.from_dlpack`, `cupy.from_dlpack` and every array-API library
/// import it without a copy.
///
/// It can be exported **any number of times**: each `__dlpack__` call makes a
/// fresh capsule that shares ownership of the Rust value, which is dropped
/// once the Python object and every consumer are gone (on whichever thread
/// lets go last).
///
/// `__dlpack__` follows the DLPack Python specification and what real
/// consumers need:
/// - no `max_version` (or a major below 1) gives a legacy `"dltensor"`
///   capsule; `max_version=(1, x)` or later a `"dltensor_versioned"` 1.3 one,
///   writable unless the value is read-only (NumPy only makes writable arrays
///   from versioned capsules); a read-only value refuses the legacy capsule
///   (`BufferError`, unless `copy=True`), and a value of unknown
///   [`Writability`](crate::Writability) (a `PyTensor` imported from a legacy
///   capsule) gets the legacy capsule, or `READ_ONLY` in a versioned one;
/// - `stream` must be `None` or `-1` on devices without streams; CUDA and
///   ROCm follow the specification's table;
/// - `dl_device` may be the tensor's device, or `(1, 0)` (CPU) for memory
///   the CPU can reach; `copy=True` copies host memory and sets `IS_COPIED`;
///   `copy=False` never copies;
/// - an export that cannot be done raises `BufferError`; a malformed argument
///   value raises `ValueError` (an integer out of its field's range,
///   such as `stream=2**70`, `OverflowError`), never `TypeError` (which consumers read as
///   "old producer" and retry without keywords); positional arguments are a
///   `TypeError`, as the specification requires.
///
/// Python also sees `shape`, `strides` (in elements), `dtype` (a name such as
/// `"float32"`), `device` (`"cpu:0"`), `ndim`, `read_only` and `data_ptr`.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{AlignedBuffer, DLPackTensor};
///
/// #[pyfunction]
/// fn ramp(n: usize) -> PyResult<DLPackTensor> {
///     Ok(DLPackTensor::new(AlignedBuffer::from_fn(n, |i| i as f32))?)
/// }
/// # Python::attach(|py| {
/// #     let t = Bound::new(py, ramp(4).unwrap()).unwrap();
/// #     assert_eq!(t.repr().unwrap().to_string(), "DLPackTensor(shape=(4,), dtype=float32, device=cpu:0)");
/// # });
/// ```
#[pyclass(frozen, subclass, module = "pyo3_dlpack", name = "DLPackTensor")]
pub struct DLPackTensor {
    value: Arc<dyn IntoDLPack>,
    /// The value's description, checked once when wrapped.
    info: Described,
}

/// The stored description of the value next to it.
struct Described(TensorInfo<'static>);

// SAFETY: the description holds the address of memory owned by the value
// stored next to it (an `IntoDLPack`, so `Send + Sync`), which outlives it;
// the address is only read through exports of that value, never through
// `&Described` alone, and the other fields are plain data.
unsafe impl Send for Described {}
// SAFETY: as above; `&Described` only reads plain fields.
unsafe impl Sync for Described {}

impl std::fmt::Debug for DLPackTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe(&self.info.0))
    }
}

impl DLPackTensor {
    /// Wraps a value, checking now that it describes a valid tensor (so a
    /// shape that does not fit its buffer fails here, not in the consumer).
    pub fn new<T: IntoDLPack>(value: T) -> Result<Self, DLPackError> {
        Self::from_arc(Arc::new(value))
    }

    /// Wraps a value that is already shared.
    ///
    /// The value is described ([`IntoDLPack::tensor_info`]) and checked once,
    /// here; every export uses that description (the value is behind an
    /// `Arc` and cannot change).
    ///
    /// If other clones of the `Arc` (or weak references) exist, Rust code may
    /// read the memory through them while a consumer writes it, so the value
    /// is exported **read-only**. [`from_arc_writable`](Self::from_arc_writable)
    /// lifts that, on your promise.
    pub fn from_arc(value: Arc<dyn IntoDLPack>) -> Result<Self, DLPackError> {
        let shared = Arc::strong_count(&value) > 1 || Arc::weak_count(&value) > 0;
        let mut info = value.tensor_info()?.detach();
        if shared {
            info.force_read_only();
        }
        Ok(Self {
            value,
            info: Described(info),
        })
    }

    /// Wraps a shared value and exports it writable (unless it is read-only
    /// itself).
    ///
    /// # Safety
    ///
    /// While any consumer may write the memory (a NumPy array or torch tensor
    /// made from this object is alive), Rust code must not read or write it
    /// through the other clones of the `Arc` at the same time as a consumer
    /// writes it (consumers write without holding the GIL), and must not read
    /// elements whose types have invalid bit patterns (`bool`) after a
    /// consumer may have written them.
    pub unsafe fn from_arc_writable(value: Arc<dyn IntoDLPack>) -> Result<Self, DLPackError> {
        let info = value.tensor_info()?.detach();
        Ok(Self {
            value,
            info: Described(info),
        })
    }

    /// The initializer of a `#[pyclass(extends = DLPackTensor)]`: your own
    /// Python class, with your own methods, that also speaks DLPack. Keep
    /// an `Arc` of the value in your class to use it from Rust.
    ///
    /// As the value is shared with your class, it is exported read-only (see
    /// [`from_arc`](Self::from_arc)); [`with_subclass_writable`](Self::with_subclass_writable)
    /// exports it writable on your promise.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::{AlignedBuffer, DLPackTensor, IntoDLPack};
    ///
    /// #[derive(IntoDLPack)]
    /// struct Samples {
    ///     #[dlpack(data)]
    ///     values: AlignedBuffer<f32>,
    /// }
    ///
    /// #[pyclass(extends = DLPackTensor)]               // 1. extend DLPackTensor
    /// struct Signal {
    ///     samples: Arc<Samples>,                        // 2. share the value with it
    /// }
    ///
    /// #[pymethods]
    /// impl Signal {
    ///     #[new]
    ///     fn new(n: usize) -> PyResult<PyClassInitializer<Self>> {
    ///         let samples = Arc::new(Samples { values: AlignedBuffer::zeroed(n) });
    ///         DLPackTensor::with_subclass(samples.clone(), Self { samples }) // 3. build both
    ///     }
    ///
    ///     fn total(&self) -> f32 {                       // your own methods
    ///         self.samples.values.iter().sum()
    ///     }
    /// }
    /// // Python: s = Signal(4); s.total(); np.from_dlpack(s); torch.from_dlpack(s)
    /// ```
    pub fn with_subclass<T, S>(value: Arc<T>, subclass: S) -> PyResult<PyClassInitializer<S>>
    where
        T: IntoDLPack,
        S: PyClass<BaseType = DLPackTensor>,
    {
        Ok(PyClassInitializer::from(Self::from_arc(value)?).add_subclass(subclass))
    }

    /// Like [`with_subclass`](Self::with_subclass), exporting writable.
    ///
    /// # Safety
    ///
    /// As for [`from_arc_writable`](Self::from_arc_writable): your class's
    /// methods must not access the memory while a consumer may be writing it.
    pub unsafe fn with_subclass_writable<T, S>(
        value: Arc<T>,
        subclass: S,
    ) -> PyResult<PyClassInitializer<S>>
    where
        T: IntoDLPack,
        S: PyClass<BaseType = DLPackTensor>,
    {
        // SAFETY: the caller's promise is exactly `from_arc_writable`'s.
        let base = unsafe { Self::from_arc_writable(value) }?;
        Ok(PyClassInitializer::from(base).add_subclass(subclass))
    }

    /// The shared value and its checked description (for the exchange API).
    pub(crate) fn parts(&self) -> (&Arc<dyn IntoDLPack>, &TensorInfo<'static>) {
        (&self.value, &self.info.0)
    }

    /// The value's own description, now. Exports use the one checked when
    /// the value was wrapped, and the read-only flag forced on a shared `Arc`
    /// (see [`from_arc`](Self::from_arc)) does not show here.
    pub fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.value.tensor_info()
    }

    /// A bare capsule of the chosen format that shares ownership of the value
    /// (for consumers that take capsules, such as `torch.utils.dlpack.from_dlpack`).
    pub fn to_capsule<'py>(
        &self,
        py: Python<'py>,
        format: CapsuleFormat,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        export_shared(
            py,
            &self.value,
            &self.info.0,
            &ExportRequest::of_format(format),
        )
    }
}

fn describe(info: &TensorInfo<'_>) -> String {
    let shape: Vec<String> = info.dims_slices().0.iter().map(|d| d.to_string()).collect();
    let trailing_comma = if shape.len() == 1 { "," } else { "" };
    let read_only = if info.is_read_only() {
        ", read_only=True"
    } else {
        ""
    };
    format!(
        "DLPackTensor(shape=({}{trailing_comma}), dtype={}, device={}{read_only})",
        shape.join(", "),
        info.dtype(),
        info.device()
    )
}

#[pymethods]
impl DLPackTensor {
    /// Exports the tensor as a DLPack capsule (see the type's documentation).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let request = ExportRequest::from_python(stream, max_version, dl_device, copy)?;
        export_shared(py, &self.value, &self.info.0, &request)
    }

    /// The DLPack C exchange API table of this type (DLPack 1.3): consumers
    /// such as tvm-ffi import `DLPackTensor`s through it without a Python call.
    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
        crate::export::exchange::capsule(py)
    }

    /// `(device_type, device_id)` as DLPack codes, e.g. `(1, 0)` for the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        let device = self.info.0.device();
        (device.device_type.code(), device.device_id)
    }

    /// Extents, as a tuple of ints.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.info.0.dims_slices().0)
    }

    /// Strides in elements, as a tuple of ints.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.info.0.dims_slices().1)
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.info.0.ndim()
    }

    /// Element type name, such as `"float32"` or `"bfloat16"`.
    #[getter]
    fn dtype(&self) -> String {
        self.info.0.dtype().to_string()
    }

    /// Device, such as `"cpu:0"` or `"cuda:1"`.
    #[getter]
    fn device(&self) -> String {
        self.info.0.device().to_string()
    }

    /// Whether consumers get a read-only tensor.
    #[getter]
    fn read_only(&self) -> bool {
        self.info.0.is_read_only()
    }

    /// Address of the first element, to compare with a consumer's (zero-copy checks).
    #[getter]
    fn data_ptr(&self) -> usize {
        self.info.0.data_ptr() as usize
    }

    fn __repr__(&self) -> String {
        describe(&self.info.0)
    }
}
