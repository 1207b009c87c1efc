//! Streams as queues of operations, and the driver's state that holds
//! them: which queue a stream handle names, the legacy default stream's
//! implicit synchronisation, enqueueing an operation after what orders it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::capture::Capture;
use crate::clock::{Access, Clock, merge};
use crate::context::{THREAD, current_device};
use crate::events::Event;
use crate::{
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    CuResult, DEVICES,
};

/// Which stream a queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// A created stream: its handle.
    Created(usize),
    /// A device's legacy default stream (handles 0 and 1).
    Legacy(usize),
    /// A thread's per-thread default stream (2) of a device.
    PerThread(usize, u64),
}

/// What an operation does to memory when it runs.
#[derive(Debug)]
pub(crate) enum Work {
    /// "Write these bytes at this address" (a simulated kernel, a copy from
    /// pageable memory, whose bytes the driver took at the call).
    Write { to: usize, bytes: Vec<u8> },
    /// A copy of `len` bytes, read when it runs (device or pinned memory).
    Copy { from: usize, to: usize, len: usize },
}

/// An enqueued operation: it runs after everything its clock names.
#[derive(Debug)]
pub(crate) struct Op {
    pub(crate) clock: Clock,
    /// Its work, if any (none: a read, a wait, an allocation or a free),
    /// taken when it runs.
    pub(crate) work: Option<Work>,
}

/// A stream's queue: its operations, how many have run, and its clock after
/// the last one.
#[derive(Debug)]
pub(crate) struct Queue {
    pub(crate) key: Key,
    pub(crate) device: usize,
    pub(crate) non_blocking: bool,
    pub(crate) ops: Vec<Op>,
    pub(crate) done: usize,
    pub(crate) tail: Clock,
    pub(crate) capture: Option<usize>,
    pub(crate) syncs: usize,
    pub(crate) waits: usize,
    /// Destroyed (`cuStreamDestroy_v2`): its handle is refused; its queued
    /// work stays, to run when something orders it.
    pub(crate) destroyed: bool,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) queues: Vec<Queue>,
    pub(crate) keys: HashMap<Key, usize>,
    pub(crate) events: HashMap<usize, Event>,
    pub(crate) captures: Vec<Capture>,
    /// What the host has waited for.
    pub(crate) host: Clock,
    /// Accesses the host has not waited for (the only ones that can race).
    pub(crate) unobserved: Vec<Access>,
    pub(crate) races: usize,
    pub(crate) rng: Option<u64>,
    pub(crate) seeded: bool,
    /// Synchronisations and waits of each device's legacy and per-thread
    /// default streams.
    pub(crate) default_syncs: [usize; DEVICES],
    pub(crate) default_waits: [usize; DEVICES],
    /// `cuCtxSynchronize` calls per device.
    pub(crate) context_syncs: [usize; DEVICES],
}

pub(crate) static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The driver's state, locked; the seeded scheduler may first run ready work.
pub(crate) fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut guard: MutexGuard<'_, Option<State>> = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(State::default);
    state.step();
    f(state)
}

impl State {
    pub(crate) fn queue_of(&mut self, key: Key, device: usize, non_blocking: bool) -> usize {
        if let Some(&index) = self.keys.get(&key) {
            return index;
        }
        let index = self.queues.len();
        self.queues.push(Queue {
            key,
            device,
            non_blocking,
            ops: Vec::new(),
            done: 0,
            tail: Clock::new(),
            capture: None,
            syncs: 0,
            waits: 0,
            destroyed: false,
        });
        self.keys.insert(key, index);
        index
    }

    /// The queue of a stream handle: the current context's legacy (0, 1) or
    /// this thread's per-thread (2) default stream, or a created stream.
    pub(crate) fn resolve(&mut self, handle: usize) -> Result<usize, CuResult> {
        if handle <= 2 {
            let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
            let key = if handle == 2 {
                let thread = THREAD.try_with(|t| *t).unwrap_or(u64::MAX);
                Key::PerThread(device, thread)
            } else {
                Key::Legacy(device)
            };
            return Ok(self.queue_of(key, device, false));
        }
        self.keys
            .get(&Key::Created(handle))
            .copied()
            .filter(|&queue| !self.queues[queue].destroyed)
            .ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    pub(crate) fn is_legacy(&self, queue: usize) -> bool {
        matches!(self.queues[queue].key, Key::Legacy(_))
    }

    /// Whether a queue synchronises with its context's legacy stream.
    pub(crate) fn is_blocking(&self, queue: usize) -> bool {
        !self.is_legacy(queue) && !self.queues[queue].non_blocking
    }

    pub(crate) fn legacy_of(&self, device: usize) -> Option<usize> {
        self.keys.get(&Key::Legacy(device)).copied()
    }

    /// Enqueues an operation on `queue` ordered after `after` too, making
    /// `accesses` (start, len, write) and doing `work` when it runs.
    pub(crate) fn enqueue(
        &mut self,
        queue: usize,
        after: Option<&Clock>,
        accesses: &[(usize, usize, bool)],
        work: Option<Work>,
    ) -> Result<(), CuResult> {
        self.check_legacy_use(queue)?;
        if let Some(capture) = self.queues[queue].capture {
            // Captured: recorded into the graph, never run here.
            let c = &mut self.captures[capture];
            if c.invalidated {
                return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            }
            if queue != c.origin {
                c.unjoined.insert(queue);
            }
            return Ok(());
        }
        let mut clock = self.queues[queue].tail.clone();
        merge(&mut clock, &self.host.clone());
        if let Some(after) = after {
            merge(&mut clock, after);
        }
        let device = self.queues[queue].device;
        if self.is_legacy(queue) {
            for q in 0..self.queues.len() {
                if self.queues[q].device == device && self.is_blocking(q) {
                    let tail = self.queues[q].tail.clone();
                    merge(&mut clock, &tail);
                }
            }
        } else if self.is_blocking(queue) {
            if let Some(legacy) = self.legacy_of(device) {
                let tail = self.queues[legacy].tail.clone();
                merge(&mut clock, &tail);
            }
        }
        let position = self.queues[queue].ops.len() + 1;
        for &access in accesses {
            self.access(queue, position, &clock, access);
        }
        let mut tail = clock.clone();
        tail.insert(queue, position);
        let q = &mut self.queues[queue];
        q.ops.push(Op { clock, work });
        q.tail = tail;
        Ok(())
    }
}

/// The device a stream handle's work runs on, with the state locked.
pub(crate) fn stream_device(state: &mut State, handle: usize) -> Result<usize, CuResult> {
    let queue = state.resolve(handle)?;
    Ok(state.queues[queue].device)
}
