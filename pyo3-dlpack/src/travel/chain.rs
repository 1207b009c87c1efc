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

use std::cell::RefCell;

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
    /// The views waiting to be released, while a release runs on this
    /// thread (`None` when none runs).
    static QUEUE: RefCell<Option<Vec<BufferView>>> = const { RefCell::new(None) };
}

/// Releases `view` now, or queues it when a release already runs below on
/// this thread (which then releases it, after its own).
fn release(view: BufferView) {
    let mut next = Some(view);
    let outermost = QUEUE.try_with(|queue| {
        let mut queue = queue.borrow_mut();
        match queue.as_mut() {
            Some(waiting) => {
                waiting.extend(next.take());
                false
            }
            None => {
                *queue = Some(Vec::new());
                true
            }
        }
    });
    if outermost != Ok(true) {
        // Queued (`next` is empty), or the thread is exiting and its queue
        // is gone: released here.
        drop(next);
        return;
    }
    while let Some(view) = next.take() {
        // Releasing may free a tensor whose own view is queued meanwhile.
        drop(view);
        next = QUEUE
            .try_with(|queue| queue.borrow_mut().as_mut().and_then(Vec::pop))
            .ok()
            .flatten();
    }
    let _ = QUEUE.try_with(|queue| queue.borrow_mut().take());
}
