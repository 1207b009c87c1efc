//! Freeing a chain of restores without recursion (DESIGN.md invariant 11).
//!
//! A tensor restored in place from an out-of-band buffer holds a view of
//! that buffer, and so its exporter: when the buffer is another restored
//! tensor's bytes, that tensor. A loop that round-trips a tensor through
//! `pickle` (a cache, a queue that echoes) builds a chain as long as its
//! history. Freed naively, releasing each link's view frees the next link
//! inside it (the view's release, the exporter's dealloc, the tensor's
//! drop: a few C and Rust frames a link), and about 15,000 links overflowed
//! the stack. Here a view released while another release runs on the same
//! thread is queued, and the outermost release empties the queue in a loop:
//! the stack stays one link deep, whatever the chain's length.

use std::cell::{Cell, RefCell};

use crate::import::protocols::view::BufferView;

/// A restored tensor's view of its buffer, released without recursion.
pub(super) struct KeptView(Option<BufferView>);

impl KeptView {
    pub(super) fn new(view: BufferView) -> Self {
        Self(Some(view))
    }
}

impl Drop for KeptView {
    fn drop(&mut self) {
        if let Some(view) = self.0.take() {
            release(view);
        }
    }
}

thread_local! {
    /// Whether a release runs on this thread (views are queued meanwhile).
    static RELEASING: Cell<bool> = const { Cell::new(false) };
    /// How many views wait in [`QUEUE`] (read without touching the queue,
    /// whose thread-local has a destructor and costs more to reach).
    static WAITING: Cell<usize> = const { Cell::new(0) };
    /// The views waiting to be released.
    static QUEUE: RefCell<Vec<BufferView>> = const { RefCell::new(Vec::new()) };
}

/// Releases `view` now, or queues it when a release already runs below on
/// this thread (which then releases it, after its own).
fn release(view: BufferView) {
    if RELEASING.get() {
        // If the queue is gone (the thread is exiting), the closure is
        // dropped unrun and the view released here.
        if QUEUE
            .try_with(move |queue| queue.borrow_mut().push(view))
            .is_ok()
        {
            WAITING.set(WAITING.get() + 1);
        }
        return;
    }
    RELEASING.set(true);
    drop(view);
    while WAITING.get() > 0 {
        WAITING.set(WAITING.get() - 1);
        // Releasing may free a tensor whose own view is queued meanwhile.
        drop(QUEUE.try_with(|queue| queue.borrow_mut().pop()));
    }
    RELEASING.set(false);
}
