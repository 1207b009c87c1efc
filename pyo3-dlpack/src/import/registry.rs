//! The address ranges of live imports, so that a mutable view is refused
//! while another imported tensor shares the memory.
//!
//! `fn f(mut a: PyTensor, b: PyTensor)` called as `f(x, x)` imports the same
//! buffer twice; `a.as_slice_mut()` next to `b.as_slice()` would be a `&mut`
//! and a `&` to the same elements. Every import with elements registers its
//! byte range here until it is dropped; mutable views need the range to be
//! theirs alone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

struct Entry {
    id: u64,
    start: usize,
    end: usize,
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
        live().push(Entry { id, start, end });
        Some(Self { id })
    }

    /// Whether no other live import overlaps this one.
    pub(crate) fn is_exclusive(&self) -> bool {
        let live = live();
        let Some(me) = live.iter().find(|e| e.id == self.id) else {
            return false;
        };
        !live
            .iter()
            .any(|e| e.id != me.id && e.start < me.end && me.start < e.end)
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
