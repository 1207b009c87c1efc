//! Drop accounting: every exported value carries a guard counting its
//! creation and its drop (and whether the drop held the GIL).

#[allow(unused_imports)]
use super::*;

static CREATED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
/// Drops that happened while the dropping thread held the GIL.
static DROPPED_WITH_GIL: AtomicUsize = AtomicUsize::new(0);

/// Counts one creation now and one drop when dropped.
pub(crate) struct DropGuard;

impl DropGuard {
    pub(crate) fn new() -> Self {
        CREATED.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        // Not in the limited API: the abi3 build does not count these (only
        // the torch tests, which run on the main build, read the count).
        #[cfg(not(feature = "abi3"))]
        // SAFETY: PyGILState_Check may be called on any thread, attached or not.
        if unsafe { pyo3::ffi::PyGILState_Check() } == 1 {
            DROPPED_WITH_GIL.fetch_add(1, Ordering::SeqCst);
        }
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tensor over some storage, with an explicit layout and a drop counter.
pub(crate) struct Tracked<D> {
    pub(crate) data: D,
    pub(crate) dtype: Option<DataType>,
    pub(crate) shape: Option<Vec<i64>>,
    pub(crate) strides: Option<Vec<i64>>,
    pub(crate) byte_offset: usize,
    pub(crate) device: Option<Device>,
    pub(crate) read_only: bool,
    pub(crate) _guard: DropGuard,
}

impl<D> Tracked<D> {
    pub(crate) fn new(data: D) -> Self {
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
        // SAFETY: (`writable_bool`) `Tracked` never reads its data (its
        // `Drop` frees it unread; this method only describes it), so Rust
        // `bool`s in it may be written with any byte.
        let builder = unsafe { TensorInfo::builder(&self.data).writable_bool() };
        let mut builder = builder
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
            // SAFETY: the tests' claim, for values whose device handling is
            // tested without that device: such a value is only described
            // (and its export refused, or handed to the stand-in driver),
            // never read as `device`'s memory.
            builder = unsafe { builder.device_unchecked(device) };
        }
        builder.build()
    }
}

/// `(created, dropped, dropped while holding the GIL)` counts of exported values so far.
#[pyfunction]
pub(crate) fn drop_counts() -> (usize, usize, usize) {
    (
        CREATED.load(Ordering::SeqCst),
        DROPPED.load(Ordering::SeqCst),
        DROPPED_WITH_GIL.load(Ordering::SeqCst),
    )
}

/// A bfloat16 value whose `Drop` runs Python code that clears any pending
/// exception, as a careless `Drop` (or a `Py<…>` whose `__del__` runs) could.
pub(crate) struct ClobbersErrorsOnDrop {
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
pub(crate) fn clobbering_capsule(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyCapsule>> {
    let value = ClobbersErrorsOnDrop {
        data: AlignedBuffer::zeroed(n),
        _guard: DropGuard::new(),
    };
    value.into_capsule(py, CapsuleFormat::Versioned)
}

/// A CUDA value (never read: its memory is a made-up address) whose
/// `synchronize`, the user code `__dlpack__(stream=…)` runs, fails as
/// `how` says: "python" (a `RuntimeError`), "rust" (an `std::io::Error`)
/// or "panic".
pub(crate) struct FailsToSynchronize {
    memory: RawBuffer,
    how: String,
    _guard: DropGuard,
}

impl IntoDLPack for FailsToSynchronize {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.memory)
            .shape([4usize])
            .dtype(DataType::F32)
            .build()
    }

    fn synchronize(&self, _consumer_stream: i64) -> Result<(), DLPackError> {
        match self.how.as_str() {
            "python" => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the camera has not delivered the frame",
            )
            .into()),
            "rust" => Err(DLPackError::user(std::io::Error::other(
                "the weights file is truncated",
            ))),
            _ => panic!("synchronize panicked: {}", self.how),
        }
    }
}

#[pyfunction]
pub(crate) fn fails_to_synchronize(how: String) -> PyResult<DLPackTensor> {
    // SAFETY: 16 bytes of "device memory" at an address nothing reads: the
    // value is only described and its export refused.
    let memory = unsafe { RawBuffer::new(0x1000 as *mut std::ffi::c_void, 16, Device::cuda(0)) };
    let value = FailsToSynchronize {
        memory,
        how,
        _guard: DropGuard::new(),
    };
    Ok(DLPackTensor::new(value)?)
}

/// A float32 value whose description succeeds once (when it becomes a
/// `DLPackTensor`) and then fails with a Python `RuntimeError`, as a
/// `copy=True` export describes it again.
pub(crate) struct DescribedOnce {
    data: AlignedBuffer<f32>,
    described: AtomicUsize,
    _guard: DropGuard,
}

impl IntoDLPack for DescribedOnce {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        if self.described.fetch_add(1, Ordering::Relaxed) > 0 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the frame was recycled").into());
        }
        TensorInfo::builder(&self.data).build()
    }
}

#[pyfunction]
pub(crate) fn described_once(n: usize) -> PyResult<DLPackTensor> {
    let value = DescribedOnce {
        data: AlignedBuffer::zeroed(n),
        described: AtomicUsize::new(0),
        _guard: DropGuard::new(),
    };
    Ok(DLPackTensor::new(value)?)
}
