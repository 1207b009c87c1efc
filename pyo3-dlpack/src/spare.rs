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

/// The spare blocks of one use on one thread: all of `layout`, each holding
/// the address of the next (the last, null), `count` of them. Each field is
/// a `Cell` of its own, so that taking or giving back a block reads and
/// writes only the words it changes.
///
/// `thread_local! { static S: Slot = const { Slot::new() } }`.
pub(crate) struct Slot {
    head: Cell<Option<NonNull<u8>>>,
    count: Cell<usize>,
    layout: Cell<Layout>,
}

impl Slot {
    /// No blocks.
    pub(crate) const fn new() -> Self {
        Self {
            head: Cell::new(None),
            count: Cell::new(0),
            layout: Cell::new(Layout::new::<u8>()),
        }
    }

    /// Whether a block of this layout can hold the address of the next.
    fn can_link(layout: Layout) -> bool {
        layout.size() >= size_of::<*mut u8>() && layout.align() >= align_of::<*mut u8>()
    }

    /// The first spare block, taken out of the list, if the slot keeps
    /// blocks of `layout`.
    #[inline]
    fn pop(&self, layout: Layout) -> Option<NonNull<u8>> {
        if self.layout.get() != layout {
            return None;
        }
        let block = self.head.get()?;
        // SAFETY: a block in the list: allocated with `layout` (which can
        // link, checked by `push`), owned by the list, its first word the
        // next block's address, written by `push`.
        let next = unsafe { block.cast::<*mut u8>().as_ptr().read() };
        self.head.set(NonNull::new(next));
        self.count.set(self.count.get() - 1);
        Some(block)
    }

    /// Keeps `block` (of `layout`, which replaces the layout kept, freeing
    /// its blocks), unless the slot is full; whether it did.
    ///
    /// # Safety
    ///
    /// `block` was allocated by the global allocator with `layout`, nothing
    /// refers to it, and only the list uses it from here on.
    #[inline]
    unsafe fn push(&self, block: NonNull<u8>, layout: Layout) -> bool {
        if self.layout.get() != layout {
            self.replace_layout(layout);
        }
        let count = self.count.get();
        if !Self::can_link(layout) || (count + 1) * layout.size() > MAX_BYTES {
            return false;
        }
        let next = self
            .head
            .get()
            .map_or(std::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: the block is ours (the caller's contract), at least a
        // pointer in size and alignment (`can_link`).
        unsafe { block.cast::<*mut u8>().as_ptr().write(next) };
        self.head.set(Some(block));
        self.count.set(count + 1);
        true
    }

    /// Frees the blocks kept and keeps blocks of `layout` from now on.
    #[cold]
    fn replace_layout(&self, layout: Layout) {
        self.free_all();
        self.layout.set(layout);
    }

    /// Frees every block kept.
    fn free_all(&self) {
        let layout = self.layout.get();
        while let Some(block) = self.pop(layout) {
            // SAFETY: a block of the list, allocated by the global allocator
            // with `layout` (`push`'s contract), out of the list now.
            unsafe { alloc::dealloc(block.as_ptr(), layout) };
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.free_all();
    }
}

/// A block of `layout`, uninitialised: one kept in `slot` when it keeps that
/// layout, else a new allocation.
///
/// # Panics
///
/// For a zero-sized `layout` (every use allocates a header of a few words).
#[inline]
pub(crate) fn take(slot: &'static LocalKey<Slot>, layout: Layout) -> NonNull<u8> {
    match slot.try_with(|slot| slot.pop(layout)) {
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
    // SAFETY: the caller's contract.
    let kept = slot.try_with(|slot| unsafe { slot.push(ptr, layout) });
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
        static TEST_SLOT: Slot = const { Slot::new() };
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
        assert_eq!(TEST_SLOT.with(|slot| slot.count.get()), many);
        // A slot keeps at most MAX_BYTES: a huge layout keeps none.
        let huge = Layout::from_size_align(MAX_BYTES + 8, 8).unwrap();
        let block = take(&TEST_SLOT, huge);
        // SAFETY: as above, with its own layout.
        unsafe { give_back(&TEST_SLOT, block, huge) };
        assert_eq!(
            TEST_SLOT.with(|slot| slot.count.get()),
            0,
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
