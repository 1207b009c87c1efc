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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

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

static LIVE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn live() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock cannot leave the list inconsistent
    // (each operation is one push or one swap_remove).
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One live import's byte range; unregistered on drop (on any thread).
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
}

impl Registration {
    /// Registers `[start, end)`; `None` for an empty range (no elements to alias).
    pub(crate) fn new((start, end): (usize, usize)) -> Option<Self> {
        if start == end {
            return None;
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        live().push(Entry {
            id,
            start,
            end,
            writer: false,
        });
        Some(Self { id })
    }

    /// Claims the range for a mutable view: `true`, and this import is a
    /// writer from now on, when no other live import overlaps it.
    pub(crate) fn claim_exclusive(&self) -> bool {
        let mut live = live();
        let Some(index) = live.iter().position(|e| e.id == self.id) else {
            return false;
        };
        let me = &live[index];
        if live.iter().any(|e| e.overlaps(me)) {
            return false;
        }
        live[index].writer = true;
        true
    }

    /// Whether shared views may be made: no other live import that
    /// overlaps this one has handed out a mutable view.
    pub(crate) fn may_read(&self) -> bool {
        let live = live();
        let Some(me) = live.iter().find(|e| e.id == self.id) else {
            return false;
        };
        !live.iter().any(|e| e.writer && e.overlaps(me))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(index) = live.iter().position(|e| e.id == self.id) {
            live.swap_remove(index);
        }
    }
}
