//! The address ranges of live imports that handed out views, so that a
//! mutable view is refused while another import's view may share the memory.
//!
//! `fn f(mut a: PyTensor, b: PyTensor)` called as `f(x, x)` imports the same
//! buffer twice; `a.as_slice_mut()` next to `b.as_slice()` would be a `&mut`
//! and a `&` to the same elements. An import registers its byte range here
//! when it first hands out a view (of any kind: slices, arrays, copies,
//! device views) and stays until it is dropped; mutable views need the range
//! to be theirs alone among registered imports. An import that never hands
//! out a view (one only described, or handed on) is never registered, and
//! costs the registry nothing: it cannot alias anything, and if it makes a
//! view later, that view is checked then against every registered one.
//!
//! Checking only when a mutable view is made is not enough once threads run
//! in parallel (free-threaded CPython, or Rust code that detached from the
//! interpreter): another thread may import the same array *after* the check
//! and read it while the `&mut` is alive. So an import that handed out a
//! mutable view is marked a *writer* until it drops (a view's end cannot be
//! observed; its borrow ends no later than the `PyTensor`), and shared views
//! of any other import overlapping a writer are refused. Both decisions are
//! taken under the one lock, so they are ordered.
//!
//! **One registry per process.** Every extension module built on this crate
//! (any version that speaks [`SharedRegistry`]'s version 1) uses the same
//! registry: the first to need it publishes a capsule named
//! [`CAPSULE_NAME`] as the attribute [`ATTRIBUTE`] of the `sys` module
//! (`dict.setdefault`, atomic), and every module, that one included, calls
//! the functions of the table that capsule holds. So a view taken by one
//! extension excludes a mutable view of the same memory taken by another,
//! as rust-numpy shares its borrow flags. Where the interpreter cannot be
//! reached (it is finalizing), this copy's own registry is used.
//!
//! **Fork.** The lock is held only for a few memory operations, but a thread
//! may hold it (with the interpreter released) at the moment another thread
//! forks, and the child would inherit it locked, forever. So the copy that
//! owns a registry holds its lock across every `fork` (`pthread_atfork`:
//! taken before, released after, in parent and child): the child's registry
//! is the parent's, whole and unlocked, so the parent's imports that are
//! still alive in the child's memory keep excluding what they excluded. The
//! handlers are registered while attached to the interpreter and before the
//! table is published (version 1 of the table promises them), so no thread
//! can use a registry whose lock a fork would not wait for.

use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

/// The capsule's name, which says the table's layout (version 1).
pub(crate) const CAPSULE_NAME: &CStr = c"pyo3_dlpack.aliasing_registry.v1";

/// The attribute of the `sys` module holding the capsule.
pub(crate) const ATTRIBUTE: &str = "_pyo3_dlpack_aliasing_registry_v1";

/// The registry's functions, as a C table shared by every copy of this
/// crate in the process. Never changed once published; its functions never
/// unwind and may be called on any thread, attached or not, and a `fork`
/// never copies their lock held (the publishing copy registered its fork
/// handlers before publishing).
#[repr(C)]
pub(crate) struct SharedRegistry {
    /// 1.
    version: u64,
    /// Registers `[start, end)` (non-empty); returns its id (never 0).
    register: unsafe extern "C" fn(start: usize, end: usize) -> u64,
    /// Claims the id's range for a mutable view: 1 when no other live
    /// range overlaps it (the id is a writer from then on), else 0.
    claim_exclusive: unsafe extern "C" fn(id: u64) -> c_int,
    /// 1 when no other live range overlapping the id's is a writer.
    may_read: unsafe extern "C" fn(id: u64) -> c_int,
    /// Removes the id's range.
    unregister: unsafe extern "C" fn(id: u64),
}

/// This copy's table (published when it is the first).
static OWN: SharedRegistry = SharedRegistry {
    version: 1,
    register: own_register,
    claim_exclusive: own_claim_exclusive,
    may_read: own_may_read,
    unregister: own_unregister,
};

/// The table this copy uses, found once.
static SHARED: OnceLock<&'static SharedRegistry> = OnceLock::new();

/// The process's table: the one published in `sys`, publishing this copy's
/// if none is (or, without an interpreter to ask, this copy's own).
fn shared() -> &'static SharedRegistry {
    if let Some(table) = SHARED.get() {
        return table;
    }
    // Found outside the lock's initialiser: a thread blocked in it while
    // attached would keep this one from attaching. Threads racing here find
    // the same published table (`setdefault`).
    let found = Python::try_attach(|py| {
        // Attached, with no Python code run in between, so no fork (it
        // needs the interpreter, or stops the world on a free-threaded one)
        // falls between registering the handlers and publishing.
        fork::hold_lock_across_fork();
        crate::python::ok(published(py))
    })
    .flatten()
    .unwrap_or_else(|| {
        // No interpreter (it is finalizing): this copy's own registry.
        fork::hold_lock_across_fork();
        &OWN
    });
    SHARED.get_or_init(|| found)
}

/// `sys._pyo3_dlpack_aliasing_registry_v1`'s table, set to this copy's if
/// absent.
fn published(py: Python<'_>) -> PyResult<&'static SharedRegistry> {
    let table = NonNull::from(&OWN).cast::<c_void>();
    // SAFETY: `OWN` is an immutable static of this library, which is never
    // unloaded (CPython does not unload extension modules); no destructor.
    let mine = unsafe { PyCapsule::new_with_pointer(py, table, CAPSULE_NAME) }?;
    let sys = py.import("sys")?;
    let found = sys
        .dict()
        .call_method1("setdefault", (ATTRIBUTE, mine))?
        .cast_into::<PyCapsule>()?;
    // Only this crate makes capsules of this name, and only around a
    // version-1 table of a library never unloaded; Python code cannot make
    // a capsule, nor rename one.
    let pointer = found.pointer_checked(Some(CAPSULE_NAME))?;
    // SAFETY: as just said: a live, immutable `SharedRegistry` of version 1
    // (the name says the version).
    let table = unsafe { pointer.cast::<SharedRegistry>().as_ref() };
    if table.version != 1 {
        return Err(crate::error::PythonKind::Import
            .new_err("the process's pyo3-dlpack aliasing registry is of another version".into()));
    }
    Ok(table)
}

struct Entry {
    id: u64,
    start: usize,
    end: usize,
    /// Has handed out a mutable view (sticky until the import drops).
    writer: bool,
}

impl Entry {
    fn overlaps(&self, other: &Entry) -> bool {
        self.id != other.id && self.start < other.end && other.start < self.end
    }
}

/// This copy's registry (every copy's, when this copy published it).
static LIVE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

// Out of line: one copy of the lock's code for the table's functions and
// the fork handlers.
#[inline(never)]
fn live() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock cannot leave the list inconsistent
    // (each operation is one push or one swap_remove).
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The registry's lock held across `fork` (see the module's doc).
#[cfg(unix)]
mod fork {
    use std::cell::UnsafeCell;
    use std::ffi::c_int;
    use std::sync::MutexGuard;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{Entry, live, no_unwind};

    type Handler = Option<unsafe extern "C" fn()>;

    unsafe extern "C" {
        // POSIX; in the C library every Rust program on Unix links.
        fn pthread_atfork(prepare: Handler, parent: Handler, child: Handler) -> c_int;
    }

    /// The guard taken before a fork, until it is released after.
    struct Held(UnsafeCell<Option<MutexGuard<'static, Vec<Entry>>>>);

    // SAFETY: only the fork handlers touch the cell, and the registry's lock
    // orders them: `prepare` writes it after locking, `release` empties it
    // before unlocking, so two forks (two threads) never touch it at once.
    unsafe impl Sync for Held {}

    static HELD: Held = Held(UnsafeCell::new(None));
    static REGISTERED: AtomicBool = AtomicBool::new(false);

    /// Registers the handlers, once per copy of this crate.
    pub(super) fn hold_lock_across_fork() {
        if !REGISTERED.swap(true, Ordering::AcqRel) {
            // SAFETY: both handlers are `extern "C"` functions of this
            // library (never unloaded) that never unwind. If registration
            // fails (no memory), forks are as unguarded as before.
            unsafe { pthread_atfork(Some(prepare), Some(release), Some(release)) };
        }
    }

    /// Before `fork`: waits for the lock and keeps it (no code holding it
    /// waits on anything, so this wait is a few memory operations long).
    unsafe extern "C" fn prepare() {
        no_unwind((), || {
            let guard = live();
            // SAFETY: see `Held`: this thread now holds the lock.
            unsafe { *HELD.0.get() = Some(guard) };
        });
    }

    /// After `fork`, in the parent and in the child (whose one thread is the
    /// forking one, the guard's owner): unlocks.
    unsafe extern "C" fn release() {
        no_unwind((), || {
            // SAFETY: see `Held`: this thread holds the lock `prepare` took.
            drop(unsafe { (*HELD.0.get()).take() });
        });
    }
}

/// No `fork` here: nothing to hold.
#[cfg(not(unix))]
mod fork {
    pub(super) fn hold_lock_across_fork() {}
}

/// Runs `body`, returning `fallback` instead of unwinding into C.
fn no_unwind<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// # Safety
///
/// None beyond the table's: any values, any thread (`unsafe` for the C ABI).
unsafe extern "C" fn own_register(start: usize, end: usize) -> u64 {
    no_unwind(0, || {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        live().push(Entry {
            id,
            start,
            end,
            writer: false,
        });
        id
    })
}

/// # Safety
///
/// As for `own_register`.
unsafe extern "C" fn own_claim_exclusive(id: u64) -> c_int {
    no_unwind(0, || {
        let mut live = live();
        let Some(index) = live.iter().position(|e| e.id == id) else {
            return 0;
        };
        let me = &live[index];
        if live.iter().any(|e| e.overlaps(me)) {
            return 0;
        }
        live[index].writer = true;
        1
    })
}

/// # Safety
///
/// As for `own_register`.
unsafe extern "C" fn own_may_read(id: u64) -> c_int {
    no_unwind(0, || {
        let live = live();
        let Some(me) = live.iter().find(|e| e.id == id) else {
            return 0;
        };
        c_int::from(!live.iter().any(|e| e.writer && e.overlaps(me)))
    })
}

/// # Safety
///
/// As for `own_register`.
unsafe extern "C" fn own_unregister(id: u64) {
    no_unwind((), || {
        let mut live = live();
        if let Some(index) = live.iter().position(|e| e.id == id) {
            live.swap_remove(index);
        }
    })
}

/// One live import's byte range; unregistered on drop (on any thread).
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    table: &'static SharedRegistry,
    /// `may_read` answered `true`: it answers so until this import drops,
    /// since no other import can become a writer over a range that overlaps
    /// a live registered one (`claim_exclusive` refuses any overlap), so the
    /// registry is not asked again.
    read_granted: AtomicBool,
}

impl std::fmt::Debug for SharedRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegistry")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// Registers `[start, end)`; `None` for an empty range (no elements to
    /// alias). If the registry could not take the range (id 0: it failed
    /// to grow), every view of this import is refused.
    pub(crate) fn new((start, end): (usize, usize)) -> Option<Self> {
        if start == end {
            return None;
        }
        let table = shared();
        // SAFETY: the table's functions take any values on any thread.
        let id = unsafe { (table.register)(start, end) };
        Some(Self {
            id,
            table,
            read_granted: AtomicBool::new(false),
        })
    }

    /// Claims the range for a mutable view: `true`, and this import is a
    /// writer from now on, when no other live import overlaps it.
    pub(crate) fn claim_exclusive(&self) -> bool {
        // SAFETY: as in `new`.
        unsafe { (self.table.claim_exclusive)(self.id) != 0 }
    }

    /// Whether shared views may be made: no other live import that
    /// overlaps this one has handed out a mutable view.
    pub(crate) fn may_read(&self) -> bool {
        if self.read_granted.load(Ordering::Relaxed) {
            return true;
        }
        // SAFETY: as in `new`.
        let granted = unsafe { (self.table.may_read)(self.id) != 0 };
        if granted {
            self.read_granted.store(true, Ordering::Relaxed);
        }
        granted
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { (self.table.unregister)(self.id) }
    }
}
