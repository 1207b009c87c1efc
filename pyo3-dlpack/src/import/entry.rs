//! The import entry: what `PyTensor::from_pyany` does with an object, in
//! order. Framework fast paths first (a NumPy array read in place, a
//! producer's C exchange table, a `jax.Array`'s C++ export), then DLPack
//! negotiation (`__dlpack__`, or a capsule), then the other protocols.

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

#[cfg(feature = "exchange-api")]
use crate::exchange;
#[cfg(feature = "fast-paths")]
use crate::ffi::DLPackVersion;
use crate::frameworks::jax;
#[cfg(feature = "fast-paths")]
use crate::frameworks::numpy;
#[cfg(feature = "exchange-api")]
use crate::import::negotiate::probe_dlpack;
use crate::import::negotiate::{legacy_writability, request_capsule};
use crate::import::options::ImportOptions;
use crate::import::protocols;
use crate::python::RecursionLevel;
use crate::{PyTensor, Writability};

impl PyTensor {
    /// Imports from any object with `__dlpack__`, or a DLPack capsule of
    /// either name, with the default [`ImportOptions`]; objects without
    /// `__dlpack__` through `__cuda_array_interface__`,
    /// `__array_interface__` or the buffer protocol (see the crate docs,
    /// "Producers that speak no DLPack").
    ///
    /// Errors: `TypeError` for an object that speaks none of these, the
    /// producer's own exception when its `__dlpack__` fails, and a
    /// [`DLPackError`](crate::DLPackError) (as `BufferError` or `ValueError`) for a capsule that
    /// is consumed, malformed or of an unsupported version. `RecursionError`
    /// when the producer's own Python code imports again, beyond the
    /// interpreter's recursion limit or 32 imports nested on one thread (a
    /// `__dlpack__` that imports itself).
    pub fn from_pyany(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::from_pyany_with(obj, &ImportOptions::default())
    }

    /// Imports with explicit `stream`, `max_version`, `dl_device` and `copy`.
    ///
    /// With feature `fast-paths` (on by default), an exact `numpy.ndarray`
    /// of NumPy 2.1 or later, imported with the default options, is read
    /// directly (data, shape, strides, dtype and
    /// the writeable flag, as NumPy's own `__dlpack__` reads them) and held
    /// by a reference to the array: no `__dlpack__` call, no capsule. What
    /// `__dlpack__` would refuse (non-native byte order, strides that are not
    /// whole elements, dtypes DLPack lacks) still goes through it, so the
    /// error is NumPy's; subclasses keep their own `__dlpack__`.
    ///
    /// Producers whose type advertises the DLPack C exchange API (torch ≥
    /// 2.10) are imported through it (with the default `exchange-api`
    /// feature), without a `__dlpack__` call, when the
    /// options ask for nothing special but, perhaps, a consumer stream
    /// (a stream handle, or 1 or 2). The C path does no stream
    /// synchronisation, so CUDA tensors are ordered here as
    /// [`StreamMode`](crate::StreamMode) says (an event through the CUDA
    /// driver, or the producer's current stream carried along); without a
    /// CUDA driver, and on ROCm, they go through `__dlpack__` with a stream
    /// instead, after one C export given back. Subclasses that override `__dlpack__` or `__torch_function__`,
    /// and every subclass of `torch.Tensor`, take the `__dlpack__` path, so
    /// their own code runs. What torch's `__dlpack__` refuses is refused on
    /// the C path too, with torch's `BufferError`: tensors that require
    /// gradient ("use tensor.detach()"), meta, sparse and quantized tensors,
    /// and tensors with the lazy conjugate bit; so are tensors with the lazy
    /// negative bit, as their memory does not hold their values.
    ///
    /// With `fast-paths`, a `jax.Array` on one device (jaxlib's own array
    /// type, by identity) imported with the default options is exported by the C++ function
    /// JAX's `__dlpack__` ends in, without JAX's Python `__dlpack__` and
    /// `__dlpack_device__`: the same legacy capsule, with jaxlib's error for
    /// a deleted array. Arrays sharded or replicated over several devices
    /// take `__dlpack__` (which refuses them), and so do arrays whose memory
    /// has streams (GPU), asked again for the stream they are read on.
    pub fn from_pyany_with(obj: &Bound<'_, PyAny>, options: &ImportOptions) -> PyResult<Self> {
        #[cfg(feature = "fast-paths")]
        if options.is_plain() {
            if let Some(array) = numpy::read::recognise(obj, versioned_export) {
                return Ok(Self::from_array(obj, array)?);
            }
        }
        #[cfg(feature = "exchange-api")]
        if let Some(tensor) = Self::from_exchange_table(obj, options)? {
            return Ok(tensor);
        }
        #[cfg(feature = "fast-paths")]
        if let Some(tensor) = Self::from_jaxlib_export(obj, options)? {
            return Ok(tensor);
        }
        let _level = RecursionLevel::enter(obj.py())?;
        let Some(capsule) = request_capsule(obj, options)? else {
            return protocols::import(obj, options);
        };
        Self::from_requested(obj, &capsule, options)
    }

    /// [`from_pyany_with`](Self::from_pyany_with) through the C exchange
    /// table of `obj`'s type, where it has one and `options` allow it:
    /// `None` to go on with `__dlpack__` (no table; or a device with
    /// streams the table path could not order, or whose capsule was made
    /// for no stream). Inlined, as the code it was in the caller.
    #[cfg(feature = "exchange-api")]
    #[inline(always)]
    fn from_exchange_table(
        obj: &Bound<'_, PyAny>,
        options: &ImportOptions,
    ) -> PyResult<Option<Self>> {
        let api = if options.allows_exchange() {
            exchange::lookup_for_import(obj)?
        } else {
            None
        };
        let Some(api) = api else {
            return Ok(None);
        };
        // SAFETY: `api` is the table found on `obj`'s own type, just looked up
        // (DLPack's contract; a class can copy another's table, so the crate
        // trusts producers to check the objects they get: the safety chapter).
        match unsafe { api.owned(obj) } {
            Ok(managed) => {
                let managed = api.check_torch_owned(obj, managed)?;
                let mut tensor = Self::from_versioned(managed)?;
                let device = tensor.device();
                if !device.device_type.uses_streams() {
                    return Ok(Some(tensor));
                }
                // The C path does no synchronisation: order it here,
                // or (no CUDA driver, ROCm) import through `__dlpack__`.
                let stream = api.order(
                    obj.py(),
                    device,
                    options.selected_stream_mode(),
                    options.consumer_stream(),
                )?;
                Ok(stream.map(|stream| {
                    tensor.set_stream(Some(stream));
                    tensor
                }))
            }
            // torch's C export fails with a C++ backtrace where its
            // `__dlpack__` raises a clear error (meta, sparse and
            // quantized tensors): raise that one. A producer whose
            // `__dlpack__` exports after all is imported from that
            // capsule, unless its device has streams (it was asked
            // for none: ask again).
            Err(err) => {
                crate::python::discard(err);
                let _level = RecursionLevel::enter(obj.py())?;
                let tensor = Self::from_requested(obj, &probe_dlpack(obj)?, options)?;
                Ok((!tensor.device().device_type.uses_streams()).then_some(tensor))
            }
        }
    }

    /// [`from_pyany_with`](Self::from_pyany_with) through jaxlib's C++
    /// export, for a `jax.Array` of one device imported with the default
    /// options: `None` to go on with `__dlpack__` (not such an array; or
    /// memory with streams, its capsule made for no stream and given back).
    #[cfg(feature = "fast-paths")]
    #[inline(always)]
    fn from_jaxlib_export(
        obj: &Bound<'_, PyAny>,
        options: &ImportOptions,
    ) -> PyResult<Option<Self>> {
        if !options.is_plain() {
            return Ok(None);
        }
        let Some(capsule) = jax::export_capsule(obj)? else {
            return Ok(None);
        };
        let tensor = Self::from_requested(obj, &capsule, options)?;
        Ok((!tensor.device().device_type.uses_streams()).then_some(tensor))
    }

    /// The tensor of `capsule`, which `obj.__dlpack__` returned to a
    /// request with `options`.
    fn from_requested(
        obj: &Bound<'_, PyAny>,
        capsule: &Bound<'_, PyCapsule>,
        options: &ImportOptions,
    ) -> PyResult<Self> {
        let mut tensor = Self::from_capsule(capsule)?;
        crate::frameworks::torch::check_dlpack_import(obj, tensor.dtype())?;
        if !tensor.dtype().is_byte_sized()
            && !tensor.is_subbyte_padded()
            && jax::stores_subbyte_padded(obj)
        {
            tensor.assume_subbyte_padded()?;
        }
        // A capsule handed over as it is was made for no stream of ours.
        if !obj.is(capsule) {
            tensor.set_stream(options.stream_for(Some(tensor.device())));
        }
        if tensor.writability() == Writability::Unknown {
            tensor.set_legacy_writes(legacy_writability(obj)?);
        }
        Ok(tensor)
    }

    /// Runs `f` on a borrowed view of `obj`'s tensor, and returns its result.
    ///
    /// For producers with the DLPack C exchange API (torch ≥ 2.10; with the
    /// default `exchange-api` feature) the view is made without a `__dlpack__` call and with one small allocation (float and
    /// complex torch tensors cost a `requires_grad` read and an `is_neg()`
    /// call, see `from_pyany_with`, whose refusals apply here too): nothing is
    /// owned, nothing deleted, which suits a call that only needs the
    /// tensor's description while it runs (a kernel launch: shape, strides,
    /// dtype, device, `data_ptr`). Such a view holds no reference to the
    /// memory (Python code run by `f` could free it), so its typed views
    /// (`as_slice`, `to_vec`, …) return an error: import the tensor to read
    /// its elements. Others are imported as usual and dropped after `f`. The
    /// view is not synchronised with any stream (for GPU tensors, work on the
    /// producer's current stream) and cannot outlive `f`.
    ///
    /// ```
    /// # use pyo3::prelude::*;
    /// use pyo3_dlpack::PyTensor;
    ///
    /// /// Python: `nbytes(torch.ones(3))`
    /// #[pyfunction]
    /// fn nbytes(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    ///     PyTensor::with_borrowed(obj, |tensor| tensor.nbytes())
    /// }
    /// ```
    pub fn with_borrowed<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&PyTensor) -> R) -> PyResult<R> {
        #[cfg(feature = "exchange-api")]
        if let Some(api) = exchange::lookup_for_import(obj)? {
            // SAFETY: `api` is the table found on `obj`'s own type, just looked up
            // (DLPack's contract; a class can copy another's table, so the crate
            // trusts producers to check the objects they get: the safety chapter).
            match unsafe { api.borrowed(obj) } {
                Some(Ok(view)) => {
                    // Its shape and strides are copied first: torch's
                    // questions release the GIL, and another thread may
                    // change the producer's arrays meanwhile.
                    let tensor = Self::borrowed(view, api.version())?;
                    api.check_torch(obj, tensor.dtype())?;
                    return Ok(f(&tensor));
                }
                // As in `from_pyany_with`: the producer's own error, or
                // its capsule.
                Some(Err(err)) => {
                    crate::python::discard(err);
                    // The level covers the producer's code, not `f`'s.
                    let tensor = {
                        let _level = RecursionLevel::enter(obj.py())?;
                        let capsule = probe_dlpack(obj)?;
                        Self::from_requested(obj, &capsule, &ImportOptions::default())?
                    };
                    if !tensor.device().device_type.uses_streams() {
                        return Ok(f(&tensor));
                    }
                }
                None => {}
            }
        }
        let tensor = Self::from_pyany(obj)?;
        Ok(f(&tensor))
    }
}

/// The DLPack version of `obj`'s versioned export through `__dlpack__`
/// (`None`: it exports legacy capsules only), what NumPy's in-place read
/// reports as its version.
#[cfg(feature = "fast-paths")]
fn versioned_export(obj: &Bound<'_, PyAny>) -> PyResult<Option<DLPackVersion>> {
    let Some(capsule) = request_capsule(obj, &ImportOptions::default())? else {
        return Ok(None);
    };
    Ok(PyTensor::from_capsule(&capsule)?.version())
}

#[cfg(test)]
mod fast_path_tests;
#[cfg(test)]
mod tests;

/// `f`, attached, once NumPy, torch and JAX are imported. The test harness
/// runs tests on parallel threads, and first imports of these on two
/// threads at once can fail (NumPy's "cannot load module more than once per
/// process", jaxlib's "Encountered an error while initializing the
/// extension"): the first caller imports them, the others wait detached.
#[cfg(test)]
fn attach_with_frameworks<R>(f: impl FnOnce(Python<'_>) -> R) -> R {
    static IMPORTED: std::sync::Once = std::sync::Once::new();
    IMPORTED.call_once(|| {
        Python::attach(|py| {
            for name in ["numpy", "torch", "jax"] {
                py.import(name).unwrap();
            }
        })
    });
    Python::attach(f)
}
