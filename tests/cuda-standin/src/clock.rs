//! Race detection: vector clocks (per stream, how many of its operations
//! are ordered before something) and the accesses the host has not waited
//! for, each checked against every later access of the same memory.

use std::collections::BTreeMap;

use crate::state::State;

/// Per stream (an index into `State::queues`), how many of its operations
/// are ordered before something.
pub(crate) type Clock = BTreeMap<usize, usize>;

pub(crate) fn merge(into: &mut Clock, from: &Clock) {
    for (&stream, &count) in from {
        let entry = into.entry(stream).or_insert(0);
        *entry = (*entry).max(count);
    }
}

pub(crate) fn covers(clock: &Clock, stream: usize, position: usize) -> bool {
    clock.get(&stream).copied().unwrap_or(0) >= position
}

/// A memory access by the operation at `position` (1-based) of `stream`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Access {
    pub(crate) stream: usize,
    pub(crate) position: usize,
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) write: bool,
}

impl Access {
    pub(crate) fn overlaps(&self, start: usize, len: usize) -> bool {
        self.start < start.saturating_add(len) && start < self.start.saturating_add(self.len)
    }
}

impl State {
    /// The host makes `what`, an access of `[start, len)` (a write, or a
    /// read): a race with each access the host has not waited for that it
    /// conflicts with (any, for a write; writes, for a read); how many.
    pub(crate) fn host_access(
        &mut self,
        what: &str,
        start: usize,
        len: usize,
        write: bool,
    ) -> usize {
        let racing: Vec<Access> = self
            .unobserved
            .iter()
            .filter(|a| (a.write || write) && a.overlaps(start, len))
            .copied()
            .collect();
        for earlier in &racing {
            let message = format!(
                "{what} of [{start:#x}, +{len}) is not ordered after the {} of [{:#x}, +{}) on {:?}",
                if earlier.write { "write" } else { "read" },
                earlier.start,
                earlier.len,
                self.queues[earlier.stream].key
            );
            self.race(&message);
        }
        racing.len()
    }

    /// Operation `position` of `queue`, ordered after `clock`, accesses
    /// `(start, len, write)`: a race with each earlier access of that memory
    /// on another stream (a write, or any access for a write) it is not
    /// ordered after; then it is an access later ones are checked against.
    pub(crate) fn access(
        &mut self,
        queue: usize,
        position: usize,
        clock: &Clock,
        (start, len, write): (usize, usize, bool),
    ) {
        let racing: Vec<Access> = self
            .unobserved
            .iter()
            .filter(|a| a.stream != queue && a.overlaps(start, len) && (a.write || write))
            .filter(|a| !covers(clock, a.stream, a.position))
            .copied()
            .collect();
        for earlier in racing {
            self.race(&format!(
                "a {} of [{start:#x}, +{len}) on {:?} is not ordered after the {} of [{:#x}, +{}) on {:?}",
                if write { "write" } else { "read" },
                self.queues[queue].key,
                if earlier.write { "write" } else { "read" },
                earlier.start,
                earlier.len,
                self.queues[earlier.stream].key,
            ));
        }
        self.unobserved.push(Access {
            stream: queue,
            position,
            start,
            len,
            write,
        });
    }

    pub(crate) fn race(&mut self, what: &str) {
        self.races += 1;
        eprintln!("cuda-standin: race: {what}");
    }

    /// The host waited for everything `clock` names.
    pub(crate) fn observe(&mut self, clock: &Clock) {
        merge(&mut self.host, clock);
        let host = &self.host;
        self.unobserved
            .retain(|a| !covers(host, a.stream, a.position));
    }
}
