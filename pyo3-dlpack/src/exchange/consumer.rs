//! The DLPack C exchange API (DLPack 1.3, DLPACK.md §5): producers such as
//! torch ≥ 2.10 advertise a static table of C functions as
//! `type(x).__dlpack_c_exchange_api__`, so a consumer can take a tensor
//! without a Python call. Where a type has no such capsule, DLPack 1.2's
//! `type(x).__c_dlpack_exchange_api__` (the table's address as an int, as
//! tvm-ffi 0.1.3 and older publish it) is read instead, only from immutable
//! types (see `legacy_address`), with the same checks and cache. (Paddle
//! 3.3.1 publishes the 1.3 capsule, and the int under the old name beside
//! it only with such a tvm-ffi, on a mutable type: its capsule is used.)
//!
//! The table is looked up once per type and cached (misses too: NumPy arrays
//! pay no failed attribute lookup per call). Types in the cache are kept
//! alive, so a cached address can never be reused by another type; only
//! types that live as long anyway are cached (static types, classes their
//! module holds), so the cache keeps no class made in a function alive.

use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::cuda::streams;
use crate::error::ExportError;
use crate::python::ok;
use crate::{DLPackError, DataType, protocol};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyInt, PyString, PyType};

use crate::ffi::{DLManagedTensorVersioned, DLPACK_EXCHANGE_API, DLPackExchangeAPI, DLTensor};
use crate::frameworks::torch::{self, checks::TorchChecks};
use crate::import::consume::{Owned, delete_versioned};

/// Most types remembered; beyond that, lookups are simply not cached.
const CACHE_LIMIT: usize = 64;

/// A producer type's table, checked: major version 1 and the functions we call present.
#[derive(Clone, Copy)]
pub(crate) struct ExchangeApi {
    table: &'static DLPackExchangeAPI,
    /// The table's owning export, copied here from the table: an import
    /// reads it next to the type it found, not from the producer's table
    /// (measured: that read missed the cache on torch imports).
    owned_export: OwnedExport,
    /// For `torch.Tensor` itself: torch's C path skips the refusals of its
    /// `__dlpack__` (tensors that require gradient, the conjugate bit), so
    /// they are checked per tensor (see [`ExchangeApi::check_torch`]).
    torch: Option<&'static TorchChecks>,
}

// SAFETY: the table is immutable and lives for the whole process (DLPack:
// "The struct must live for the whole process"); its functions are called
// only while attached to the interpreter, from whichever thread that is.
unsafe impl Send for ExchangeApi {}
// SAFETY: as above; `&ExchangeApi` only reads the immutable table.
unsafe impl Sync for ExchangeApi {}

struct Entry {
    ty: Py<PyType>,
    api: Option<ExchangeApi>,
    /// Keeps the capsule holding the table alive with the type.
    _capsule: Option<Py<PyAny>>,
}

/// The owning export of a table (`managed_tensor_from_py_object_no_sync`).
type OwnedExport = unsafe extern "C" fn(
    py_object: *mut std::ffi::c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32;

/// The cache: entries published once (leaked, so they live as long as the
/// types they keep alive) and never removed, so a lookup reads atomics only,
/// with no lock, also on a free-threaded interpreter. Inserts take no lock
/// either (a lock a thread held while another forked would be copied held
/// into the child: DESIGN.md invariant 10): slots fill in order, each by a
/// compare-and-swap from empty.
static ENTRIES: [AtomicPtr<Entry>; CACHE_LIMIT] =
    [const { AtomicPtr::new(ptr::null_mut()) }; CACHE_LIMIT];

/// The cached answer for the type at `ty`, if it has one.
fn cached(ty: *mut pyo3::ffi::PyTypeObject) -> Option<Option<ExchangeApi>> {
    for slot in &ENTRIES {
        let entry = slot.load(Ordering::Acquire);
        if entry.is_null() {
            return None;
        }
        // SAFETY: non-NULL entries come from `Box::into_raw` in `remember`, were
        // published with Release (read with Acquire here) and are never freed.
        let entry = unsafe { &*entry };
        if entry.ty.as_ptr().cast() == ty {
            return Some(entry.api);
        }
    }
    None
}

/// Publishes `entry` in the first free slot (nothing when the cache is full
/// or the type is already there). Threads racing to insert try the same
/// slots in the same order, so each finds the others' entries on its way
/// and no type is inserted twice.
fn remember(entry: Entry) {
    let ty = entry.ty.as_ptr();
    let entry = Box::into_raw(Box::new(entry));
    for slot in &ENTRIES {
        let mut found = slot.load(Ordering::Acquire);
        if found.is_null() {
            match slot.compare_exchange(ptr::null_mut(), entry, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(winner) => found = winner,
            }
        }
        // SAFETY: as in `cached`: a published entry, never freed.
        if unsafe { &*found }.ty.as_ptr() == ty {
            break;
        }
    }
    // Not published (the cache is full, or the type is there): still this
    // thread's alone, dropped attached (the caller is).
    // SAFETY: from `Box::into_raw` above, never shared.
    drop(unsafe { Box::from_raw(entry) });
}

/// The exchange API of `obj`'s type, if it has a usable one.
pub(crate) fn lookup(obj: &Bound<'_, PyAny>) -> PyResult<Option<ExchangeApi>> {
    match cached(obj.get_type_ptr()) {
        Some(api) => Ok(api),
        None => lookup_type(obj.get_type()),
    }
}

/// The exchange API to import `obj` through, if its type has a usable one
/// and `obj` itself does not ask for its Python `__dlpack__` (an exact
/// `torch.Tensor` under a `TorchFunctionMode`, or with a `__dlpack__` of
/// its own: [`torch::defers_to_python`]).
pub(crate) fn lookup_for_import(obj: &Bound<'_, PyAny>) -> PyResult<Option<ExchangeApi>> {
    let api = lookup(obj)?;
    if api.is_some_and(|api| api.torch.is_some()) && torch::defers_to_python(obj)? {
        return Ok(None);
    }
    Ok(api)
}

/// The exchange API of the type `ty`, if it has a usable one (cached).
pub(crate) fn lookup_type(ty: Bound<'_, PyType>) -> PyResult<Option<ExchangeApi>> {
    if let Some(api) = cached(ty.as_type_ptr()) {
        return Ok(api);
    }
    // `find` reads attributes of the type, which its metaclass may answer
    // with Python code that imports again: a level of the import's limit.
    let _level = crate::python::RecursionLevel::enter(ty.py())?;
    let (api, capsule) = find(&ty)?;
    if lives_with_its_module(&ty) {
        remember(Entry {
            ty: ty.unbind(),
            api,
            _capsule: capsule,
        });
    }
    Ok(api)
}

/// Whether the cache may keep `ty` alive without keeping anything alive
/// longer: a static type (made by C code), or a class its module holds
/// under its qualified name (it lives as long as the module). A class made
/// in a function, and every other, is looked up anew on each import rather
/// than kept forever with its class attributes.
fn lives_with_its_module(ty: &Bound<'_, PyType>) -> bool {
    // SAFETY: attached; a live type object.
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(ty.as_type_ptr()) };
    if flags & pyo3::ffi::Py_TPFLAGS_HEAPTYPE == 0 {
        return true;
    }
    let (Some(module), Some(qualname)) = (ok(ty.module()), ok(ty.qualname())) else {
        return false;
    };
    let Some(mut found) = crate::python::imported_module(ty.py(), &module) else {
        return false;
    };
    let Some(qualname) = ok(qualname.to_cow()) else {
        return false;
    };
    // Split at its ASCII dots byte by byte (each part stays whole UTF-8):
    // `str::split` would link a character searcher for this one call.
    for name in qualname.as_bytes().split(|&byte| byte == b'.') {
        let Ok(name) = std::str::from_utf8(name) else {
            return false;
        };
        match ok(found.getattr(name)) {
            Some(attribute) => found = attribute,
            None => return false,
        }
    }
    found.is(ty)
}

/// Reads and checks `ty.__dlpack_c_exchange_api__`. A malformed table means
/// "none"; so does a subclass that overrides `__dlpack__` or
/// `__torch_function__` (its own Python behaviour must not be bypassed), and
/// so does every subclass of `torch.Tensor`: the tensor checks the C path
/// skips are cheap attribute reads on `torch.Tensor` itself, but on a
/// subclass they run its `__torch_function__`, which may refuse them
/// (`torch.utils.dlpack.ReadOnlyTensorWrapper` refuses everything but
/// `__dlpack__`). Its `__dlpack__` then runs torch's own checks.
fn find(ty: &Bound<'_, PyType>) -> PyResult<(Option<ExchangeApi>, Option<Py<PyAny>>)> {
    let py = ty.py();
    let mut found = None;
    for name in [
        pyo3::intern!(py, "__dlpack_c_exchange_api__"),
        // DLPack 1.2's name, an int (tvm-ffi 0.1.3 and older), read only
        // where the type has no attribute of the first.
        pyo3::intern!(py, "__c_dlpack_exchange_api__"),
    ] {
        if let Some(attr) = crate::python::optional_attr(ty.as_any(), name)? {
            found = Some((attr, name));
            break;
        }
    }
    let Some((attr, name)) = found else {
        return Ok((None, None));
    };
    // A torch tensor type takes the C path only when it is `torch.Tensor`
    // itself, by identity: a subclass, or a class that merely has torch's
    // name or attributes, is asked through `__dlpack__`.
    let torch = is_torch_tensor_like(ty)?;
    if torch && !torch::is_tensor_type(ty) {
        return Ok((None, None));
    }
    let Some(owner) = owner_of(ty, name) else {
        return Ok((None, None));
    };
    if !same_behaviour(ty, &owner)? {
        return Ok((None, None));
    }
    let torch = match torch {
        true => Some(TorchChecks::of_torch_tensor(ty)?),
        false => None,
    };
    let pointer = match attr.cast::<PyCapsule>() {
        Ok(capsule) => {
            // SAFETY: attached; the capsule is checked for the exchange API's name.
            let pointer = unsafe {
                pyo3::ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLPACK_EXCHANGE_API.as_ptr())
            };
            if pointer.is_null() {
                crate::python::clear_error(py);
            }
            pointer
        }
        Err(_) => match legacy_address(&attr, &owner)? {
            Some(address) => address as *mut c_void,
            None => return Ok((None, None)),
        },
    };
    let Some(mut header) = NonNull::new(pointer.cast::<crate::ffi::DLPackExchangeAPIHeader>())
    else {
        return Ok((None, None));
    };
    // Walk `prev_api` to the table of major version 1 (bounded, in case of a cycle).
    for _ in 0..8 {
        // SAFETY: the header is the first field of a process-lifetime table
        // (DLPack: "The struct must live for the whole process").
        let current = unsafe { header.as_ref() };
        if current.version.major == 1 {
            // SAFETY: a major-1 header begins a `DLPackExchangeAPI`, static as above.
            let table: &'static DLPackExchangeAPI = unsafe { header.cast().as_ref() };
            let api = table
                .managed_tensor_from_py_object_no_sync
                .map(|owned_export| ExchangeApi {
                    table,
                    owned_export,
                    torch,
                });
            return Ok((api, Some(attr.clone().unbind())));
        }
        match NonNull::new(current.prev_api) {
            Some(previous) => header = previous,
            None => break,
        }
    }
    Ok((None, None))
}

/// Whether `ty` is, or claims to be, a torch tensor type: a subclass of
/// `torch.Tensor`, or a type with torch's per-tensor state
/// (`requires_grad`, `is_conj`, `is_neg`).
fn is_torch_tensor_like(ty: &Bound<'_, PyType>) -> PyResult<bool> {
    if let Some(tensor) = torch::tensor_type(ty.py()) {
        if ty.is_subclass(&tensor)? {
            return Ok(true);
        }
    }
    let py = ty.py();
    for name in [
        pyo3::intern!(py, "requires_grad"),
        pyo3::intern!(py, "is_conj"),
        pyo3::intern!(py, "is_neg"),
    ] {
        if crate::python::optional_attr(ty.as_any(), name)?.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The class in `ty`'s MRO whose own `__dict__` holds the attribute `name`.
fn owner_of<'py>(
    ty: &Bound<'py, PyType>,
    name: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyType>> {
    let py = ty.py();
    ty.mro()
        .iter()
        .find(|class| {
            let has = class
                .getattr(pyo3::intern!(py, "__dict__"))
                .and_then(|dict| dict.contains(name));
            ok(has) == Some(true)
        })
        .and_then(|class| class.cast_into::<PyType>().ok())
}

/// The table address of DLPack 1.2's `__c_dlpack_exchange_api__`: a Python
/// int holding the address of the `DLPackExchangeAPI` struct (tvm-ffi wraps
/// that very address in the 1.3 capsule, `_optional_torch_c_dlpack.py`).
///
/// An int says nothing a consumer can check (a capsule at least has the
/// table's name), and Python code can set any int on a mutable type (a
/// class statement's, or an extension type's that did not ask to be
/// immutable: `del T.__dlpack_c_exchange_api__; T.__c_dlpack_exchange_api__
/// = 0x1000` crashed the import): so it is read only from a type Python code
/// cannot change. `None` for anything else: a `bool`, an int that is no
/// address, 0, or a mutable type.
fn legacy_address(attr: &Bound<'_, PyAny>, owner: &Bound<'_, PyType>) -> PyResult<Option<usize>> {
    if !attr.is_exact_instance_of::<PyInt>() {
        return Ok(None);
    }
    let Some(address) = ok(attr.extract::<usize>()) else {
        return Ok(None);
    };
    if address == 0 || mutable_from_python(owner) {
        return Ok(None);
    }
    Ok(Some(address))
}

/// Whether Python code can set `ty`'s attributes: any heap type but those
/// flagged immutable (`Py_TPFLAGS_IMMUTABLETYPE`, Python 3.10+: extension
/// types that ask for it). A static type (made by C code) is immutable too.
/// A class statement's type is mutable, and so is every extension type that
/// did not ask (PyO3's by default): an int planted on one must not be read
/// as an address.
fn mutable_from_python(ty: &Bound<'_, PyType>) -> bool {
    /// `Py_TPFLAGS_IMMUTABLETYPE` (CPython 3.10's `object.h`; before 3.10
    /// no flag has this value, and every heap type is mutable).
    const IMMUTABLE_TYPE: std::ffi::c_ulong = 1 << 8;
    // SAFETY: attached; a live type object.
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(ty.as_type_ptr()) };
    let heap = flags & pyo3::ffi::Py_TPFLAGS_HEAPTYPE != 0;
    let immutable = flags & IMMUTABLE_TYPE != 0 && runs_3_10_or_later(ty.py());
    heap && !immutable
}

/// Whether the interpreter is Python 3.10 or later. Known when the extension
/// was built, except in a limited-API build for a version before 3.10: a
/// full-API build loads only in the version it was built for, and a
/// limited-API one only in its version or later. Asked at run time there
/// alone (so the version's parsing is no part of the other builds).
fn runs_3_10_or_later(py: Python<'_>) -> bool {
    if cfg!(any(Py_3_10, not(Py_LIMITED_API))) {
        cfg!(Py_3_10)
    } else {
        py.version_info() >= (3, 10)
    }
}

/// Whether `ty` behaves as `owner`, the class that defines its exchange
/// table: same `__dlpack__` and `__torch_function__` (a torch subclass may
/// override either).
fn same_behaviour(ty: &Bound<'_, PyType>, owner: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = ty.py();
    for method in [
        pyo3::intern!(py, "__dlpack__"),
        pyo3::intern!(py, "__torch_function__"),
    ] {
        let mine = ok(ty.getattr(method));
        let owners = ok(owner.getattr(method));
        let same = match (&mine, &owners) {
            (Some(a), Some(b)) => a.is(b) || a.eq(b)?,
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The exception a failed exchange-API call set (or one saying it set none).
/// Out of line: one copy for the four calls that fail with it.
#[cold]
#[inline(never)]
fn producer_error(py: Python<'_>) -> PyErr {
    PyErr::take(py).unwrap_or_else(|| DLPackError::from(ExportError::NoErrorSet).into())
}

impl ExchangeApi {
    /// Refuses what torch's `__dlpack__` refuses and its C path exports
    /// anyway (see [`TorchChecks::check`]); other producers are not asked.
    /// Only `torch.Tensor` itself takes this path (never a subclass, see
    /// `find`). Whatever else torch's `__dlpack__` refuses (meta, sparse and
    /// quantized tensors) its C path fails on, and the import then asks
    /// `__dlpack__`, whose error is torch's own.
    ///
    /// An owned import asks before anything else is done with the tensor:
    /// asked after the import's own work, the same questions took longer
    /// (measured on a torch float32 import; torch's `is_neg` releases and
    /// retakes the GIL). A borrowed view is checked and copied first: its
    /// shape and strides are the producer's own, which another thread may
    /// change while the GIL is released.
    pub(crate) fn check_torch(self, obj: &Bound<'_, PyAny>, dtype: DataType) -> PyResult<()> {
        match self.torch {
            Some(checks) => checks.check(obj, dtype),
            None => Ok(()),
        }
    }

    /// [`check_torch`](Self::check_torch) of a tensor [`owned`](Self::owned)
    /// just now, which is handed back to its producer (its deleter runs) if
    /// refused. Only a struct of this crate's major version is read; one of
    /// another is refused by the import's own version check, next.
    #[inline]
    pub(crate) fn check_torch_owned(
        self,
        obj: &Bound<'_, PyAny>,
        managed: Owned<DLManagedTensorVersioned>,
    ) -> PyResult<Owned<DLManagedTensorVersioned>> {
        let Some(checks) = self.torch else {
            return Ok(managed);
        };
        // Its version comes first; `dl_tensor` is read only in the layout
        // of the major version checked here.
        let tensor = managed.get();
        if tensor.version.major != protocol::VERSION.major {
            return Ok(managed);
        }
        match checks.check(obj, tensor.dl_tensor.dtype) {
            Ok(()) => Ok(managed),
            Err(err) => {
                delete_versioned(managed);
                Err(err)
            }
        }
    }

    /// An owned versioned tensor of `obj` (no stream synchronisation).
    ///
    /// # Safety
    ///
    /// `obj` is an instance of the type this table was looked up for
    /// ([`lookup`]`(obj)`): the producer's function casts it unchecked.
    pub(crate) unsafe fn owned(
        self,
        obj: &Bound<'_, PyAny>,
    ) -> PyResult<Owned<DLManagedTensorVersioned>> {
        let mut out: *mut DLManagedTensorVersioned = ptr::null_mut();
        // SAFETY: `obj` is an instance of the type whose table this is (the
        // caller's contract), we are attached, and `out` is writable.
        let status = unsafe { (self.owned_export)(obj.as_ptr().cast(), &mut out) };
        match NonNull::new(out) {
            // SAFETY: the table's owning export hands over a live versioned
            // struct, the caller's to delete (DLPack header).
            Some(managed) if status == 0 => Ok(unsafe { Owned::adopt(managed) }),
            _ => Err(producer_error(obj.py())),
        }
    }

    /// A non-owning view of `obj`'s tensor, valid while `obj` is alive and
    /// unmodified; `None` when the producer offers no such function.
    ///
    /// # Safety
    ///
    /// As for [`owned`](Self::owned).
    pub(crate) unsafe fn borrowed(self, obj: &Bound<'_, PyAny>) -> Option<PyResult<DLTensor>> {
        let from_py = self.table.dltensor_from_py_object_no_sync?;
        let mut out = DLTensor {
            data: ptr::null_mut(),
            device: crate::Device::cpu(),
            ndim: 0,
            dtype: crate::DataType::U8,
            shape: ptr::null_mut(),
            strides: ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: as in `owned`; `out` is a writable DLTensor.
        let status = unsafe { from_py(obj.as_ptr().cast(), &mut out) };
        Some(if status == 0 {
            Ok(out)
        } else {
            Err(producer_error(obj.py()))
        })
    }

    /// Hands `managed` to the producer's framework, which makes its own
    /// tensor of it (`managed_tensor_to_py_object_no_sync`: torch's
    /// `fromDLPack` and `THPVariable_Wrap`). The table's function steals the
    /// struct when it succeeds; when it fails, it may or may not have called
    /// the deleter already (see `export::native`, which tells which).
    ///
    /// # Safety
    ///
    /// `managed` is a live versioned struct the caller owns and gives up
    /// (on success) to the table's framework.
    pub(crate) unsafe fn to_py_object<'py>(
        self,
        py: Python<'py>,
        managed: NonNull<DLManagedTensorVersioned>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(to_py) = self.table.managed_tensor_to_py_object_no_sync else {
            return Err(DLPackError::from(ExportError::NoErrorSet).into());
        };
        let mut out: *mut std::ffi::c_void = ptr::null_mut();
        // SAFETY: attached; `managed` is live and ours to give (the caller's
        // contract); `out` is writable.
        let status = unsafe { to_py(managed.as_ptr(), &mut out) };
        if status != 0 || out.is_null() {
            return Err(producer_error(py));
        }
        // SAFETY: on success the function returns a new reference to the
        // framework's tensor object (DLPack header: "out_py_object").
        Ok(unsafe { Bound::from_owned_ptr(py, out.cast()) })
    }

    /// The producer's current work stream on `device` (`None` for NULL, the
    /// device's default stream, or when the table has no such function).
    pub(crate) fn current_work_stream(
        self,
        py: Python<'_>,
        device: crate::Device,
    ) -> PyResult<Option<usize>> {
        let Some(current) = self.table.current_work_stream else {
            return Ok(None);
        };
        let mut stream: *mut std::ffi::c_void = ptr::null_mut();
        // SAFETY: attached; `stream` is a writable out-parameter.
        let status =
            unsafe { current(device.device_type.code(), device.device_id, &raw mut stream) };
        if status != 0 {
            return Err(producer_error(py));
        }
        Ok((!stream.is_null()).then_some(stream as usize))
    }

    /// Orders an owned import of memory on `device` (a device with streams)
    /// as `mode` says, for a consumer on stream `consumer` (`None`: CUDA's
    /// legacy default stream): the stream it is ready on, or `None` when it
    /// must be imported through `__dlpack__` instead.
    pub(crate) fn order(
        self,
        py: Python<'_>,
        device: crate::Device,
        mode: crate::StreamMode,
        consumer: Option<i64>,
    ) -> PyResult<Option<i64>> {
        let stream_ordered = mode == crate::StreamMode::StreamOrdered;
        let driver = if stream_ordered {
            None
        } else {
            crate::cuda::driver::driver("a synchronising exchange-API import").ok()
        };
        if !stream_ordered && driver.is_none() {
            return Ok(None);
        }
        let producer = self.current_work_stream(py, device)?;
        // Under graph capture, work can be ordered after the producer's only
        // on its (capturing) stream: an import for no named consumer stream is
        // stream-ordered there (a named one is waited for, or refused across
        // the capture's edge, by the wait).
        let capturing = match (driver, producer) {
            (Some(driver), Some(stream))
                if consumer.is_none() && stream > 2 && streams::is_cuda(device) =>
            {
                driver
                    .stream_capturing(device.device_id, stream)
                    .map_err(crate::DLPackError::from)?
            }
            _ => false,
        };
        let ordering = streams::exchange_ordering(
            stream_ordered || capturing,
            device,
            producer,
            consumer,
            driver.is_some(),
        );
        Ok(match ordering {
            streams::ExchangeOrdering::Keep { ready_on } => Some(ready_on),
            streams::ExchangeOrdering::WaitThenKeep {
                producer,
                consumer,
                ready_on,
            } => {
                let driver = driver.expect("a wait is planned only with a driver");
                driver
                    .wait(device.device_id, producer, consumer)
                    .map_err(crate::DLPackError::from)?;
                Some(ready_on)
            }
            streams::ExchangeOrdering::UseDlpack => None,
        })
    }

    /// The table's version (for `PyTensor::version` of borrowed views).
    pub(crate) fn version(self) -> crate::ffi::DLPackVersion {
        self.table.header.version
    }
}

impl ExchangeApi {
    /// Whether the table has an allocator.
    pub(crate) fn has_allocator(self) -> bool {
        self.table.managed_tensor_allocator.is_some()
    }

    /// The table's allocator on `prototype`; `None` when it fails (its
    /// `set_error` was called, or a Python error set).
    ///
    /// # Safety
    ///
    /// Attached; `prototype`'s shape points to `ndim` i64s; `ctx` is what
    /// `set_error` expects, alive through the call.
    pub(crate) unsafe fn allocate(
        self,
        prototype: &mut DLTensor,
        ctx: *mut c_void,
        set_error: crate::ffi::DLPackSetError,
    ) -> Option<NonNull<DLManagedTensorVersioned>> {
        let allocator = self.table.managed_tensor_allocator?;
        let mut out: *mut DLManagedTensorVersioned = ptr::null_mut();
        // SAFETY: the caller's contract; `out` is writable.
        let status = unsafe { allocator(prototype, &mut out, ctx, set_error) };
        NonNull::new(out).filter(|_| status == 0)
    }
}
