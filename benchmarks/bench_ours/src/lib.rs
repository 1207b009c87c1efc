//! Head-to-head benchmark module for this repository's `pyo3-dlpack`.
//!
//! Exposes the same functions as `bench_dlpark` and `bench_pyo3dlpack03`, so one
//! Python process can time all three (see `../head_to_head.py`).

use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_dlpack::{CapsuleFormat, DLPackTensor, FromDLPack, IntoDLPack, Native, PyTensor};

fn to_py_err(e: pyo3_dlpack::DLPackError) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(e.to_string())
}

/// An object with `__dlpack__`/`__dlpack_device__` over `n` zeroed float32
/// elements (allocated here, outside any timed region).
#[pyfunction]
fn export_object(n: usize) -> PyResult<DLPackTensor> {
    DLPackTensor::new(vec![0f32; n]).map_err(to_py_err)
}

/// A user's tensor struct as the guide writes one: its own memory and shape, exported
/// through the derive (returned from a `#[pyfunction]`, it becomes a `DLPackTensor`).
#[derive(IntoDLPack)]
struct Samples {
    #[dlpack(data)]
    values: Vec<f32>,
    #[dlpack(shape)]
    shape: [usize; 1],
}

/// `export_object` through the derive: `n` zeroed float32 elements in a derived
/// `IntoDLPack` struct (the derived export row: `np.from_dlpack(export_derived(n))`).
#[pyfunction]
fn export_derived(n: usize) -> Samples {
    Samples { values: vec![0f32; n], shape: [n] }
}

/// What `export_capsule*` takes: here the same exporter object.
#[pyfunction]
fn capsule_source(n: usize) -> PyResult<DLPackTensor> {
    export_object(n)
}

/// A bare legacy (`dltensor`) capsule sharing the source's buffer.
#[pyfunction]
fn export_capsule<'py>(
    py: Python<'py>,
    src: &Bound<'py, DLPackTensor>,
) -> PyResult<Bound<'py, PyCapsule>> {
    src.get().to_capsule(py, CapsuleFormat::Legacy)
}

/// A bare versioned (`dltensor_versioned`, DLPack 1.3, writable) capsule.
#[pyfunction]
fn export_capsule_versioned<'py>(
    py: Python<'py>,
    src: &Bound<'py, DLPackTensor>,
) -> PyResult<Bound<'py, PyCapsule>> {
    src.get().to_capsule(py, CapsuleFormat::Versioned)
}

/// Imports any DLPack producer (or capsule) through `PyTensor`; returns its ndim.
#[pyfunction]
fn import_tensor(t: PyTensor) -> usize {
    t.ndim()
}

/// Imports every element of a list (any DLPack producers) as `Vec<PyTensor>`;
/// returns how many (the list rows: ns per tensor is the call divided by it).
#[pyfunction]
fn import_list(ts: Vec<PyTensor>) -> usize {
    ts.len()
}

/// A float32, C-contiguous CPU tensor of any rank: the checks of nanobind's
/// `nb::ndarray<float, nb::c_contig, nb::device::cpu>`.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, device = "cpu", contiguous)]
struct F32Host {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

/// Imports through the derived, typed `F32Host`; returns its ndim.
#[pyfunction]
fn import_typed(t: F32Host) -> usize {
    t.tensor.ndim()
}

/// Imports a typed argument, `Tensor2<f32>` (float32, rank 2, host memory,
/// checked while PyO3 extracts it), and takes its elements as a row-major
/// slice (the C-contiguous check of nanobind's `nb::c_contig`); returns
/// their number.
#[pyfunction]
fn import_typed2(t: pyo3_dlpack::Tensor2<f32>) -> PyResult<usize> {
    Ok(t.as_slice().map_err(to_py_err)?.len())
}

/// A fresh `DLPackTensor` over `n` zeroed float32 elements, made in the call
/// (the "fresh buffer → framework" rows: `np.from_dlpack(fresh(n))`).
#[pyfunction]
fn fresh(n: usize) -> PyResult<DLPackTensor> {
    export_object(n)
}

/// `n` zeroed float32 elements made in the call, returned as a `numpy.ndarray`.
#[pyfunction]
fn native_numpy(n: usize) -> Native<Vec<f32>> {
    Native::numpy(vec![0f32; n])
}

/// `n` zeroed float32 elements made in the call, returned as a `torch.Tensor`.
#[pyfunction]
fn native_torch(n: usize) -> Native<Vec<f32>> {
    Native::torch(vec![0f32; n])
}

/// `n` zeroed float32 elements made in the call, returned as a `jax.Array`.
#[pyfunction]
fn native_jax(n: usize) -> Native<Vec<f32>> {
    Native::jax(vec![0f32; n])
}

/// torch's C exchange table, found once (`torch.Tensor.__dlpack_c_exchange_api__`).
fn torch_table(obj: &Bound<'_, PyAny>) -> PyResult<&'static pyo3_dlpack::ffi::DLPackExchangeAPI> {
    static TABLE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let address = match TABLE.get() {
        Some(address) => *address,
        None => {
            let capsule = obj
                .get_type()
                .getattr("__dlpack_c_exchange_api__")?
                .cast_into::<PyCapsule>()?;
            let pointer = capsule.pointer_checked(Some(c"dlpack_exchange_api"))?;
            *TABLE.get_or_init(|| pointer.as_ptr() as usize)
        }
    };
    // SAFETY: the capsule named `dlpack_exchange_api` holds a pointer to torch's
    // static `DLPackExchangeAPI`, which lives as long as the process.
    Ok(unsafe { &*(address as *const pyo3_dlpack::ffi::DLPackExchangeAPI) })
}

/// The floor of a torch import through torch's C exchange table: its owned
/// export and its deleter, and nothing else (no checks, no description).
/// Returns the tensor's `ndim`.
#[pyfunction]
fn torch_floor(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    use pyo3_dlpack::ffi::DLManagedTensorVersioned;
    let table = torch_table(obj)?;
    let export = table
        .managed_tensor_from_py_object_no_sync
        .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("no export in torch's table"))?;
    let mut out: *mut DLManagedTensorVersioned = std::ptr::null_mut();
    // SAFETY: attached to the interpreter (we hold `obj`); torch checks that the
    // object is a tensor and sets a Python error when it fails.
    if unsafe { export(obj.as_ptr().cast(), &mut out) } != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: on success `out` is torch's fresh managed tensor, ours to read and
    // to delete exactly once, which happens here.
    unsafe {
        let ndim = (*out).dl_tensor.ndim as usize;
        if let Some(deleter) = (*out).deleter {
            deleter(out);
        }
        Ok(ndim)
    }
}

/// torch's own `requires_grad` getter and `is_neg` method, found once as C
/// functions (the cheapest way to ask torch what our import checks).
struct TorchChecks {
    getter: pyo3::ffi::getter,
    closure: usize,
    is_neg: pyo3::ffi::PyCFunction,
}

fn torch_checks(obj: &Bound<'_, PyAny>) -> PyResult<&'static TorchChecks> {
    use pyo3::ffi;
    static CHECKS: std::sync::OnceLock<TorchChecks> = std::sync::OnceLock::new();
    if let Some(checks) = CHECKS.get() {
        return Ok(checks);
    }
    let ty = obj.get_type();
    let requires_grad = ty.getattr("requires_grad")?;
    let is_neg = ty.getattr("is_neg")?;
    let unexpected = || pyo3::exceptions::PyTypeError::new_err("torch's descriptors changed kind");
    // CPython's descriptor types; their addresses are only compared.
    let (getset_kind, method_kind) = (&raw mut ffi::PyGetSetDescr_Type, &raw mut ffi::PyMethodDescr_Type);
    if requires_grad.get_type().as_type_ptr() != getset_kind
        || is_neg.get_type().as_type_ptr() != method_kind
    {
        return Err(unexpected());
    }
    // SAFETY: both objects were just checked to be exactly a getset descriptor and a
    // method descriptor, so the casts match their layouts; torch.Tensor's class keeps
    // them (and the C definitions they point to) alive for the process.
    let (getter, closure, method) = unsafe {
        let getset = &*(*requires_grad.as_ptr().cast::<ffi::PyGetSetDescrObject>()).d_getset;
        let method = &*(*is_neg.as_ptr().cast::<ffi::PyMethodDescrObject>()).d_method;
        (getset.get, getset.closure as usize, method)
    };
    // is_neg takes no arguments, so its C function has the plain PyCFunction shape.
    if method.ml_flags & ffi::METH_NOARGS == 0 {
        return Err(unexpected());
    }
    // SAFETY: METH_NOARGS, checked above, means `ml_meth` is a `PyCFunction`.
    let is_neg = unsafe { method.ml_meth.PyCFunction };
    let getter = getter.ok_or_else(unexpected)?;
    Ok(CHECKS.get_or_init(|| TorchChecks { getter, closure, is_neg }))
}

/// `torch_floor` plus torch's own `requires_grad` getter, called as a C
/// function: what `torch_floor_checked` costs without `is_neg()`. Returns
/// `ndim`, or 0 for a tensor that requires gradient.
#[pyfunction]
fn torch_floor_requires_grad(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    let checks = torch_checks(obj)?;
    let ndim = torch_floor(obj)?;
    // SAFETY: as in `torch_floor_checked`.
    let requires_grad = unsafe {
        Bound::from_owned_ptr_or_err(obj.py(), (checks.getter)(obj.as_ptr(), checks.closure as *mut _))?
    };
    Ok(if requires_grad.is_truthy()? { 0 } else { ndim })
}

/// The floor of a checked torch import: `torch_floor` plus torch's own
/// `requires_grad` getter and `is_neg`, called as C functions. Returns `ndim`,
/// or 0 where a check would refuse the tensor.
#[pyfunction]
fn torch_floor_checked(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    let checks = torch_checks(obj)?;
    let py = obj.py();
    let ndim = torch_floor(obj)?;
    // SAFETY: `getter` is torch's requires_grad getter for `obj`'s class (found
    // on it above; the benchmark passes torch tensors), called attached with its
    // own closure; it returns a new reference or NULL with an error set.
    let requires_grad = unsafe {
        Bound::from_owned_ptr_or_err(py, (checks.getter)(obj.as_ptr(), checks.closure as *mut _))?
    };
    if requires_grad.is_truthy()? {
        return Ok(0);
    }
    // SAFETY: `is_neg` is torch's METH_NOARGS C function for `obj`'s class, so
    // it takes (self, NULL); it returns a new reference or NULL with an error set.
    let negative =
        unsafe { Bound::from_owned_ptr_or_err(py, (checks.is_neg)(obj.as_ptr(), std::ptr::null_mut()))? };
    if negative.is_truthy()? {
        return Ok(0);
    }
    Ok(ndim)
}

/// The floor of a `#[pyfunction]` call taking one object.
#[pyfunction]
fn noop(_obj: &Bound<'_, PyAny>) -> usize {
    0
}

/// The floor of `import_list` over host arrays read in place: the same list
/// extracted as `Vec<Bound<PyAny>>`, nothing imported. Returns how many.
#[pyfunction]
fn noop_list(objs: Vec<Bound<'_, PyAny>>) -> usize {
    objs.len()
}

/// The floor of `import_list` over torch tensors: `torch_floor_checked` of
/// each element of the list (extracted as `Vec<Bound<PyAny>>`), in one call.
/// Returns how many.
#[pyfunction]
fn torch_floor_list(objs: Vec<Bound<'_, PyAny>>) -> PyResult<usize> {
    for obj in &objs {
        torch_floor_checked(obj)?;
    }
    Ok(objs.len())
}

/// `PyTensor::to_candle_tensor()` of a host tensor: its element count.
#[cfg(feature = "candle")]
#[pyfunction]
fn copy_to_candle(t: PyTensor) -> PyResult<usize> {
    Ok(t.to_candle_tensor().map_err(to_py_err)?.elem_count())
}

/// `PyTensor::to_vec::<f32>()` of a float32 host tensor of any layout,
/// dropped at once: the host-copy rows (`../copies.py`). Returns its length.
#[pyfunction]
fn copy_to_vec(t: PyTensor) -> PyResult<usize> {
    Ok(t.to_vec::<f32>().map_err(to_py_err)?.len())
}

#[pymodule]
fn bench_ours(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CRATE", "pyo3-dlpack (this repository, path dependency)")?;
    m.add("SOURCE", env!("BENCH_OURS_SOURCE"))?;
    m.add_function(wrap_pyfunction!(export_object, m)?)?;
    m.add_function(wrap_pyfunction!(export_derived, m)?)?;
    // The class in its module, as an extension exposes it (the guide's examples do): pickles
    // name it as NumPy's name `ndarray` (benchmarks/pickling.py).
    DLPackTensor::add_to_module(m)?;
    m.add_function(wrap_pyfunction!(capsule_source, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(export_capsule_versioned, m)?)?;
    m.add_function(wrap_pyfunction!(import_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(import_typed2, m)?)?;
    m.add_function(wrap_pyfunction!(import_list, m)?)?;
    m.add_function(wrap_pyfunction!(import_typed, m)?)?;
    m.add_function(wrap_pyfunction!(fresh, m)?)?;
    m.add_function(wrap_pyfunction!(native_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(native_torch, m)?)?;
    m.add_function(wrap_pyfunction!(native_jax, m)?)?;
    m.add_function(wrap_pyfunction!(torch_floor, m)?)?;
    m.add_function(wrap_pyfunction!(torch_floor_checked, m)?)?;
    m.add_function(wrap_pyfunction!(torch_floor_requires_grad, m)?)?;
    m.add_function(wrap_pyfunction!(torch_floor_list, m)?)?;
    m.add_function(wrap_pyfunction!(noop_list, m)?)?;
    m.add_function(wrap_pyfunction!(copy_to_vec, m)?)?;
    #[cfg(feature = "candle")]
    m.add_function(wrap_pyfunction!(copy_to_candle, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)
}
