//! Running queued work: only what something orders (a synchronisation, an
//! event the host waits for), in dependency order; with `STANDIN_SEED`, a
//! seeded scheduler also runs ready work early.

use crate::memory::driver_address;
use crate::state::{State, Work};
use crate::{CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CuResult};

impl State {
    /// Runs the first `upto` operations of `queue`, each after what it depends on.
    pub(crate) fn run(&mut self, queue: usize, upto: usize) {
        while self.queues[queue].done < upto.min(self.queues[queue].ops.len()) {
            let index = self.queues[queue].done;
            let deps: Vec<(usize, usize)> = self.queues[queue].ops[index]
                .clock
                .iter()
                .filter(|&(&s, _)| s != queue)
                .map(|(&s, &n)| (s, n))
                .collect();
            for (stream, count) in deps {
                self.run(stream, count);
            }
            self.execute(queue);
        }
    }

    /// Runs the next operation of `queue` (its dependencies have run); its
    /// memory is accessed where the driver accesses it (device memory
    /// through its readable mapping).
    pub(crate) fn execute(&mut self, queue: usize) {
        let q = &mut self.queues[queue];
        let index = q.done;
        q.done += 1;
        match q.ops[index].work.take() {
            None => {}
            Some(Work::Write { to, bytes }) => {
                let to = driver_address(to, bytes.len());
                // SAFETY: writable for `bytes.len()` bytes until the work has
                // run: the promise of `standin_enqueue_write`'s caller, or of
                // a copy's (the driver's contract), or stand-in memory.
                unsafe { std::ptr::copy(bytes.as_ptr(), to as *mut u8, bytes.len()) };
            }
            Some(Work::Copy { from, to, len }) => {
                let (from, to) = (driver_address(from, len), driver_address(to, len));
                // SAFETY: as above: both readable and writable for `len`
                // bytes until the copy has run (a copy's contract).
                unsafe { std::ptr::copy(from as *const u8, to as *mut u8, len) };
            }
        }
    }

    /// The host waits for `queue`'s work so far.
    pub(crate) fn synchronize(&mut self, queue: usize) -> Result<(), CuResult> {
        self.check_legacy_use(queue)?;
        if let Some(capture) = self.queues[queue].capture {
            self.invalidate(capture);
            return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        let count = self.queues[queue].ops.len();
        self.run(queue, count);
        let tail = self.queues[queue].tail.clone();
        self.observe(&tail);
        Ok(())
    }

    /// With `STANDIN_SEED` set, now and then runs one operation that is
    /// ready (whose dependencies have run), though nothing ordered it yet.
    pub(crate) fn step(&mut self) {
        if !self.seeded {
            self.seeded = true;
            self.rng = std::env::var("STANDIN_SEED")
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .map(|s| s.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        }
        let Some(mut x) = self.rng else { return };
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = Some(x);
        if x % 2 == 0 || self.queues.is_empty() {
            return;
        }
        let first = (x >> 8) as usize % self.queues.len();
        for offset in 0..self.queues.len() {
            let queue = (first + offset) % self.queues.len();
            let q = &self.queues[queue];
            let Some(op) = q.ops.get(q.done) else {
                continue;
            };
            let ready = op
                .clock
                .iter()
                .all(|(&s, &n)| s == queue || self.queues[s].done >= n);
            if ready {
                self.execute(queue);
                return;
            }
        }
    }
}
