//! One spare heap block per thread and per use: an allocation that is made
//! and freed once per call (an import's state, an export's managed block)
//! is kept, when freed, for the same thread's next call instead.
//!
//! `malloc` and `free` were a large share of an import's own instructions
//! and of `__dlpack__`'s block writing (callgrind; the figures are in git
//! history, the current ones in BENCHMARKS.md). A slot is thread-local, so it needs no lock or atomic; a block
//! freed on another thread (a `PyTensor` is `Send`, and DLPack deleters run
//! on any thread, with or without the GIL) fills that thread's slot instead.
//! A slot holds one block of one layout; a block of another layout is
//! allocated and freed as usual. A thread's spare is freed when the thread
//! exits, and a block given back while it exits is freed at once.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::NonNull;
use std::thread::LocalKey;

/// A spare block and the layout it was allocated with.
pub(crate) struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by the global allocator with `layout`
        // (see `give_back`'s contract) and a `Block` is its only owner.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// The slot of one use: `thread_local! { static S: Slot = const { Cell::new(None) } }`.
pub(crate) type Slot = Cell<Option<Block>>;

/// A block of `layout`, uninitialised: the one kept in `slot` when it has
/// that layout, else a new allocation.
///
/// # Panics
///
/// For a zero-sized `layout` (every use allocates a header of a few words).
#[inline]
pub(crate) fn take(slot: &'static LocalKey<Slot>, layout: Layout) -> NonNull<u8> {
    if let Ok(Some(block)) = slot.try_with(Cell::take) {
        if block.layout == layout {
            let ptr = block.ptr;
            // Ownership passes to the caller: no `Drop`, no free.
            std::mem::forget(block);
            return ptr;
        }
        // Another layout: it stays the spare.
        let _ = slot.try_with(|s| s.set(Some(block)));
    }
    allocate(layout)
}

#[cold]
fn allocate(layout: Layout) -> NonNull<u8> {
    // The global allocator's one precondition; a kept block is never
    // zero-sized, as it was allocated here or handed over by `give_back`.
    assert!(layout.size() != 0, "spare blocks are never zero-sized");
    // SAFETY: `layout` has a non-zero size (asserted just above).
    let raw = unsafe { alloc::alloc(layout) };
    NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

/// Gives back a block that is no longer used: kept in `slot` (a block
/// already there is freed), or freed while the thread exits.
///
/// # Safety
///
/// `ptr` was allocated by the global allocator with `layout` (by [`take`] or
/// otherwise; so `layout` is not zero-sized), nothing refers to it, and
/// nothing uses it afterwards.
#[inline]
pub(crate) unsafe fn give_back(slot: &'static LocalKey<Slot>, ptr: NonNull<u8>, layout: Layout) {
    let block = Block { ptr, layout };
    // During the thread's exit the closure, which owns `block`, is dropped
    // without being called, which frees it.
    let _ = slot.try_with(|s| drop(s.replace(Some(block))));
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static TEST_SLOT: Slot = const { Cell::new(None) };
    }

    const SMALL: Layout = Layout::new::<[u64; 4]>();
    const LARGE: Layout = Layout::new::<[u64; 8]>();

    #[test]
    fn a_block_given_back_is_taken_again_by_its_thread() {
        let first = take(&TEST_SLOT, SMALL);
        // SAFETY: from `take` with this layout, and unused from here on.
        unsafe { give_back(&TEST_SLOT, first, SMALL) };
        let second = take(&TEST_SLOT, SMALL);
        assert_eq!(second, first);
        // SAFETY: as above.
        unsafe { give_back(&TEST_SLOT, second, SMALL) };
    }

    #[test]
    fn a_spare_of_another_layout_is_not_handed_out_and_stays_kept() {
        let small = take(&TEST_SLOT, SMALL);
        // SAFETY: from `take` with this layout, and unused from here on.
        unsafe { give_back(&TEST_SLOT, small, SMALL) };
        let large = take(&TEST_SLOT, LARGE);
        assert_ne!(large, small);
        // The small block is still the spare.
        assert_eq!(take(&TEST_SLOT, SMALL), small);
        // SAFETY: as above, with its own layout.
        unsafe { give_back(&TEST_SLOT, large, LARGE) };
        // SAFETY: as above, with its own layout.
        unsafe { give_back(&TEST_SLOT, small, SMALL) };
    }

    #[test]
    #[should_panic(expected = "spare blocks are never zero-sized")]
    fn a_zero_sized_block_is_refused() {
        take(&TEST_SLOT, Layout::new::<()>());
    }

    #[test]
    fn a_block_given_back_on_another_thread_is_kept_there() {
        let block = take(&TEST_SLOT, SMALL).as_ptr() as usize;
        let reused = std::thread::spawn(move || {
            let ptr = NonNull::new(block as *mut u8).unwrap();
            // SAFETY: from `take` with this layout; this thread owns it now.
            unsafe { give_back(&TEST_SLOT, ptr, SMALL) };
            let next = take(&TEST_SLOT, SMALL);
            let same = next == ptr;
            // SAFETY: as above.
            unsafe { give_back(&TEST_SLOT, next, SMALL) };
            same
        })
        .join()
        .unwrap();
        assert!(reused);
    }
}
