//! An export's life, from its block to its deleter: one heap block per
//! export holding the managed tensor struct the capsule points to, the
//! owner that keeps the memory alive, and the shape and strides, in a single
//! allocation that the deleter frees (into its thread's spare slot, for that
//! thread's next export of the same layout: see `crate::spare`); the
//! capsule around it; the deleter.
//!
//! ```text
//! ExportBlock<M, O> { managed: M, ndim, owner: O } | shape: [i64; ndim] | strides: [i64; ndim]
//! ^ the capsule's pointer (M at offset 0, so the deleter's argument is the block)
//! ```
//!
//! Capsules are made with the raw `PyCapsule_New`, not PyO3's equivalent
//! `PyCapsule::new_with_pointer_and_destructor`: that one hands its capsule
//! back through a 72-byte `PyResult` written in its own frame, whose copy
//! into ours was a measurable share of a `__dlpack__` export (criterion
//! `export/shared_versioned`; BENCHMARKS.md). PyO3's safe
//! `PyCapsule::new_with_destructor` is not used either: its destructor frees
//! the contents even after a consumer renamed the capsule to `used_…` and
//! took ownership, which would free the tensor twice. Our destructor
//! respects a consumer's rename and a pending exception.

use std::alloc::Layout;
use std::ffi::{CStr, c_void};
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::DLPackError;
use crate::export::info::TensorInfo;
use crate::export::into::IntoDLPack;
use crate::export::plan::ExportPlan;
use crate::ffi::{
    DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTENSOR, DLTENSOR_VERSIONED,
    DLTensor,
};
use crate::spare;

thread_local! {
    /// This thread's spare export block (of the layout last freed here).
    static SPARE_BLOCK: spare::Slot = const { spare::Slot::new() };
}

/// The two managed-tensor structs a capsule can carry.
///
/// # Safety
///
/// `NAME` must be the capsule name the DLPack Python specification gives the
/// struct; `deleter` and `context` must return the struct's own deleter and
/// `manager_ctx` fields, and `set_release` set those two fields.
pub(crate) unsafe trait ManagedTensor: Sized + 'static {
    /// Name of an unconsumed capsule holding this struct.
    const NAME: &'static CStr;
    /// A struct around `dl_tensor`, freed by `deleter`.
    fn assemble(dl_tensor: DLTensor, flags: u64, deleter: unsafe extern "C" fn(*mut Self)) -> Self;
    /// The deleter field.
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
    /// The `manager_ctx` field.
    fn context(&self) -> *mut c_void;
    /// Sets the `manager_ctx` and deleter fields.
    fn set_release(&mut self, context: *mut c_void, deleter: unsafe extern "C" fn(*mut Self));
}

// SAFETY: the legacy struct travels as "dltensor" and `deleter` is its field.
unsafe impl ManagedTensor for DLManagedTensor {
    const NAME: &'static CStr = DLTENSOR;
    fn assemble(
        dl_tensor: DLTensor,
        _flags: u64,
        deleter: unsafe extern "C" fn(*mut Self),
    ) -> Self {
        Self {
            dl_tensor,
            manager_ctx: ptr::null_mut(),
            deleter: Some(deleter),
        }
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn context(&self) -> *mut c_void {
        self.manager_ctx
    }
    fn set_release(&mut self, context: *mut c_void, deleter: unsafe extern "C" fn(*mut Self)) {
        self.manager_ctx = context;
        self.deleter = Some(deleter);
    }
}

// SAFETY: the versioned struct travels as "dltensor_versioned" and `deleter` is its field.
unsafe impl ManagedTensor for DLManagedTensorVersioned {
    const NAME: &'static CStr = DLTENSOR_VERSIONED;
    fn assemble(dl_tensor: DLTensor, flags: u64, deleter: unsafe extern "C" fn(*mut Self)) -> Self {
        Self {
            version: DLPackVersion::CURRENT,
            manager_ctx: ptr::null_mut(),
            deleter: Some(deleter),
            flags,
            dl_tensor,
        }
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn context(&self) -> *mut c_void {
        self.manager_ctx
    }
    fn set_release(&mut self, context: *mut c_void, deleter: unsafe extern "C" fn(*mut Self)) {
        self.manager_ctx = context;
        self.deleter = Some(deleter);
    }
}

#[repr(C)]
struct ExportBlock<M, O> {
    /// First, so that the capsule's pointer (a `*mut M`) is the block's.
    managed: M,
    /// Length of each of the two trailing i64 arrays.
    ndim: usize,
    /// Keeps the exported memory alive; taken out and dropped by the deleter.
    owner: ManuallyDrop<O>,
}

/// The block's layout for `ndim` dimensions and the offset of the shape array.
/// `ndim` is at most `MAX_NDIM`, so neither step can fail.
fn block_layout<M, O>(ndim: usize) -> (Layout, usize) {
    let dims = Layout::array::<i64>(2 * ndim).expect("ndim fits in i32, so 2 * ndim i64s fit");
    let (layout, tail) = Layout::new::<ExportBlock<M, O>>()
        .extend(dims)
        .expect("a block of at most 2 * i32::MAX i64s fits in isize");
    (layout.pad_to_align(), tail)
}

/// An owner of exported memory and the checked description of that memory,
/// made together from the owner: the one place a description is detached
/// from the borrow of its owner, and what every managed block is written
/// from ([`IntoBlock`]). A description can only be read through a borrow of
/// the pair, so it never outlives the owner that keeps its memory alive.
pub(crate) struct Described<O> {
    info: TensorInfo<'static>,
    owner: O,
}

// SAFETY: the description's only non-`Send` field is the address of memory
// that `owner` keeps alive (see `TensorInfo::detach`); sending the pair sends
// that owner with it, which is `Send`.
unsafe impl<O: Send> Send for Described<O> {}
// SAFETY: `&Described` reads the description's plain fields and hands out
// `&O`, which is `Sync`; the address is not dereferenced through it.
unsafe impl<O: Sync> Sync for Described<O> {}

impl<O: IntoDLPack> Described<O> {
    /// `owner` with its own description ([`IntoDLPack::tensor_info`]).
    #[inline(always)]
    pub(crate) fn new(owner: O) -> Result<Self, DLPackError> {
        // SAFETY: the description is stored with `owner`, which keeps its
        // memory alive at the same address wherever the pair moves
        // (`TensorData`'s promise), and is only lent out with a borrow of it.
        let mut info = unsafe { owner.tensor_info()?.detach() };
        let at = std::ptr::from_ref(&owner).cast::<()>() as usize;
        if !info.is_owned_by(at, size_of::<O>()) {
            info.force_read_only();
        }
        if reads_no_elements::<O>() {
            info.lift_bool_guard();
        }
        Ok(Self { info, owner })
    }
}

/// Whether an exported value of type `O` is a buffer of Rust `bool`s and
/// nothing else: the crate's own types and the standard library's, whose
/// code never reads an element (dropping frees them unread), so no Rust
/// code can read a byte a consumer wrote as a `bool`, and the memory may be
/// exported writable (see `protocol::element_writability`). Learned from
/// the type itself, which no impl of a safe trait could fake.
pub(crate) fn reads_no_elements<O: 'static>() -> bool {
    use std::any::TypeId;
    let ty = TypeId::of::<O>();
    ty == TypeId::of::<Vec<bool>>()
        || ty == TypeId::of::<Box<[bool]>>()
        || ty == TypeId::of::<crate::AlignedBuffer<bool>>()
}

impl<T: IntoDLPack + ?Sized> Described<Arc<T>> {
    /// A shared value with its description (a `DLPackTensor`'s).
    pub(crate) fn shared(value: Arc<T>) -> Result<Self, DLPackError> {
        // SAFETY: as in `new`: every clone of the `Arc` keeps the value, and
        // so its memory, alive and in place.
        let mut info = unsafe { value.tensor_info()?.detach() };
        let at = Arc::as_ptr(&value).cast::<()>() as usize;
        if !info.is_owned_by(at, size_of_val(&*value)) {
            info.force_read_only();
        }
        Ok(Self { info, owner: value })
    }
}

impl<O> Described<O> {
    /// The description, for as long as the owner is borrowed.
    #[inline(always)]
    pub(crate) fn info(&self) -> &TensorInfo<'_> {
        &self.info
    }

    /// The owner of the described memory.
    #[inline(always)]
    pub(crate) fn owner(&self) -> &O {
        &self.owner
    }

    /// The owner, its description dropped (for a consumer that copied what
    /// it needs of it, and now holds the owner alone).
    #[inline(always)]
    pub(crate) fn into_owner(self) -> O {
        self.owner
    }

    /// Exports read-only from now on (a value other `Arc`s share).
    pub(crate) fn force_read_only(&mut self) {
        self.info.force_read_only();
    }

    /// See [`TensorInfo::lift_bool_guard`].
    pub(crate) fn lift_bool_guard(&mut self) {
        self.info.lift_bool_guard();
    }
}

/// What a managed block is written from: a [`Described`] owner, moved into
/// the block, or a shared one, whose `Arc` the block clones.
pub(crate) trait IntoBlock {
    /// Writes the one block of an export, as `plan` says (see [`write_block`]).
    fn into_block<M: ManagedTensor>(self, plan: &ExportPlan) -> NonNull<M>;
}

impl<O: Send + 'static> IntoBlock for Described<O> {
    #[inline(always)]
    fn into_block<M: ManagedTensor>(self, plan: &ExportPlan) -> NonNull<M> {
        if plan.sync_stream == Some(1) {
            // SAFETY: the description is the owner's own (`Described`), and
            // the owner moves into the block with it.
            return unsafe { ordered_block(&self.info, plan, self.owner) };
        }
        // SAFETY: as just said.
        unsafe { write_block(&self.info, plan, self.owner) }
    }
}

impl<T: Send + Sync + ?Sized + 'static> IntoBlock for &Described<Arc<T>> {
    #[inline(always)]
    fn into_block<M: ManagedTensor>(self, plan: &ExportPlan) -> NonNull<M> {
        let owner = Arc::clone(&self.owner);
        if plan.sync_stream == Some(1) {
            // SAFETY: the description is the shared value's own
            // (`Described`), and a clone of its `Arc` moves into the block,
            // keeping it alive.
            return unsafe { ordered_block(&self.info, plan, owner) };
        }
        // SAFETY: as just said.
        unsafe { write_block(&self.info, plan, owner) }
    }
}

/// [`IntoBlock::into_block`] of a value (owned, or shared through `owner`)
/// exported to a consumer on CUDA's legacy default stream: when the value
/// has a stream of its own, the block's release makes it wait for the
/// legacy stream before letting the value go ([`delete_ordered`]). The
/// block itself is the one [`write_block`] writes for every export (one
/// instance of it and of its deleter per owner type, not a second for an
/// ordered owner): the wait travels in its `manager_ctx`, the producer's
/// own field, with a deleter that queues it first.
///
/// # Safety
///
/// As for [`write_block`]: `info` describes memory that `owner` keeps alive.
#[inline(never)]
unsafe fn ordered_block<M: ManagedTensor, O: Send + 'static>(
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
    owner: O,
) -> NonNull<M> {
    // SAFETY: the caller's contract.
    let mut block = unsafe { write_block::<M, O>(info, plan, owner) };
    if let Some((consumer, value)) =
        crate::cuda::streams::release_wait(info.device(), info.stream(), plan.sync_stream)
    {
        let wait = Box::new(ReleaseWait {
            device: info.device().device_id,
            consumer,
            value,
        });
        // SAFETY: the block `write_block` just made, not yet handed out: ours
        // alone. Its deleter becomes `delete_ordered` for the same `M` and
        // `O`, which takes the wait back from `manager_ctx` (NULL until now).
        unsafe { block.as_mut() }.set_release(Box::into_raw(wait).cast(), delete_ordered::<M, O>);
    }
    block
}

/// The wait a released export makes: the value's stream (`value`) waits
/// for the consumer's work queued so far on stream `consumer` (the legacy
/// default stream: see `cuda::streams::release_wait`), queued when this is
/// dropped, before the value goes. A wait that cannot be queued (no driver,
/// a context under capture) is skipped: a deleter cannot fail.
struct ReleaseWait {
    device: i32,
    consumer: usize,
    value: usize,
}

impl Drop for ReleaseWait {
    fn drop(&mut self) {
        if let Ok(driver) = crate::cuda::driver::driver("ordering a released export's stream") {
            let _ = driver.wait(self.device, self.consumer, self.value);
        }
    }
}

/// The deleter of a block [`ordered_block`] made: queues the wait its
/// `manager_ctx` holds ([`ReleaseWait`]), then frees the block and drops
/// the value as [`delete_block`] does. Like it, it touches no Python object
/// and lets no panic escape into C.
///
/// # Safety
///
/// `managed` is null, or a pointer returned by `ordered_block` for the same
/// `M` and `O`, with its wait, that has not been passed to this deleter
/// before.
unsafe extern "C" fn delete_ordered<M: ManagedTensor, O: Send + 'static>(managed: *mut M) {
    let Some(block) = NonNull::new(managed) else {
        return;
    };
    // SAFETY: a live block, by the caller's contract.
    let context = unsafe { block.as_ref() }.context();
    // SAFETY: `ordered_block` set the block's `manager_ctx` to a leaked
    // `Box<ReleaseWait>`, taken back once, here.
    let wait = unsafe { Box::from_raw(context.cast::<ReleaseWait>()) };
    drop_owner(wait);
    // SAFETY: a block `write_block` made for the same `M` and `O`
    // (`ordered_block` only changed its release fields), freed once: this
    // is its deleter's single call.
    unsafe { delete_block::<M, O>(managed) };
}

/// Writes the one block of an export, as `plan` says (device, flags):
/// allocates it, copies the description's extents and strides after the
/// header, and moves `owner` in. From here on
/// the returned struct's deleter (exactly once) frees the block and drops
/// the owner.
///
/// # Safety
///
/// `info` describes memory that stays allocated, at the same address, until
/// `owner` is dropped: in every export, memory `owner` itself keeps alive
/// ([`Described`], the pair that guarantees it).
unsafe fn write_block<M: ManagedTensor, O: Send + 'static>(
    info: &TensorInfo<'_>,
    plan: &ExportPlan,
    owner: O,
) -> NonNull<M> {
    // Extents then strides, as the block holds them: one copy, not two
    // (each a `memcpy` call of a few bytes; callgrind, BENCHMARKS.md).
    let dims = info.dims_pair();
    let ndim = dims.len() / 2;
    let (layout, tail) = block_layout::<M, O>(ndim);
    // Never zero-sized: the layout holds an `ExportBlock` and its non-zero-sized `M`.
    let block = spare::take(&SPARE_BLOCK, layout).cast::<ExportBlock<M, O>>();
    let raw = block.as_ptr().cast::<u8>();
    let shape = raw.wrapping_add(tail).cast::<i64>();
    let strides = shape.wrapping_add(ndim);
    // SAFETY: `shape` starts 2 * ndim i64s inside the allocation
    // (`block_layout` reserved them from `tail`, which `Layout::extend`
    // aligned for i64); the source is 2 * ndim long (a pair: `dims.len()`
    // is even) and a separate allocation.
    unsafe { ptr::copy_nonoverlapping(dims.as_ptr(), shape, 2 * ndim) };
    let dl_tensor = DLTensor {
        data: info.data_ptr(),
        device: plan.device,
        ndim: i32::try_from(ndim).expect("TensorInfo::build checked ndim <= MAX_NDIM"),
        dtype: info.dtype(),
        shape,
        strides,
        byte_offset: 0,
    };
    let header = ExportBlock {
        managed: M::assemble(dl_tensor, plan.flags(), delete_block::<M, O>),
        ndim,
        owner: ManuallyDrop::new(owner),
    };
    // SAFETY: the block is allocated for an `ExportBlock<M, O>` and aligned
    // for it (its layout begins with `ExportBlock`'s).
    unsafe { block.as_ptr().write(header) };
    block.cast()
}

/// The deleter of every exported struct. It may run on any thread, with or
/// without the GIL (torch and TensorFlow free tensors without it): it touches
/// no Python object, and a panic from the owner's `Drop` is caught (see `drop_owner`)
/// rather than unwinding into C.
///
/// # Safety
///
/// `managed` is null, or a pointer returned by `write_block` for the
/// same `M` and `O` that has not been passed to this deleter before.
unsafe extern "C" fn delete_block<M: ManagedTensor, O: Send + 'static>(managed: *mut M) {
    let Some(allocation) = NonNull::new(managed.cast::<ExportBlock<M, O>>()) else {
        return;
    };
    let block = allocation.as_ptr();
    // SAFETY: the caller guarantees `block` is a finished, live block, read
    // (and so its owner taken) exactly once, here.
    let ExportBlock { ndim, owner, .. } = unsafe { block.read() };
    let (layout, _) = block_layout::<M, O>(ndim);
    // SAFETY: the block was allocated by `spare::take` (the global allocator)
    // with this layout (same M, O and ndim); nothing reads it after this
    // point. It is kept as this thread's spare block, or freed.
    unsafe { spare::give_back(&SPARE_BLOCK, allocation.cast(), layout) };
    drop_owner(ManuallyDrop::into_inner(owner));
}

/// Drops an exported value without letting a panic escape into C. The panic
/// hook has already reported the panic (Rust's default one prints it); the
/// crate adds nothing, and touches no Python object here: a deleter may run
/// on a thread that cannot attach to the interpreter.
pub(crate) fn drop_owner<O>(owner: O) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(owner))) {
        // Dropping the payload could panic again; leak it instead.
        std::mem::forget(payload);
    }
}

/// Calls a managed struct's own deleter (if it has one): the struct and
/// everything it owns are freed.
///
/// # Safety
///
/// `managed` is a live managed struct that the caller owns (the DLPack
/// header: "the consumer calls the deleter once it is done"), and nothing
/// uses it afterwards: this is the single call of its deleter.
pub(crate) unsafe fn call_deleter<M: ManagedTensor>(managed: NonNull<M>) {
    // SAFETY: live, by the caller's contract.
    let deleter = unsafe { managed.as_ref() }.deleter();
    if let Some(deleter) = deleter {
        // SAFETY: the struct's own deleter, called once with the struct, as
        // the caller owns it and gives it up here.
        unsafe { deleter(managed.as_ptr()) };
    }
}

/// Wraps a finished managed struct in a capsule named `M::NAME`.
///
/// On failure the struct's deleter runs (the export is undone) and the
/// Python error is returned.
#[inline]
pub(crate) fn new_capsule<'py, M: ManagedTensor>(
    py: Python<'py>,
    managed: NonNull<M>,
) -> PyResult<Bound<'py, PyCapsule>> {
    // SAFETY: attached; `managed` is a live struct that the capsule owns
    // from here on and that the destructor frees (unless a consumer renamed
    // the capsule and took it); the name is `'static` (CPython keeps the
    // pointer); the destructor is for this `M`, never unwinds, and is called
    // by CPython attached to the interpreter.
    let capsule = unsafe {
        ffi::PyCapsule_New(
            managed.as_ptr().cast(),
            M::NAME.as_ptr(),
            Some(capsule_destructor::<M>),
        )
    };
    if capsule.is_null() {
        // SAFETY: no capsule was made, so we still own the struct; its single
        // deleter call undoes the export.
        unsafe { call_deleter(managed) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference to the capsule just made.
    let capsule = unsafe { Bound::from_owned_ptr(py, capsule) };
    // SAFETY: `PyCapsule_New` made a capsule.
    Ok(unsafe { capsule.cast_into_unchecked() })
}

/// The capsule's destructor, run by CPython (attached to the interpreter)
/// when the capsule is freed.
///
/// It calls the deleter only if the capsule still has its unconsumed name: a
/// consumer that took the tensor renamed it (`used_dltensor…`) and calls the
/// deleter itself. A Python exception may be pending when it runs (NumPy drops
/// capsules on its error paths); it is saved and restored around our work so
/// that the consumer's exception reaches the caller unchanged.
///
/// # Safety
///
/// Called by CPython with a capsule created by [`new_capsule::<M>`].
unsafe extern "C" fn capsule_destructor<M: ManagedTensor>(capsule: *mut ffi::PyObject) {
    let pending = SavedException::take();
    // SAFETY: `capsule` is the live capsule being destroyed, made by
    // `new_capsule` with a non-NULL pointer, so `PyCapsule_GetName` cannot
    // fail or set an exception (CPython fails it only for non-capsules and
    // NULL pointers).
    let name = unsafe { ffi::PyCapsule_GetName(capsule) };
    // SAFETY: a capsule's name is NULL or a NUL-terminated string that
    // outlives the capsule (CPython's contract for `PyCapsule_SetName`).
    if unsafe { unconsumed::<M>(name) } {
        // SAFETY: as above, and the name is the one we gave, so this returns
        // our pointer without setting an exception.
        let managed = unsafe { ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr()) };
        if let Some(managed) = NonNull::new(managed.cast::<M>()) {
            // SAFETY: unconsumed, so the capsule still owns the struct; the
            // capsule is being destroyed, so this is the single deleter call.
            unsafe { call_deleter(managed) };
        }
    }
    pending.restore();
}

/// Whether a capsule named `name` still has the unconsumed name `M::NAME`.
///
/// A consumer that took the tensor renamed the capsule (`used_…`, the
/// DLPack Python specification). The name this crate gave is recognised by
/// its address first (the capsule's own pointer, unchanged: no string to
/// read); any other address is compared by content, as CPython compares
/// capsule names: a constant's address is not unique (each codegen unit
/// may hold its own copy of the string), so the address alone could take an
/// unconsumed capsule for a consumed one, and leak it. The content is read
/// byte by byte up to the first difference: a consumed name differs at its
/// first byte (`u`), where a `strlen` would have read all of it.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string (a capsule's name: CPython's
/// contract for `PyCapsule_SetName` keeps it alive with the capsule).
#[inline(always)]
unsafe fn unconsumed<M: ManagedTensor>(name: *const std::ffi::c_char) -> bool {
    if std::ptr::eq(name, M::NAME.as_ptr()) {
        return true;
    }
    !name.is_null() && {
        let ours = M::NAME.to_bytes_with_nul();
        ours.iter().enumerate().all(|(i, &byte)| {
            let at = name.wrapping_add(i);
            // SAFETY: `name` is non-NULL here, so a NUL-terminated string
            // (the caller's contract); bytes `0..i` equalled ours, none of
            // them NUL (ours has its only NUL last), so byte `i` is still
            // inside the string, at most its NUL.
            unsafe { at.read() as u8 == byte }
        })
    }
}

/// The exception pending on this thread, held aside while a destructor works.
///
/// Not `PyErr::take`: that normalises the exception (creating its value
/// object, which can run Python code and fail inside a destructor) and, for
/// a `PanicException`, resumes the panic, which must not unwind out of an
/// `extern "C"` destructor. The raw fetch and restore hand the very same
/// references back, untouched, as CPython's docs for `PyErr_Fetch` /
/// `PyErr_GetRaisedException` recommend for code that must preserve an
/// exception around a call.
struct SavedException {
    #[cfg(Py_3_12)]
    exception: *mut ffi::PyObject,
    #[cfg(not(Py_3_12))]
    parts: [*mut ffi::PyObject; 3],
}

impl SavedException {
    /// Takes the pending exception (if any), leaving none set.
    fn take() -> Self {
        #[cfg(Py_3_12)]
        {
            // SAFETY: called attached to the interpreter (from a capsule destructor).
            let exception = unsafe { ffi::PyErr_GetRaisedException() };
            Self { exception }
        }
        #[cfg(not(Py_3_12))]
        {
            let mut parts = [std::ptr::null_mut(); 3];
            // Most destructors run with none pending: asking is cheaper
            // than a fetch (three out-pointers, three writes).
            // SAFETY: called attached.
            if unsafe { ffi::PyErr_Occurred() }.is_null() {
                return Self { parts };
            }
            let [kind, value, traceback] = &mut parts;
            // SAFETY: called attached; the three out-pointers are valid.
            unsafe { ffi::PyErr_Fetch(kind, value, traceback) };
            Self { parts }
        }
    }

    /// Sets the saved exception again (dropping any raised meanwhile).
    fn restore(self) {
        #[cfg(Py_3_12)]
        {
            if !self.exception.is_null() {
                // SAFETY: attached; hands back the reference `take` received.
                unsafe { ffi::PyErr_SetRaisedException(self.exception) };
            }
        }
        #[cfg(not(Py_3_12))]
        {
            let [kind, value, traceback] = self.parts;
            if !kind.is_null() {
                // SAFETY: attached; hands back the references `take` received.
                unsafe { ffi::PyErr_Restore(kind, value, traceback) };
            }
        }
    }
}

/// The data pointer of a finished struct (for tests).
#[cfg(test)]
pub(crate) fn data_of(managed: NonNull<DLManagedTensorVersioned>) -> *mut c_void {
    // SAFETY: `managed` is a live struct produced by `write_block`.
    unsafe { managed.as_ref() }.dl_tensor.data
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::Device;
    use crate::export::plan::CapsuleFormat;

    /// An in-place export to `device`; `copied` sets the IS_COPIED flag.
    fn plan(device: Device, copied: bool) -> ExportPlan {
        ExportPlan {
            format: CapsuleFormat::Versioned,
            copy: copied,
            device,
            sync_stream: None,
            read_only: false,
        }
    }

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_block_holds_shape_strides_and_owner_and_frees_them_once() {
        let data = vec![0.0f32; 24];
        let info = TensorInfo::builder(&data)
            .shape([2usize, 3, 4])
            .strides([1i64, 2, 6])
            .build()
            .unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        // SAFETY: `data`, which `info` describes, outlives the block (its
        // deleter runs below).
        let managed = unsafe {
            write_block::<DLManagedTensorVersioned, _>(
                &info,
                &plan(Device::cpu(), true),
                (data.clone(), Counted(drops.clone())),
            )
        };
        // SAFETY: live until the deleter runs below.
        let m = unsafe { managed.as_ref() };
        assert_eq!(m.version, DLPackVersion { major: 1, minor: 3 });
        assert_eq!(m.flags, 2);
        assert_eq!(m.dl_tensor.ndim, 3);
        assert_eq!(m.dl_tensor.byte_offset, 0);
        // SAFETY: the block holds ndim shape and stride entries.
        let shape = unsafe { std::slice::from_raw_parts(m.dl_tensor.shape, 3) };
        // SAFETY: as above.
        let strides = unsafe { std::slice::from_raw_parts(m.dl_tensor.strides, 3) };
        assert_eq!(shape, [2, 3, 4]);
        assert_eq!(strides, [1, 2, 6]);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        // SAFETY: we own the struct; its single deleter call.
        unsafe { call_deleter(managed) };
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_freed_block_is_written_again_by_the_next_export_of_its_layout() {
        let data = vec![0.0f32; 6];
        let info = TensorInfo::new(&data, [2usize, 3]).unwrap();
        let export = |owner: Vec<f32>| {
            // SAFETY: `data`, which `info` describes, outlives both blocks.
            unsafe {
                write_block::<DLManagedTensorVersioned, _>(
                    &info,
                    &plan(Device::cpu(), false),
                    owner,
                )
            }
        };
        let first = export(data.clone());
        // SAFETY: we own the struct; its single deleter call.
        unsafe { call_deleter(first) };
        let second = export(data.clone());
        assert_eq!(second, first);
        // SAFETY: live until its deleter runs below.
        let m = unsafe { second.as_ref() };
        // SAFETY: the block holds ndim shape entries.
        let shape = unsafe { std::slice::from_raw_parts(m.dl_tensor.shape, 2) };
        assert_eq!(shape, [2, 3]);
        // SAFETY: we own the struct; its single deleter call.
        unsafe { call_deleter(second) };
    }

    #[test]
    fn zero_d_exports_point_shape_and_strides_at_empty_non_null_arrays() {
        let data = vec![1u8];
        let info = TensorInfo::new(&data, [0usize; 0]).unwrap();
        // SAFETY: `data`, which `info` describes, outlives the block.
        let managed = unsafe {
            write_block::<DLManagedTensor, _>(&info, &plan(Device::cpu(), false), data.clone())
        };
        // SAFETY: live until the deleter runs below.
        let m = unsafe { managed.as_ref() };
        assert_eq!(m.dl_tensor.ndim, 0);
        assert!(!m.dl_tensor.shape.is_null());
        assert!(!m.dl_tensor.strides.is_null());
        // SAFETY: we own the struct; its single deleter call.
        unsafe { call_deleter(managed) };
    }

    #[test]
    fn a_panicking_drop_is_caught_and_the_block_still_freed() {
        struct Explodes;
        impl Drop for Explodes {
            fn drop(&mut self) {
                panic!("boom");
            }
        }
        let data = vec![1u8];
        let info = TensorInfo::new(&data, [1usize]).unwrap();
        // SAFETY: `data`, which `info` describes, outlives the block.
        let managed = unsafe {
            write_block::<DLManagedTensor, _>(&info, &plan(Device::cpu(), false), Explodes)
        };
        // SAFETY: we own the struct; its single deleter call. Must not unwind.
        unsafe { call_deleter(managed) };
    }

    #[test]
    fn a_capsule_name_is_unconsumed_only_when_it_is_ours_by_content() {
        let legacy = |name: &CStr| {
            // SAFETY: a NUL-terminated string.
            unsafe { unconsumed::<DLManagedTensor>(name.as_ptr()) }
        };
        let versioned = |name: &CStr| {
            // SAFETY: as above.
            unsafe { unconsumed::<DLManagedTensorVersioned>(name.as_ptr()) }
        };
        // Ours at its own address, and the same characters elsewhere (another
        // codegen unit's copy of the constant).
        assert!(legacy(DLTENSOR));
        assert!(legacy(&std::ffi::CString::new("dltensor").unwrap()));
        assert!(versioned(DLTENSOR_VERSIONED));
        assert!(versioned(
            &std::ffi::CString::new("dltensor_versioned").unwrap()
        ));
        // A consumer's rename, the other struct's name, a prefix, nothing.
        for name in [c"used_dltensor", c"dltensor_versioned", c"dltenso", c""] {
            assert!(!legacy(name), "{name:?}");
        }
        for name in [
            c"used_dltensor_versioned",
            c"dltensor",
            c"dltensor_versione",
        ] {
            assert!(!versioned(name), "{name:?}");
        }
        // SAFETY: NULL is allowed.
        assert!(!unsafe { unconsumed::<DLManagedTensor>(std::ptr::null()) });
    }

    #[test]
    fn deleter_runs_on_another_thread() {
        struct SendPtr(NonNull<DLManagedTensorVersioned>);
        // SAFETY: the block's owner is Send (Vec<u8>), and only the other thread touches it.
        unsafe impl Send for SendPtr {}
        let data = vec![5u8; 8];
        let expected = data.as_ptr() as usize;
        let managed: NonNull<DLManagedTensorVersioned> = Described::new(data)
            .unwrap()
            .into_block(&plan(Device::cpu(), false));
        assert_eq!(data_of(managed) as usize, expected);
        let ptr = SendPtr(managed);
        std::thread::spawn(move || {
            let ptr = ptr;
            // SAFETY: this thread owns the struct now; its single deleter call.
            unsafe { call_deleter(ptr.0) }
        })
        .join()
        .unwrap();
    }
}
