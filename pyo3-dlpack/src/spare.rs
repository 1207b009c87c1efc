//! Spare heap blocks per thread and per use: an allocation that is made
//! and freed once per call (an import's state, an export's managed block)
//! is kept, when freed, for the same thread's next calls instead.
//!
//! `malloc` and `free` were a large share of an import's own instructions
//! and of `__dlpack__`'s block writing (callgrind; the figures are in git
//! history, the current ones in BENCHMARKS.md), and of a list of imports
//! (`Vec<PyTensor>`: glibc keeps only 7 free blocks of a size per thread in
//! its fast cache, so a thousand imports alive at once were a thousand slow
//! `malloc`s and `free`s). A slot is thread-local, so it needs no lock or
//! atomic; a block freed on another thread (a `PyTensor` is `Send`, and
//! DLPack deleters run on any thread, with or without the GIL) fills that
//! thread's slot instead. A slot keeps blocks of one layout, up to
//! [`MAX_BYTES`] of them, in a list threaded through the blocks themselves
//! (a free block's first word is the next one's address): no allocation of
//! its own. A block of another layout replaces them (the last layout freed
//! is the one kept). A thread's spares are freed when the thread exits, and
//! a block given back while it exits is freed at once.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::NonNull;
use std::thread::LocalKey;

/// The most bytes of spare blocks a slot keeps (256 KiB: over a thousand
/// import states).
pub(crate) const MAX_BYTES: usize = 256 * 1024;

/// The spare blocks of one slot: all of `layout`, each holding the address
/// of the next (the last, null), `count` of them.
pub(crate) struct Blocks {
    head: Option<NonNull<u8>>,
    count: usize,
    layout: Layout,
}

impl Blocks {
    /// No blocks, of `layout`.
    fn empty(layout: Layout) -> Self {
        Self {
            head: None,
            count: 0,
            layout,
        }
    }

    /// Whether a block of this layout can hold the address of the next.
    fn can_link(layout: Layout) -> bool {
        layout.size() >= size_of::<*mut u8>() && layout.align() >= align_of::<*mut u8>()
    }

    /// The first spare block, taken out of the list.
    fn pop(&mut self) -> Option<NonNull<u8>> {
        let block = self.head?;
        // SAFETY: a block in the list: allocated with `layout` (which can
        // link, checked by `push`), owned by the list, its first word the
        // next block's address, written by `push`.
        let next = unsafe { block.cast::<*mut u8>().as_ptr().read() };
        self.head = NonNull::new(next);
        self.count -= 1;
        Some(block)
    }

    /// Keeps `block` (of `layout`), unless the slot is full; whether it did.
    ///
    /// # Safety
    ///
    /// `block` was allocated by the global allocator with `self.layout`,
    /// nothing refers to it, and only the list uses it from here on.
    unsafe fn push(&mut self, block: NonNull<u8>) -> bool {
        if !Self::can_link(self.layout) || (self.count + 1) * self.layout.size() > MAX_BYTES {
            return false;
        }
        let next = self.head.map_or(std::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: the block is ours (the caller's contract), at least a
        // pointer in size and alignment (`can_link`).
        unsafe { block.cast::<*mut u8>().as_ptr().write(next) };
        self.head = Some(block);
        self.count += 1;
        true
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        while let Some(block) = self.pop() {
            // SAFETY: a block of the list, allocated by the global allocator
            // with `layout` (`push`'s contract), out of the list now.
            unsafe { alloc::dealloc(block.as_ptr(), self.layout) };
        }
    }
}

/// The slot of one use: `thread_local! { static S: Slot = const { Cell::new(None) } }`.
pub(crate) type Slot = Cell<Option<Blocks>>;

/// A block of `layout`, uninitialised: one kept in `slot` when it keeps that
/// layout, else a new allocation.
///
/// # Panics
///
/// For a zero-sized `layout` (every use allocates a header of a few words).
#[inline]
pub(crate) fn take(slot: &'static LocalKey<Slot>, layout: Layout) -> NonNull<u8> {
    let kept = slot.try_with(|slot| {
        let mut blocks = slot.take()?;
        let block = if blocks.layout == layout {
            blocks.pop()
        } else {
            None
        };
        slot.set(Some(blocks));
        block
    });
    match kept {
        Ok(Some(block)) => block,
        _ => allocate(layout),
    }
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

/// Gives back a block that is no longer used: kept in `slot` (replacing the
/// blocks of another layout kept there), or freed when the slot is full or
/// the thread exits.
///
/// # Safety
///
/// `ptr` was allocated by the global allocator with `layout` (by [`take`] or
/// otherwise; so `layout` is not zero-sized), nothing refers to it, and
/// nothing uses it afterwards.
#[inline]
pub(crate) unsafe fn give_back(slot: &'static LocalKey<Slot>, ptr: NonNull<u8>, layout: Layout) {
    let kept = slot.try_with(|slot| {
        let mut blocks = match slot.take() {
            Some(blocks) if blocks.layout == layout => blocks,
            // Another layout's blocks are freed here (dropped).
            _ => Blocks::empty(layout),
        };
        // SAFETY: the caller's contract; the list is of `layout`.
        let kept = unsafe { blocks.push(ptr) };
        slot.set(Some(blocks));
        kept
    });
    // Not kept (the slot is full, the layout cannot link, or the thread is
    // exiting): freed now.
    if kept != Ok(true) {
        // SAFETY: the caller's contract: allocated with `layout`, unused.
        unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
    }
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
    fn many_blocks_given_back_are_all_taken_again_up_to_the_cap() {
        let many = 100;
        let blocks: Vec<_> = (0..many).map(|_| take(&TEST_SLOT, LARGE)).collect();
        for &block in &blocks {
            // SAFETY: from `take` with this layout, and unused from here on.
            unsafe { give_back(&TEST_SLOT, block, LARGE) };
        }
        // The last given back first; every one of them again.
        let again: Vec<_> = (0..many).map(|_| take(&TEST_SLOT, LARGE)).collect();
        let mut reversed = blocks.clone();
        reversed.reverse();
        assert_eq!(again, reversed);
        for block in again {
            // SAFETY: as above.
            unsafe { give_back(&TEST_SLOT, block, LARGE) };
        }
        let kept = TEST_SLOT.with(|slot| {
            let blocks = slot.take().unwrap();
            let count = blocks.count;
            slot.set(Some(blocks));
            count
        });
        assert_eq!(kept, many);
        // A slot keeps at most MAX_BYTES: a huge layout keeps none.
        let huge = Layout::from_size_align(MAX_BYTES + 8, 8).unwrap();
        let block = take(&TEST_SLOT, huge);
        // SAFETY: as above, with its own layout.
        unsafe { give_back(&TEST_SLOT, block, huge) };
        let kept = TEST_SLOT.with(|slot| slot.take().map(|blocks| blocks.count));
        assert_eq!(
            kept,
            Some(0),
            "the huge block was freed, the others with it"
        );
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
