//! `PyTensor`: an imported tensor, owned until dropped.

use std::ffi::c_void;
use std::fmt;
use std::mem::ManuallyDrop;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::LayoutError;
use crate::ffi::{
    DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_READ_ONLY, DLPackVersion, DLTensor,
};
use crate::foreign;
#[cfg(feature = "fast-paths")]
use crate::frameworks::numpy;
use crate::import::consume::{Lease, Managed, Owned, take_from_capsule};
use crate::import::registry::Registration;
use crate::import::state::{LegacyWrites, State};
use crate::layout::DimsBuf;
use crate::{DLPackError, DataType, Device, Writability, protocol};

/// A tensor imported from any DLPack producer (a NumPy array, a torch or JAX
/// tensor, a CuPy array, a raw capsule), owned by Rust: the producer's memory
/// stays alive until the `PyTensor` is dropped, which calls the producer's
/// deleter exactly once (on any thread; DLPack deleters must allow that).
///
/// Every field the producer sent is validated on import (rank, shape, strides,
/// sizes, NULL pointers, dtype), so the accessors never read garbage. Typed
/// access to host memory is safe: [`as_slice`](Self::as_slice),
/// [`as_slice_mut`](Self::as_slice_mut), [`to_vec`](Self::to_vec) and, with
/// the `ndarray` feature, `as_array`. It is a
/// `#[pyfunction]` argument type as is:
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::PyTensor;
///
/// /// Python: `total(np.arange(4.0, dtype="f4"))`, `total(torch.ones(3))`
/// #[pyfunction]
/// fn total(tensor: PyTensor) -> PyResult<f32> {
///     Ok(tensor.to_vec::<f32>()?.iter().sum())
/// }
/// ```
///
/// Imported memory is shared with the producer: the NumPy array or torch
/// tensor it came from may still exist and be written by Python code. The
/// views borrow the `PyTensor`, so Rust code cannot alias them, and a mutable
/// view is refused while another live `PyTensor` overlaps the same memory
/// (the same array passed as two arguments); but no view can stop Python code
/// from writing through its own object meanwhile, so do not run Python code
/// that writes the array while you hold a view of it.
///
/// The typed views read host memory: the CPU's, and CUDA pinned (`cuda_host`)
/// and managed (`cuda_managed`) memory, which GPU work may still be writing,
/// once the stream the data is ready on ([`stream`](Self::stream)) has
/// finished (the host waits for it, without the GIL). Device memory is
/// refused (`expected a tensor on cpu:0`).
///
/// Like every DLPack consumer, `PyTensor` trusts that a capsule named
/// `dltensor`/`dltensor_versioned` holds a DLPack struct whose pointers are
/// valid: a capsule forged with another payload cannot be detected.
pub struct PyTensor {
    /// Boxed, so a `PyTensor` moves as one pointer: an argument is moved
    /// several times between its extraction and the function body, and a
    /// freshly written struct of a few hundred bytes copied with wide loads
    /// stalls on store forwarding at every move (measured: about a third of
    /// a NumPy import's time). One small allocation costs less, and a
    /// thread reuses its last one (see `import::state`), which the drop
    /// hands back.
    state: ManuallyDrop<Box<State>>,
}

// A `PyTensor` moves as one pointer (see its `state`).
const _: () = assert!(size_of::<PyTensor>() == size_of::<usize>());

/// The checks of a versioned struct: its version (first, as the header
/// keeps `version` stable across majors), then its description (`flags`
/// say whether sub-byte elements are padded), written into `out`.
///
/// # Safety
///
/// `versioned` is a live managed tensor: when of major version 1, its shape
/// and strides, when non-NULL, point to `ndim` readable `i64`s each.
unsafe fn check_versioned(
    versioned: &crate::ffi::DLManagedTensorVersioned,
    out: &mut foreign::Checked,
    dims: &mut Option<DimsBuf>,
) -> Result<(), DLPackError> {
    protocol::check_version(versioned.version)?;
    let padded = protocol::is_subbyte_padded(versioned.flags);
    // SAFETY: of major version 1, so laid out as the header says, and live
    // with `ndim`-long shape and strides (the caller's contract).
    unsafe { foreign::check_copy_into(&versioned.dl_tensor, padded, out, dims) }
}

/// The description of a tensor owned as `managed`: the producer's struct,
/// or `own_tensor` for a borrowed view or a NumPy array (see
/// [`State::own_tensor`]). A function of the two fields only, so a caller
/// may write the state's other fields meanwhile.
#[inline]
fn dl_tensor_of<'a>(managed: &'a Managed, own_tensor: &'a DLTensor) -> &'a DLTensor {
    match managed {
        Managed::Legacy(managed, _) => &managed.get().dl_tensor,
        // The major version was checked to be 1 before the `PyTensor` was made.
        Managed::Versioned(managed, _) => &managed.get().dl_tensor,
        #[cfg(feature = "exchange-api")]
        Managed::Borrowed { .. } | Managed::Array { .. } => own_tensor,
        #[cfg(not(feature = "exchange-api"))]
        Managed::Array { .. } => own_tensor,
    }
}

// SAFETY: a PyTensor owns its managed tensor exclusively (the capsule was
// renamed), and DLPack requires deleters to be callable from any thread, with
// or without the GIL ("the GIL must be acquired explicitly if it uses Python
// objects or API", dlpack PR #140), which is how torch and TensorFlow free
// tensors. Its fields are plain data.
unsafe impl Send for PyTensor {}
// SAFETY: `&PyTensor` only reads the validated, immutable description;
// mutation of the elements needs `&mut PyTensor`.
unsafe impl Sync for PyTensor {}

impl PyTensor {
    /// Takes the tensor out of a `dltensor` or `dltensor_versioned` capsule,
    /// which is renamed `used_…` so no one else can take it.
    pub fn from_capsule(capsule: &Bound<'_, PyCapsule>) -> Result<Self, DLPackError> {
        let managed = take_from_capsule(capsule)?;
        Self::from_managed(managed)
    }

    /// Whether this is a borrowed view (no reference to the memory is held).
    #[cfg(feature = "exchange-api")]
    pub(crate) fn is_borrowed(&self) -> bool {
        matches!(self.state.managed, Some(Managed::Borrowed { .. }))
    }

    /// Whether this is a NumPy array read in place (feature `fast-paths`).
    #[cfg(test)]
    pub(crate) fn is_array_read(&self) -> bool {
        matches!(self.state.managed, Some(Managed::Array { .. }))
    }

    /// Leaves the aliasing registry: for a tensor moved where no Rust view
    /// of it can be made again (re-exported into a `DLPackTensor`).
    #[cfg(feature = "exchange-api")]
    pub(crate) fn unregister(&mut self) {
        self.state.registration = std::sync::OnceLock::from(None);
    }

    /// Takes a versioned managed tensor handed over through the exchange API,
    /// checking it first: on failure the caller keeps ownership (the
    /// tensor is not deleted), as the exchange API's callers expect.
    ///
    /// # Safety
    ///
    /// `managed` is a live `DLManagedTensorVersioned` nobody else owns or
    /// will delete once this returns `Ok`; its deleter then runs exactly once,
    /// when the result drops.
    #[cfg(feature = "exchange-api")]
    pub(crate) unsafe fn adopt_versioned(
        managed: std::ptr::NonNull<crate::ffi::DLManagedTensorVersioned>,
    ) -> Result<Self, DLPackError> {
        // SAFETY: the caller's contract (on failure below the `Owned` is
        // dropped without deleting: the caller owns the struct again).
        let managed = unsafe { Owned::adopt(managed) };
        let mut checked = foreign::Checked::EMPTY;
        let mut dims = None;
        // SAFETY: adopted: a live struct whose dims are valid if of major 1.
        unsafe { check_versioned(managed.get(), &mut checked, &mut dims) }?;
        let mut state = State::new(Managed::Versioned(managed, None));
        state.checked = checked;
        state.dims_copy = dims;
        Ok(Self {
            state: ManuallyDrop::new(state),
        })
    }

    /// Gives the tensor back to `obj` when `obj` is the capsule it was taken
    /// from (renamed unused again: `consume::give_back`), for an argument
    /// that refuses it; drops it as usual otherwise.
    #[cfg(feature = "ndarray")]
    pub(crate) fn give_back_to(mut self, obj: &Bound<'_, PyAny>) {
        let Ok(capsule) = obj.cast::<PyCapsule>() else {
            return;
        };
        // Out of the aliasing registry first, as in the drop.
        drop(self.state.registration.take());
        if let Some(managed) = self.state.managed.take() {
            if let Err(managed) = crate::import::consume::give_back(capsule, managed) {
                managed.delete();
            }
        }
    }

    /// Lends the tensor taken from `capsule` to a derived argument's
    /// `from_dlpack`: dropped while the lease is open, it is given back to
    /// the capsule (see [`Lease`]).
    pub(crate) fn lend_to(&mut self, capsule: &Bound<'_, PyCapsule>) -> Option<Lease> {
        let (Some(Managed::Legacy(_, lender)) | Some(Managed::Versioned(_, lender))) =
            &mut self.state.managed
        else {
            return None;
        };
        let (lease, lent) = Lease::new(capsule);
        *lender = Some(lent);
        Some(lease)
    }

    /// Gives the managed tensor back without deleting it (the caller owns it again).
    #[cfg(feature = "exchange-api")]
    pub(crate) fn release(mut self) {
        // `Managed` deletes only when told to; without it, drop deletes nothing.
        self.state.managed = None;
    }

    /// Whether sub-byte elements take a byte each: the producer's flags say
    /// so, or its framework home knows it stores them so.
    pub(crate) fn is_subbyte_padded(&self) -> bool {
        self.state.subbyte_padded || self.flags().is_some_and(protocol::is_subbyte_padded)
    }

    /// Reads the sub-byte elements as a byte each, for a producer that
    /// stores them so without saying it (its framework home decides): the
    /// fields are checked again with that size.
    #[cold]
    #[inline(never)]
    pub(crate) fn assume_subbyte_padded(&mut self) -> Result<(), DLPackError> {
        self.state.subbyte_padded = true;
        let state = &mut *self.state;
        let managed = state.managed.as_ref().expect("present until drop");
        let dl_tensor = dl_tensor_of(managed, &state.own_tensor);
        let (shape, strides) = state.dims_copy.as_ref().expect("copied on import").split();
        let strides = (!dl_tensor.strides.is_null()).then_some(strides);
        // The general checks, which `check_dims_into`'s row-major shortcut
        // only shortens (it never answers for the sub-byte elements padded
        // here): not a second inlined copy of that shortcut.
        protocol::check_dtype(dl_tensor.dtype)?;
        foreign::check_any_layout_into(dl_tensor, shape, strides, true, &mut state.checked)
    }

    /// The address range `[start, end)` of every byte the elements reach.
    pub(crate) fn span(&self) -> (usize, usize) {
        self.state.checked.span
    }

    /// Owns `managed` from here on: any error below drops it, which runs the
    /// deleter once.
    fn from_managed(managed: Managed) -> Result<Self, DLPackError> {
        match managed {
            Managed::Versioned(versioned, _) => Self::from_versioned(versioned),
            other => Self::checked(State::new(other)),
        }
    }

    /// [`from_managed`](Self::from_managed) of a versioned struct, the
    /// common case (torch's exchange API; this crate's own export, for
    /// producers of the other protocols), without asking which kind it is.
    pub(crate) fn from_versioned(
        managed: Owned<crate::ffi::DLManagedTensorVersioned>,
    ) -> Result<Self, DLPackError> {
        let versioned = std::ptr::from_ref(managed.get());
        let mut tensor = Self {
            state: ManuallyDrop::new(State::new(Managed::Versioned(managed, None))),
        };
        // SAFETY: the struct `tensor` owns (adopted: live until `tensor`
        // drops, its dims valid if of major 1).
        let versioned = unsafe { &*versioned };
        let state = &mut *tensor.state;
        // SAFETY: as just said.
        unsafe { check_versioned(versioned, &mut state.checked, &mut state.dims_copy) }?;
        Ok(tensor)
    }

    /// A borrowed view (see [`with_borrowed`](Self::with_borrowed)) of the
    /// exchange API's `view`, checked.
    #[cfg(feature = "exchange-api")]
    pub(crate) fn borrowed(view: DLTensor, version: DLPackVersion) -> Result<Self, DLPackError> {
        let mut state = State::new(Managed::Borrowed { version });
        state.own_tensor = view;
        Self::checked(state)
    }

    /// Owns `state`'s tensor from here on, checked (as `from_managed`):
    /// a legacy struct, a borrowed view or a NumPy array (versioned structs,
    /// whose version is checked first, take `from_versioned`).
    fn checked(state: Box<State>) -> Result<Self, DLPackError> {
        let mut tensor = Self {
            state: ManuallyDrop::new(state),
        };
        let padded = tensor.is_subbyte_padded();
        let state = &mut *tensor.state;
        let managed = state.managed.as_ref().expect("present until drop");
        let dl_tensor = dl_tensor_of(managed, &state.own_tensor);
        // SAFETY: the struct is live and of a version whose layout we know;
        // its shape and strides are `ndim` long per the header.
        unsafe {
            foreign::check_copy_into(dl_tensor, padded, &mut state.checked, &mut state.dims_copy)
        }?;
        Ok(tensor)
    }

    /// Owns a NumPy array read directly (a reference to it): checked as a
    /// producer's tensor is, its shape and strides kept here. Everything is
    /// written where it is kept (see [`PyTensor::state`]).
    #[cfg(feature = "fast-paths")]
    pub(crate) fn from_array(
        obj: &Bound<'_, PyAny>,
        array: numpy::read::Array<'_>,
    ) -> Result<Self, DLPackError> {
        let mut state = State::new(Managed::Array {
            version: array.version(),
            writable: array.is_writable(),
            owner: obj.clone().unbind(),
        });
        state.own_tensor = array.tensor();
        let dims = state.dims_copy.insert(DimsBuf::pair(array.ndim()));
        array.write_dims(dims);
        let (shape, strides) = dims.split();
        foreign::check_dims_into(
            &state.own_tensor,
            shape,
            Some(strides),
            false,
            &mut state.checked,
        )?;
        Ok(Self {
            state: ManuallyDrop::new(state),
        })
    }

    #[inline]
    fn dl_tensor(&self) -> &DLTensor {
        let managed = self.state.managed.as_ref().expect("present until drop");
        dl_tensor_of(managed, &self.state.own_tensor)
    }

    /// The versioned flags; `None` for a legacy capsule, which has none.
    fn flags(&self) -> Option<u64> {
        match self.state.managed.as_ref().expect("present until drop") {
            Managed::Legacy(..) => None,
            Managed::Versioned(managed, _) => Some(managed.get().flags),
            #[cfg(feature = "exchange-api")]
            Managed::Borrowed { .. } => Some(0),
            Managed::Array { writable: true, .. } => Some(0),
            Managed::Array {
                writable: false, ..
            } => Some(DLPACK_FLAG_BITMASK_READ_ONLY),
        }
    }

    /// Extents.
    pub fn shape(&self) -> &[i64] {
        self.dims().0
    }

    /// Strides in elements; row-major ones when the producer sent none.
    pub fn strides(&self) -> &[i64] {
        if let Some(strides) = &self.state.checked.synthesized_strides {
            return strides;
        }
        self.dims().1
    }

    /// The shape and strides copied and checked on import (the producer's
    /// own arrays are never read again: they may have changed).
    fn dims(&self) -> (&[i64], &[i64]) {
        self.state
            .dims_copy
            .as_ref()
            .expect("copied on import")
            .split()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.state.checked.ndim
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.state.checked.numel
    }

    /// Bytes of element storage: `numel × itemsize`; for sub-byte types
    /// (float4, float6) packed, unless the producer set DLPack's
    /// `IS_SUBBYTE_TYPE_PADDED` flag: then a byte each.
    pub fn nbytes(&self) -> usize {
        self.state.checked.nbytes
    }

    /// Element type.
    #[inline]
    pub fn dtype(&self) -> DataType {
        self.dl_tensor().dtype
    }

    /// Device of the memory; device codes outside DLPack 1.3 are kept as they are.
    #[inline]
    pub fn device(&self) -> Device {
        self.dl_tensor().device
    }

    /// Address of the first element (`data + byte_offset`). Dereferencing it
    /// is up to you; prefer the typed views. On devices whose `data` is a
    /// buffer handle (Metal's `id<MTLBuffer>`, OpenCL's `cl_mem`, Vulkan,
    /// WebGPU) it is no address: take the handle from the producer, with
    /// the offset its API gives it.
    pub fn data_ptr(&self) -> *mut c_void {
        let tensor = self.dl_tensor();
        // Validated not to wrap around the address space.
        tensor.data.wrapping_byte_add(tensor.byte_offset as usize)
    }

    /// The struct's `data` as the producer wrote it (the handle, on devices
    /// that use handles).
    pub(crate) fn raw_data(&self) -> *mut c_void {
        self.dl_tensor().data
    }

    /// Whether the tensor must not be written: the producer set the read-only
    /// flag, or sent a legacy capsule. A legacy capsule cannot say whether
    /// writes are allowed (JAX before 0.12 exports its immutable arrays that
    /// way), so, as NumPy ≥ 2.3 does, legacy imports are read-only here
    /// ([`writability`](Self::writability) tells the two apart), with two
    /// exceptions, where the producer's own API says more: a `numpy.ndarray`
    /// of NumPy before 2.1 (the newest on CPython 3.9 is 2.0.2), which
    /// exports only legacy capsules, and only of writable arrays, is
    /// writable when its own `flags.writeable` says so; and a `torch.Tensor`
    /// (exactly; torch before 2.9 exports only legacy capsules) is writable,
    /// as torch has no read-only tensors.
    pub fn is_read_only(&self) -> bool {
        !self.writability().allows_writes()
    }

    /// What the producer said about writes: [`Writability::Writable`] or
    /// [`Writability::ReadOnly`] from a versioned capsule's flags,
    /// [`Writability::Unknown`] for a legacy capsule, which cannot say
    /// (except NumPy's before 2.1 and torch's, see [`is_read_only`](Self::is_read_only)).
    ///
    /// Rust views treat unknown as read-only. Exported again (a `PyTensor`
    /// is an [`IntoDLPack`](crate::IntoDLPack) value), an unknown tensor is
    /// handed on as it came: as a legacy capsule to consumers that ask for
    /// one (JAX ≤ 0.11, TensorFlow, `torch.utils.dlpack.from_dlpack`), and
    /// flagged `READ_ONLY` in a versioned one.
    ///
    /// ```
    /// use pyo3::prelude::*;
    /// use pyo3_dlpack::{DLPackTensor, PyTensor, Writability};
    ///
    /// /// Python: `jnp.from_dlpack(same(jnp.arange(4.0)))`: a JAX array in,
    /// /// the same memory out to JAX.
    /// #[pyfunction]
    /// fn same(tensor: PyTensor) -> PyResult<DLPackTensor> {
    ///     if tensor.writability() == Writability::Unknown {
    ///         // A legacy capsule: readable, not writable from Rust.
    ///     }
    ///     Ok(DLPackTensor::new(tensor)?)
    /// }
    /// ```
    pub fn writability(&self) -> Writability {
        match self.flags() {
            None if self.state.legacy_writes == LegacyWrites::Writable => Writability::Writable,
            None => Writability::Unknown,
            Some(flags) => Writability::from_flags(flags),
        }
    }

    /// The stream the data is ready on, for devices with streams: the one
    /// passed to the producer's `__dlpack__` (CUDA's legacy default stream,
    /// 1, unless [`ImportOptions::stream`](crate::ImportOptions::stream) named another), or the one a
    /// `__cuda_array_interface__` producer's stream was made to wait for.
    /// `None` when the data is ready on every stream (host memory, an import
    /// that synchronised, the exchange API's stream-free devices) or no
    /// stream was negotiated (a capsule passed as it is).
    pub fn stream(&self) -> Option<i64> {
        self.state.stream
    }

    /// Sets what a legacy import's [`writability`](Self::writability) reports
    /// (see [`is_read_only`](Self::is_read_only)).
    pub(crate) fn set_legacy_writes(&mut self, writes: LegacyWrites) {
        self.state.legacy_writes = writes;
    }

    /// Sets what [`stream`](Self::stream) reports.
    pub(crate) fn set_stream(&mut self, stream: Option<i64>) {
        self.state.stream = stream;
    }

    /// Whether the producer says it copied the data for us (versioned capsules
    /// only; torch does not set it even when it copies).
    pub fn is_copied(&self) -> bool {
        self.flags()
            .is_some_and(|flags| flags & DLPACK_FLAG_BITMASK_IS_COPIED != 0)
    }

    /// The DLPack version of a versioned capsule; `None` for a legacy one.
    pub fn version(&self) -> Option<DLPackVersion> {
        match self.state.managed.as_ref().expect("present until drop") {
            Managed::Legacy(..) => None,
            Managed::Versioned(managed, _) => Some(managed.get().version),
            #[cfg(feature = "exchange-api")]
            Managed::Borrowed { version, .. } | Managed::Array { version, .. } => Some(*version),
            #[cfg(not(feature = "exchange-api"))]
            Managed::Array { version, .. } => Some(*version),
        }
    }

    /// Whether the elements are packed in row-major (C) order. Strides of
    /// dimensions of extent 0 or 1 are ignored (torch rewrites them).
    pub fn is_contiguous(&self) -> bool {
        self.state.checked.contiguous
    }

    /// `Ok` if the tensor has this dtype, else [`DLPackError::Dtype`].
    pub fn ensure_dtype(&self, expected: DataType) -> Result<(), DLPackError> {
        let found = self.dtype();
        if found == expected {
            Ok(())
        } else {
            Err(DLPackError::Dtype { expected, found })
        }
    }

    /// `Ok` if the tensor has `expected` dimensions, else [`DLPackError::Ndim`].
    pub fn ensure_ndim(&self, expected: usize) -> Result<(), DLPackError> {
        let found = self.ndim();
        if found == expected {
            Ok(())
        } else {
            Err(DLPackError::Ndim { expected, found })
        }
    }

    /// `Ok` if the tensor is on this device, else [`DLPackError::Device`].
    pub fn ensure_device(&self, expected: Device) -> Result<(), DLPackError> {
        let found = self.device();
        if found == expected {
            Ok(())
        } else {
            Err(DLPackError::Device { expected, found })
        }
    }

    /// `Ok` if the tensor is row-major contiguous, else [`DLPackError::Layout`].
    pub fn ensure_contiguous(&self) -> Result<(), DLPackError> {
        if self.is_contiguous() {
            Ok(())
        } else {
            Err(LayoutError::NotContiguous {
                shape: self.shape().to_vec(),
                strides: self.strides().to_vec(),
            }
            .into())
        }
    }

    /// This import's registry entry, made now if it is the first view.
    fn registration(&self) -> Option<&Registration> {
        self.state
            .registration
            .get_or_init(|| Registration::new(self.state.checked.span))
            .as_ref()
    }

    /// `Ok` if no other live `PyTensor` that handed out a view shares this
    /// tensor's memory (a mutable view needs exclusive access), else
    /// [`DLPackError::Layout`]. On `Ok`, overlapping imports cannot be read
    /// while this one lives.
    pub(crate) fn ensure_exclusive(&self) -> Result<(), DLPackError> {
        match self.registration() {
            Some(registration) if !registration.claim_exclusive() => {
                Err(LayoutError::Shared.into())
            }
            _ => Ok(()),
        }
    }

    /// `Ok` unless another live `PyTensor` over this memory has handed out a
    /// mutable view (whose borrow may still be alive, on another thread).
    pub(crate) fn ensure_readable(&self) -> Result<(), DLPackError> {
        match self.registration() {
            Some(registration) if !registration.may_read() => Err(LayoutError::Shared.into()),
            _ => Ok(()),
        }
    }

    /// `Ok` if the tensor may be written: [`DLPackError::ReadOnly`] if the
    /// producer marked it read-only, [`DLPackError::WritabilityUnknown`] if
    /// it came in a legacy capsule that cannot say.
    pub fn ensure_writable(&self) -> Result<(), DLPackError> {
        match self.writability() {
            Writability::Writable => Ok(()),
            Writability::ReadOnly => Err(DLPackError::ReadOnly),
            Writability::Unknown if self.state.legacy_writes == LegacyWrites::JaxImmutable => {
                Err(DLPackError::Immutable {
                    producer: "jax.Array",
                    framework: "JAX",
                })
            }
            Writability::Unknown => Err(DLPackError::WritabilityUnknown),
        }
    }
}

impl Drop for PyTensor {
    fn drop(&mut self) {
        // Leave the aliasing registry first: once the producer's deleter has
        // run, its memory may be reused (freed and allocated again, on any
        // thread) and imported while this entry would still claim it.
        drop(self.state.registration.take());
        if let Some(managed) = self.state.managed.take() {
            managed.delete();
        }
        // SAFETY: `state` is taken once, here, in the drop, and not used after.
        State::recycle(unsafe { ManuallyDrop::take(&mut self.state) });
    }
}

impl fmt::Debug for PyTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PyTensor")
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("dtype", &self.dtype())
            .field("device", &self.device())
            .field("writability", &self.writability())
            .field("version", &self.version())
            .finish()
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for PyTensor {
    type Error = PyErr;
    #[cfg(feature = "experimental-inspect")]
    const INPUT_TYPE: pyo3::inspect::PyStaticExpr = crate::inspect::ANY_TENSOR;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Self::from_argument(&obj)
    }
}

impl PyTensor {
    /// [`from_pyany`](Self::from_pyany) for an argument PyO3 converts: a
    /// NumPy array of a dtype DLPack cannot carry is a `TypeError` (which
    /// PyO3 names the argument in) saying so, and what to pass instead.
    pub(crate) fn from_argument(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::from_pyany(obj).map_err(|err| crate::import::negotiate::argument_error(obj, err))
    }
}
