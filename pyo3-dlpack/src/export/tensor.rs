//! `DLPackTensor`: the Python object an exported Rust value becomes.

use std::sync::Arc;

use pyo3::prelude::*;
// (PyO3's introspection names the types of methods compiled out, too.)
#[cfg(any(feature = "non-dlpack-export", feature = "experimental-inspect"))]
use pyo3::types::PyDict;
use pyo3::types::{PyCapsule, PyModule, PyTuple};
use pyo3::{PyClass, PyClassInitializer};

use crate::DLPackError;
#[cfg(feature = "non-dlpack-export")]
use crate::error::PythonKind;
use crate::export::hinted::DLPackMethod;
#[cfg(any(feature = "non-dlpack-export", feature = "experimental-inspect"))]
use crate::export::hinted::{DTypeLike, NumpyArray};
use crate::export::hinted::{Hinted, JaxArray};
#[cfg(any(feature = "pickle", feature = "experimental-inspect"))]
use crate::export::hinted::{Memo, Reduction, Tensor};
use crate::export::info::TensorInfo;
use crate::export::into::IntoDLPack;
use crate::export::plan::{CapsuleFormat, ExportRequest};
#[cfg(not(feature = "pickle"))]
use crate::export::unpicklable as pickling;
use crate::export::{Described, export_shared};
#[cfg(feature = "pickle")]
use crate::travel as pickling;

/// A tensor exported from Rust, shared with NumPy, PyTorch, JAX, CuPy and every
/// other DLPack consumer without a copy.
///
/// Pass it to `numpy.from_dlpack`, `torch.from_dlpack`, `jax.numpy.from_dlpack`,
/// `cupy.from_dlpack` or any array-API library's `from_dlpack`: the array they
/// return shares this tensor's memory. It can be imported any number of times;
/// the memory lives until this object and every array made from it are gone.
/// Arrays made from a read-only tensor are read-only.
///
/// Attributes: `shape` and `strides` (tuples of ints, strides in elements),
/// `ndim`, `dtype` (a name such as `"float32"`), `device` (such as `"cpu:0"`),
/// `read_only`, and `data_ptr` (the address of the first element).
///
/// Methods: `__dlpack__(*, stream=None, max_version=None, dl_device=None,
/// copy=None)` and `__dlpack_device__()`, as the DLPack Python specification
/// defines them.
// What only Rust readers need (and doc tests) stays out of Python's `__doc__`:
// PyO3 takes the docstring from the plain doc comments above.
#[cfg_attr(any(doc, doctest), doc = include_str!("tensor.md"))]
#[pyclass(frozen, subclass, module = "pyo3_dlpack", name = "DLPackTensor")]
pub struct DLPackTensor {
    /// The shared value with its description, checked once when wrapped.
    described: Described<Arc<dyn IntoDLPack>>,
}

/// [`DLPackTensor::PYI`]'s text (a separate constant, so that rustdoc shows
/// the stub as the code block of its docs, not as an escaped one-line string).
const STUB: &str = include_str!("tensor.pyi");

impl std::fmt::Debug for DLPackTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe(self.info()))
    }
}

impl DLPackTensor {
    /// Wraps a value, checking now that it describes a valid tensor (so a
    /// shape that does not fit its buffer fails here, not in the consumer).
    pub fn new<T: IntoDLPack>(value: T) -> Result<Self, DLPackError> {
        let reads_no_elements = crate::export::managed::reads_no_elements::<T>();
        Self::from_new_arc(Arc::new(value), reads_no_elements)
    }

    /// [`new`](Self::new) past its one generic step (the `Arc`): one copy
    /// for every value type, not one inlined into each `new::<T>`.
    /// `reads_no_elements`: the value is a buffer of `bool`s that Rust code
    /// never reads (see `managed::reads_no_elements`).
    #[inline(never)]
    fn from_new_arc(
        value: Arc<dyn IntoDLPack>,
        reads_no_elements: bool,
    ) -> Result<Self, DLPackError> {
        let mut tensor = Self::from_arc(value)?;
        if reads_no_elements {
            tensor.described.lift_bool_guard();
        }
        Ok(tensor)
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
        let mut described = Described::shared(value)?;
        if shared {
            described.force_read_only();
        }
        Ok(Self { described })
    }

    /// Wraps a shared value and exports it writable (unless it is read-only
    /// itself, or describes a buffer outside the value: see
    /// [`TensorInfoBuilder::unshared`](crate::TensorInfoBuilder::unshared)).
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
        Ok(Self {
            described: Described::shared(value)?,
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

    /// Like [`with_subclass`](Self::with_subclass), exporting writable
    /// (unless the value is read-only itself, or describes a buffer outside
    /// the value, as [`from_arc_writable`](Self::from_arc_writable)).
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

    /// The class's type stub: paste it into the `.pyi` file of your module
    /// (for maturin, `<module>.pyi` next to `Cargo.toml`, which maturin ships
    /// in the wheel with a `py.typed` marker), so type checkers and editors
    /// know what your functions return.
    ///
    /// ```
    /// // Keep your stub in step with the crate (a test in your own crate):
    /// # let my_stub = pyo3_dlpack::DLPackTensor::PYI;
    /// // let my_stub = include_str!("../my_module.pyi");
    /// assert!(my_stub.contains(pyo3_dlpack::DLPackTensor::PYI));
    /// ```
    ///
    /// `make test` checks it with stubtest, mypy and pyright (`tests/typing`).
    /// It declares `__array__`, `__cuda_array_interface__` and `__buffer__`,
    /// which exist with feature `non-dlpack-export`; `__copy__` and
    /// `__deepcopy__`, which exist with feature `pickle` (without it pickling
    /// raises `TypeError`); and `__dlpack_c_exchange_api__`, which exists
    /// with feature `exchange-api` (all three on by default). Its text:
    ///
    #[doc = concat!("```python\n", include_str!("tensor.pyi"), "```")]
    pub const PYI: &'static str = STUB;

    /// Adds the class to your module `m`, as `DLPackTensor`, and makes its
    /// `__module__` the module's name, so that `help()`, `repr(type(t))` and
    /// error messages point Python users to your module (the class is
    /// defined in `pyo3_dlpack`, which they cannot import). Returning a
    /// `DLPackTensor` needs no registration; add it for Python code that
    /// names the class (`isinstance(x, mymodule.DLPackTensor)`).
    ///
    /// ```
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::DLPackTensor;
    ///
    /// #[pymodule]
    /// fn my_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    ///     DLPackTensor::add_to_module(m)?;
    ///     Ok(())
    /// }
    /// # Python::attach(|py| {
    /// #     let m = PyModule::new(py, "my_module").unwrap();
    /// #     DLPackTensor::add_to_module(&m).unwrap();
    /// #     let module = m.getattr("DLPackTensor").unwrap().getattr("__module__").unwrap();
    /// #     assert_eq!(module.to_string(), "my_module");
    /// # });
    /// ```
    pub fn add_to_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_class::<Self>()?;
        let class = m.py().get_type::<Self>();
        class.setattr(pyo3::intern!(m.py(), "__module__"), m.name()?)
    }

    /// The shared value with its checked description (for the exchange API).
    pub(crate) fn described(&self) -> &Described<Arc<dyn IntoDLPack>> {
        &self.described
    }

    /// The description every export of this object uses: the value's own,
    /// checked when it was wrapped, read-only when the value is shared (see
    /// [`from_arc`](Self::from_arc)).
    ///
    /// ```
    /// use pyo3_dlpack::{DLPackTensor, DataType};
    ///
    /// let t = DLPackTensor::new(vec![1.0f32, 2.0, 3.0]).unwrap();
    /// assert_eq!(t.info().dtype(), DataType::F32);
    /// assert_eq!(t.info().shape(), [3]);
    /// assert!(!t.info().is_read_only());
    /// ```
    pub fn info(&self) -> &TensorInfo<'_> {
        self.described.info()
    }

    /// A bare capsule of the chosen format that shares ownership of the value
    /// (for consumers that take capsules, such as `torch.utils.dlpack.from_dlpack`).
    #[inline]
    pub fn to_capsule<'py>(
        &self,
        py: Python<'py>,
        format: CapsuleFormat,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        self.export(py, &ExportRequest::of_format(format))
    }

    /// A capsule for `request`, sharing ownership of the value.
    pub(crate) fn export<'py>(
        &self,
        py: Python<'py>,
        request: &ExportRequest,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        export_shared(py, &self.described, request)
    }
}

/// Extents as a Python tuple's inside (`2, 3`), written where the whole
/// repr is: no string of its own, nor one per extent.
struct Extents<'a>(&'a [i64]);

impl std::fmt::Display for Extents<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, extent) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{extent}")?;
        }
        Ok(())
    }
}

fn describe(info: &TensorInfo<'_>) -> String {
    let dims = info.dims_slices().0;
    let shape = Extents(dims);
    let trailing_comma = if dims.len() == 1 { "," } else { "" };
    let read_only = if info.is_read_only() {
        ", read_only=True"
    } else {
        ""
    };
    format!(
        "DLPackTensor(shape=({shape}{trailing_comma}), dtype={}, device={}{read_only})",
        info.dtype(),
        info.device()
    )
}

#[pymethods]
impl DLPackTensor {
    /// `__dlpack__(*, stream=None, max_version=None, dl_device=None,
    /// copy=None)`: exports the tensor as a DLPack capsule, as the DLPack
    /// Python specification defines it.
    // A method descriptor made in C (`method.rs`: CPython's fast calling
    // convention where the build has it), the one `__dlpack__` of every build.
    #[classattr]
    #[pyo3(name = "__dlpack__")]
    fn dlpack_method(py: Python<'_>) -> PyResult<Hinted<'_, DLPackMethod>> {
        crate::export::method::descriptor(py).map(Hinted::new)
    }

    /// The DLPack C exchange API table of this type (DLPack 1.3): consumers
    /// such as tvm-ffi import `DLPackTensor`s through it without a Python call.
    #[cfg(feature = "exchange-api")]
    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
        crate::exchange::producer::capsule(py)
    }

    /// `(device_type, device_id)` as DLPack codes, e.g. `(1, 0)` for the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        let device = self.info().device();
        (device.device_type.code(), device.device_id)
    }

    /// Extents, as a tuple of ints.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.info().dims_slices().0)
    }

    /// Strides in elements, as a tuple of ints.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.info().dims_slices().1)
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.info().ndim()
    }

    /// Element type name, such as `"float32"` or `"bfloat16"`.
    #[getter]
    fn dtype(&self) -> String {
        format!("{}", self.info().dtype())
    }

    /// Device, such as `"cpu:0"` or `"cuda:1"`.
    #[getter]
    fn device(&self) -> String {
        format!("{}", self.info().device())
    }

    /// Whether consumers get a read-only tensor.
    #[getter]
    fn read_only(&self) -> bool {
        self.info().is_read_only()
    }

    /// Address of the first element, to compare with a consumer's (zero-copy checks).
    #[getter]
    fn data_ptr(&self) -> usize {
        self.info().data_ptr() as usize
    }

    fn __repr__(&self) -> String {
        describe(self.info())
    }

    /// Pickling, every protocol: the dtype, shape, device and read-only
    /// flag, and the bytes (protocol 5: a `pickle.PickleBuffer` over this
    /// tensor's memory, out of band when the pickler takes buffers). The
    /// unpickled tensor is a `DLPackTensor` of its own memory (an aligned
    /// out-of-band buffer kept without a copy), in any process that can
    /// import this module. Device tensors travel as host copies and are
    /// restored on their device.
    #[cfg(feature = "pickle")]
    fn __reduce_ex__<'py>(
        slf: &Bound<'py, Self>,
        protocol: i32,
    ) -> PyResult<Hinted<'py, Reduction>> {
        crate::travel::reduce_ex(slf, protocol).map(Hinted::new)
    }

    /// Unpickling's entry point where pickle finds this class by its name
    /// (after `add_to_module`): the tensor a pickled state describes.
    #[cfg(feature = "pickle")]
    #[classmethod]
    #[pyo3(name = "_pyo3_dlpack_0_4_restore_v1")]
    fn restore_pickled(
        cls: &Bound<'_, pyo3::types::PyType>,
        state: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        crate::travel::restore_pickled(cls.py(), state)
    }

    /// As `__reduce_ex__(2)`.
    // Both builds: without feature `pickle` it raises a `TypeError` naming
    // the feature, which pickling and copies all reach (`unpicklable.rs`).
    // One method, not one of each build: PyO3's introspection lists the
    // methods compiled out too, so a stub would show both.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        pickling::reduce(slf, 2)
    }

    /// `copy.copy(t)`: an independent copy (dtype, shape, device and
    /// read-only flag kept), as NumPy's.
    #[cfg(feature = "pickle")]
    fn __copy__<'py>(slf: &Bound<'py, Self>) -> PyResult<Hinted<'py, Tensor>> {
        crate::travel::copy(slf, None).map(Hinted::new)
    }

    /// `copy.deepcopy(t)`: as `copy.copy(t)`.
    #[cfg(feature = "pickle")]
    fn __deepcopy__<'py>(
        slf: &Bound<'py, Self>,
        memo: Hinted<'py, Memo>,
    ) -> PyResult<Hinted<'py, Tensor>> {
        // Nothing inside a tensor is shared with other objects: the memo
        // serves a subclass's own reduction only.
        crate::travel::copy(slf, Some(memo.object())).map(Hinted::new)
    }

    /// `numpy.asarray(t)` and `numpy.array(t)` where the buffer protocol
    /// does not serve them (NumPy asks it first): the host memory through
    /// `numpy.from_dlpack`, zero-copy unless a copy or another `dtype` is
    /// asked for. `BufferError` for memory the host cannot read (device
    /// memory: import it with that device's framework) and for dtypes NumPy
    /// lacks (bfloat16, float8, …), never a 0-d object array.
    #[cfg(feature = "non-dlpack-export")]
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<Hinted<'py, DTypeLike>>,
        copy: Option<bool>,
    ) -> PyResult<Hinted<'py, NumpyArray>> {
        array_of(slf, dtype.as_ref().map(Hinted::object), copy).map(Hinted::new)
    }

    /// `jax.numpy.asarray(t)` and every `jax.numpy` function given `t`: the
    /// tensor as a `jax.Array`, as `Native::jax` makes it (the array
    /// `jax.dlpack.from_dlpack` returns), zero-copy
    /// where JAX does not copy (64-byte-aligned host buffers), read-only
    /// tensors included (JAX arrays are immutable).
    fn __jax_array__<'py>(slf: &Bound<'py, Self>) -> PyResult<Hinted<'py, JaxArray>> {
        crate::frameworks::jax::array_of_shared(slf.py(), slf.get().described().owner())
            .map(Hinted::new)
    }

    /// The interface dict of a CUDA tensor (version 3, for Numba and other
    /// consumers that read only that); `AttributeError` on other devices.
    #[cfg(feature = "non-dlpack-export")]
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::export::cuda_array_interface::describe(py, &self.described)
    }

    /// The buffer protocol, for host tensors: `memoryview(t)`, `bytes(t)`,
    /// `np.asarray(t)` read the memory in place.
    ///
    /// # Safety
    ///
    /// Called by Python only (`bf_getbuffer`), with `view` a writable
    /// `Py_buffer` for this object to fill.
    #[cfg(all(feature = "non-dlpack-export", any(not(Py_LIMITED_API), Py_3_11)))]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let owner = slf.clone().into_any();
        // SAFETY: Python hands us its `view` to fill; the description is of
        // memory the value keeps alive and unchanged in size, and the view
        // holds `owner`, which holds the value.
        unsafe { crate::export::buffer::fill(view, flags, slf.get().described.info(), owner) }
    }

    /// Releases a view [`__getbuffer__`](Self::__getbuffer__) filled.
    ///
    /// # Safety
    ///
    /// Called by Python only (`bf_releasebuffer`), once for each `view`
    /// this object's `__getbuffer__` filled.
    #[cfg(all(feature = "non-dlpack-export", any(not(Py_LIMITED_API), Py_3_11)))]
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: Python releases each view `__getbuffer__` filled once.
        unsafe { crate::export::buffer::release(view) }
    }
}

/// `DLPackTensor.__array__`: the host memory as a NumPy array, of `dtype`
/// if given.
#[cfg(feature = "non-dlpack-export")]
fn array_of<'py>(
    slf: &Bound<'py, DLPackTensor>,
    dtype: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let info = slf.get().info();
    let device = info.device();
    if !device.is_host_accessible() {
        return Err(PythonKind::Buffer.new_err(format!(
            "cannot make a NumPy array of a tensor on {device}: NumPy reads host memory \
             only; import it with a framework for that device, such as \
             torch.from_dlpack(t) or cupy.from_dlpack(t)"
        )));
    }
    if crate::frameworks::numpy::type_number(info.dtype()).is_none() {
        // torch 2.15 and JAX 0.10 take no bcomplex over DLPack either.
        let elsewhere = if info.dtype().code == crate::DataTypeCode::BCOMPLEX {
            "read it from Rust; no framework imports it over DLPack yet"
        } else {
            "import it with torch.from_dlpack(t) or jax.numpy.from_dlpack(t)"
        };
        return Err(PythonKind::Buffer.new_err(format!(
            "cannot make a NumPy array of a {} tensor: NumPy has no such dtype; {elsewhere}",
            info.dtype()
        )));
    }
    let numpy = py.import(pyo3::intern!(py, "numpy"))?;
    let from_dlpack = |copy: Option<bool>| {
        let kwargs = PyDict::new(py);
        // As a Python object first: the `set_item` instance other calls use.
        let copy = copy.into_pyobject(py)?.into_any();
        kwargs.set_item(pyo3::intern!(py, "copy"), copy)?;
        numpy.call_method(pyo3::intern!(py, "from_dlpack"), (slf,), Some(&kwargs))
    };
    let Some(dtype) = dtype.filter(|dtype| !dtype.is_none()) else {
        return from_dlpack(copy);
    };
    let dtype = numpy.getattr(pyo3::intern!(py, "dtype"))?.call1((dtype,))?;
    let array = from_dlpack(copy)?;
    if array.getattr(pyo3::intern!(py, "dtype"))?.eq(&dtype)? {
        return Ok(array);
    }
    if copy == Some(false) {
        // NumPy's own words for `copy=False` where a cast must copy.
        return Err(PythonKind::Value
            .new_err("Unable to avoid copy while creating an array as requested.".to_owned()));
    }
    array.call_method1(pyo3::intern!(py, "astype"), (dtype,))
}
