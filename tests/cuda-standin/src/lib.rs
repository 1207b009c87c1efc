//! A stand-in for the CUDA driver API (`libcuda`), for tests on machines
//! without a GPU. It implements the entry points pyo3-dlpack calls, with the
//! driver's rules and error codes where the crate can get them wrong:
//!
//! - two devices, each with a primary context; a per-thread stack of
//!   current contexts (`cuCtxPushCurrent_v2`/`cuCtxPopCurrent_v2`);
//! - calls that need a current context (`cuEventCreate`, `cuStreamCreate`,
//!   anything on the legacy or per-thread default stream, handles 0, 1, 2)
//!   fail with `CUDA_ERROR_INVALID_CONTEXT` without one;
//! - an event belongs to the device of the context current when it was made;
//!   recording it on a stream of another device fails with
//!   `CUDA_ERROR_INVALID_HANDLE`, as the driver does;
//! - device memory (`standin_alloc`, kind 0) is mapped `PROT_NONE`: any host
//!   read or write of it crashes the test at once; pinned (1) and managed (2)
//!   memory is readable; `cuPointerGetAttribute` answers the device ordinal,
//!   whether memory is managed, and its memory type.
//!
//! **Stream work.** Every stream is a queue: each created stream, and per
//! device the legacy default stream (handles 0 and 1) and each thread's
//! per-thread default stream (2). Tests enqueue simulated kernels
//! (`standin_enqueue_write`: "write these bytes there"; `standin_enqueue_read`).
//! Work runs only when something orders it: `cuStreamSynchronize` runs its
//! stream's queue and everything that queue depends on, `cuEventSynchronize`
//! what the event's recorded point depends on. With `STANDIN_SEED` set, a
//! seeded scheduler also runs ready work early, at any driver call.
//! Dependencies are vector clocks (per stream, how many of its operations
//! are ordered before): an operation depends on its stream's earlier ones;
//! `cuEventRecord` takes the stream's clock so far, and `cuStreamWaitEvent`
//! enqueues a wait that depends on it. The legacy default stream's implicit
//! synchronisation: an operation on it depends on all earlier work of the
//! blocking streams of its context (created without `CU_STREAM_NON_BLOCKING`,
//! and the per-thread default streams), and an operation on a blocking stream
//! on all earlier work of the legacy stream; non-blocking streams take part
//! in neither. (A *synchronisation* of the legacy stream is no operation on
//! it: it waits for the legacy stream's own queue only, the weaker reading.)
//! Work the host has waited for (a stream or event synchronisation) is
//! ordered before everything enqueued afterwards.
//!
//! **Races.** An access (an enqueued write or read, or a host read the test
//! reports with `standin_host_read` at the point the host reads) races with
//! an earlier write (or, for a write, an earlier read) of overlapping memory
//! on another stream that it is not ordered after; each race is counted
//! (`standin_races`) and described on standard error. Whether the work
//! happened to run already does not matter, only the ordering does.
//!
//! **Capture.** `cuStreamBeginCapture_v2` makes a stream capture: its work is
//! recorded, not run (the graph is never launched); synchronising a capturing
//! stream fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; any use of the
//! legacy stream while a blocking stream of its context captures fails with
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`; a stream waiting for an event recorded
//! in a capture joins it (and must be joined back into the origin stream
//! before `cuStreamEndCapture`, else `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`); a
//! capturing stream waiting for an event recorded outside it fails with
//! `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`. Each of these errors invalidates the
//! capture: later work on its streams fails with
//! `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, and so does `cuStreamEndCapture`.
//! The capture modes' restrictions on other threads' calls are not modelled.
//!
//! Every refused call is counted (`standin_refusals`), and synchronisations
//! and waits per stream (`standin_syncs`, `standin_waits`), so tests assert
//! what was ordered and that nothing was refused. Test-only entry points are
//! named `standin_*`. No entry point unwinds: a panic becomes
//! `CUDA_ERROR_UNKNOWN`. Loaded by explicit path only (never from the library
//! path), so no framework's CUDA runtime finds it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

type CuResult = c_int;
const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
const CUDA_ERROR_NOT_INITIALIZED: CuResult = 3;
const CUDA_ERROR_INVALID_DEVICE: CuResult = 101;
const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;
const CUDA_ERROR_INVALID_HANDLE: CuResult = 400;
const CUDA_ERROR_ILLEGAL_STATE: CuResult = 401;
const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CuResult = 900;
const CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: CuResult = 901;
const CUDA_ERROR_STREAM_CAPTURE_MERGE: CuResult = 902;
const CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: CuResult = 903;
const CUDA_ERROR_STREAM_CAPTURE_UNJOINED: CuResult = 904;
const CUDA_ERROR_STREAM_CAPTURE_ISOLATION: CuResult = 905;
const CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: CuResult = 906;
const CUDA_ERROR_CAPTURED_EVENT: CuResult = 907;
const CUDA_ERROR_UNKNOWN: CuResult = 999;

const DEVICES: usize = 2;
const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const CU_POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;
const CU_STREAM_NON_BLOCKING: c_uint = 1;
const CU_STREAM_CAPTURE_STATUS_NONE: c_int = 0;
const CU_STREAM_CAPTURE_STATUS_ACTIVE: c_int = 1;
const CU_STREAM_CAPTURE_STATUS_INVALIDATED: c_int = 2;

static INITIALIZED: AtomicBool = AtomicBool::new(false);
static REFUSALS: AtomicUsize = AtomicUsize::new(0);

/// A primary context: its address is its handle.
#[derive(Debug)]
struct Context {
    device: usize,
}

static CONTEXTS: [Context; DEVICES] = [Context { device: 0 }, Context { device: 1 }];

/// An allocation: `[start, start + len)`, its device and kind.
#[derive(Debug, Clone, Copy)]
struct Allocation {
    start: usize,
    len: usize,
    device: usize,
    kind: c_int,
}

static ALLOCATIONS: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's stack of current contexts (device ordinals).
    static CURRENT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// This thread's number (for its per-thread default streams).
    static THREAD: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
}

/// Per stream (an index into `State::queues`), how many of its operations
/// are ordered before something.
type Clock = BTreeMap<usize, usize>;

fn merge(into: &mut Clock, from: &Clock) {
    for (&stream, &count) in from {
        let entry = into.entry(stream).or_insert(0);
        *entry = (*entry).max(count);
    }
}

fn covers(clock: &Clock, stream: usize, position: usize) -> bool {
    clock.get(&stream).copied().unwrap_or(0) >= position
}

/// Which stream a queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// A created stream: its handle.
    Created(usize),
    /// A device's legacy default stream (handles 0 and 1).
    Legacy(usize),
    /// A thread's per-thread default stream (2) of a device.
    PerThread(usize, u64),
}

/// An enqueued operation: it runs after everything its clock names.
#[derive(Debug)]
struct Op {
    clock: Clock,
    /// "Write these bytes at this address" (a simulated kernel), or nothing
    /// (a read, a wait).
    write: Option<(usize, Vec<u8>)>,
}

/// A stream's queue: its operations, how many have run, and its clock after
/// the last one.
#[derive(Debug)]
struct Queue {
    key: Key,
    device: usize,
    non_blocking: bool,
    ops: Vec<Op>,
    done: usize,
    tail: Clock,
    capture: Option<usize>,
    syncs: usize,
    waits: usize,
}

/// A memory access by the operation at `position` (1-based) of `stream`.
#[derive(Debug, Clone, Copy)]
struct Access {
    stream: usize,
    position: usize,
    start: usize,
    len: usize,
    write: bool,
}

impl Access {
    fn overlaps(&self, start: usize, len: usize) -> bool {
        self.start < start.saturating_add(len) && start < self.start.saturating_add(self.len)
    }
}

/// Where an event was last recorded.
#[derive(Debug, Clone)]
enum Recorded {
    Never,
    /// Outside any capture: the recording stream's clock at that point.
    At(Clock),
    /// In capture `capture`, on stream `stream` (a queue index).
    Captured {
        capture: usize,
        stream: usize,
    },
}

#[derive(Debug)]
struct Event {
    device: usize,
    destroyed: bool,
    recorded: Recorded,
}

#[derive(Debug)]
struct Capture {
    origin: usize,
    members: Vec<usize>,
    /// Streams that joined the capture and have not been joined back into
    /// the origin stream.
    unjoined: BTreeSet<usize>,
    invalidated: bool,
}

#[derive(Debug, Default)]
struct State {
    queues: Vec<Queue>,
    keys: HashMap<Key, usize>,
    events: HashMap<usize, Event>,
    captures: Vec<Capture>,
    /// What the host has waited for.
    host: Clock,
    /// Accesses the host has not waited for (the only ones that can race).
    unobserved: Vec<Access>,
    races: usize,
    rng: Option<u64>,
    seeded: bool,
    /// Synchronisations and waits of each device's legacy and per-thread
    /// default streams.
    default_syncs: [usize; DEVICES],
    default_waits: [usize; DEVICES],
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The driver's state, locked; the seeded scheduler may first run ready work.
fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut guard: MutexGuard<'_, Option<State>> = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(State::default);
    state.step();
    f(state)
}

/// `code`, counted as a refusal when it is an error.
fn refuse(code: CuResult) -> CuResult {
    if code != CUDA_SUCCESS {
        REFUSALS.fetch_add(1, Ordering::Relaxed);
    }
    code
}

/// Runs an entry point's body: its error counted, a panic made
/// `CUDA_ERROR_UNKNOWN` (nothing unwinds across the C ABI).
fn entry(body: impl FnOnce() -> Result<(), CuResult>) -> CuResult {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(CUDA_ERROR_UNKNOWN));
    refuse(outcome.err().unwrap_or(CUDA_SUCCESS))
}

/// A test entry's body, `fallback` if it panics.
fn test_entry<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn current_device() -> Option<usize> {
    // `try_with`: no panic once the thread's locals are torn down.
    CURRENT
        .try_with(|stack| stack.borrow().last().copied())
        .ok()
        .flatten()
}

fn initialized() -> Result<(), CuResult> {
    if INITIALIZED.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

/// Whether `[address, address + len)` lies in device memory (kind 0), which
/// the host cannot write: work writing it changes nothing the host can see.
fn in_device_memory(address: usize, len: usize) -> bool {
    let allocations = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner());
    allocations.iter().any(|a| {
        a.kind == 0 && a.start <= address && address.saturating_add(len) <= a.start + a.len
    })
}

impl State {
    fn queue_of(&mut self, key: Key, device: usize, non_blocking: bool) -> usize {
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
        });
        self.keys.insert(key, index);
        index
    }

    /// The queue of a stream handle: the current context's legacy (0, 1) or
    /// this thread's per-thread (2) default stream, or a created stream.
    fn resolve(&mut self, handle: usize) -> Result<usize, CuResult> {
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
            .ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    fn is_legacy(&self, queue: usize) -> bool {
        matches!(self.queues[queue].key, Key::Legacy(_))
    }

    /// Whether a queue synchronises with its context's legacy stream.
    fn is_blocking(&self, queue: usize) -> bool {
        !self.is_legacy(queue) && !self.queues[queue].non_blocking
    }

    fn legacy_of(&self, device: usize) -> Option<usize> {
        self.keys.get(&Key::Legacy(device)).copied()
    }

    fn invalidate(&mut self, capture: usize) {
        if let Some(c) = self.captures.get_mut(capture) {
            c.invalidated = true;
        }
    }

    /// The captures of blocking streams of `queue`'s context, if `queue` is
    /// its legacy stream.
    fn legacy_conflicts(&self, queue: usize) -> Vec<usize> {
        if !self.is_legacy(queue) {
            return Vec::new();
        }
        let device = self.queues[queue].device;
        (0..self.queues.len())
            .filter(|&q| self.queues[q].device == device && self.is_blocking(q))
            .filter_map(|q| self.queues[q].capture)
            .collect()
    }

    /// Using the legacy stream of `queue`'s device while a blocking stream
    /// of it captures: `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`, and the captures
    /// are invalidated.
    fn check_legacy_use(&mut self, queue: usize) -> Result<(), CuResult> {
        let capturing = self.legacy_conflicts(queue);
        if capturing.is_empty() {
            return Ok(());
        }
        for capture in capturing {
            self.invalidate(capture);
        }
        Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    }

    /// Enqueues an operation on `queue` ordered after `after` too, accessing
    /// `access` (start, len, write); bytes to write, if any.
    fn enqueue(
        &mut self,
        queue: usize,
        after: Option<&Clock>,
        access: Option<(usize, usize, bool)>,
        bytes: Option<Vec<u8>>,
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
        if let Some((start, len, write)) = access {
            let racing: Vec<Access> = self
                .unobserved
                .iter()
                .filter(|a| a.stream != queue && a.overlaps(start, len) && (a.write || write))
                .filter(|a| !covers(&clock, a.stream, a.position))
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
        let mut tail = clock.clone();
        tail.insert(queue, position);
        let q = &mut self.queues[queue];
        q.ops.push(Op {
            clock,
            write: bytes.map(|b| (access.map_or(0, |a| a.0), b)),
        });
        q.tail = tail;
        Ok(())
    }

    fn race(&mut self, what: &str) {
        self.races += 1;
        eprintln!("cuda-standin: race: {what}");
    }

    /// Runs the first `upto` operations of `queue`, each after what it depends on.
    fn run(&mut self, queue: usize, upto: usize) {
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

    /// Runs the next operation of `queue` (its dependencies have run).
    fn execute(&mut self, queue: usize) {
        let q = &mut self.queues[queue];
        let index = q.done;
        q.done += 1;
        if let Some((address, bytes)) = q.ops[index].write.take() {
            if !in_device_memory(address, bytes.len()) {
                // SAFETY: the promise of `standin_enqueue_write`'s caller:
                // writable host memory, alive until the write has run.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, bytes.len());
                }
            }
        }
    }

    /// The host waited for everything `clock` names.
    fn observe(&mut self, clock: &Clock) {
        merge(&mut self.host, clock);
        let host = &self.host;
        self.unobserved
            .retain(|a| !covers(host, a.stream, a.position));
    }

    /// The host waits for `queue`'s work so far.
    fn synchronize(&mut self, queue: usize) -> Result<(), CuResult> {
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
    fn step(&mut self) {
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

/// The device a stream handle's work runs on, with the state locked.
fn stream_device(state: &mut State, handle: usize) -> Result<usize, CuResult> {
    let queue = state.resolve(handle)?;
    Ok(state.queues[queue].device)
}

/// # Safety
///
/// None (the C ABI of `cuInit`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CuResult {
    entry(|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        INITIALIZED.store(true, Ordering::Relaxed);
        Ok(())
    })
}

/// # Safety
///
/// `device` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    entry(|| {
        initialized()?;
        let index = usize::try_from(ordinal).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        if index >= DEVICES || device.is_null() {
            return Err(CUDA_ERROR_INVALID_DEVICE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { device.write(ordinal) };
        Ok(())
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    context: *mut *mut c_void,
    device: c_int,
) -> CuResult {
    entry(|| {
        initialized()?;
        let index = usize::try_from(device).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        let ctx = CONTEXTS.get(index).ok_or(CUDA_ERROR_INVALID_DEVICE)?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(std::ptr::from_ref(ctx).cast_mut().cast()) };
        Ok(())
    })
}

/// # Safety
///
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: c_int) -> CuResult {
    entry(|| {
        usize::try_from(device)
            .ok()
            .filter(|&d| d < DEVICES)
            .map(|_| ())
            .ok_or(CUDA_ERROR_INVALID_DEVICE)
    })
}

/// The device of a context handle.
fn context_device(context: *mut c_void) -> Option<usize> {
    CONTEXTS
        .iter()
        .find(|c| std::ptr::eq(*c, context.cast::<Context>()))
        .map(|c| c.device)
}

fn context_handle(device: usize) -> *mut c_void {
    CONTEXTS.get(device).map_or(std::ptr::null_mut(), |c| {
        std::ptr::from_ref(c).cast_mut().cast()
    })
}

/// # Safety
///
/// None (`context` is compared, never read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(context: *mut c_void) -> CuResult {
    entry(|| {
        let device = context_device(context).ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        CURRENT
            .try_with(|stack| stack.borrow_mut().push(device))
            .map_err(|_| CUDA_ERROR_INVALID_CONTEXT)
    })
}

/// # Safety
///
/// `context` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(context: *mut *mut c_void) -> CuResult {
    entry(|| {
        let device = CURRENT
            .try_with(|stack| stack.borrow_mut().pop())
            .ok()
            .flatten()
            .ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if !context.is_null() {
            // SAFETY: non-NULL and writable (the caller's contract).
            unsafe { context.write(context_handle(device)) };
        }
        Ok(())
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(context: *mut *mut c_void) -> CuResult {
    entry(|| {
        let current = current_device().map_or(std::ptr::null_mut(), context_handle);
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(current) };
        Ok(())
    })
}

/// # Safety
///
/// `data` is writable for the attribute's size (an int or unsigned int).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: c_int,
    pointer: u64,
) -> CuResult {
    entry(|| {
        initialized()?;
        let address = pointer as usize;
        let found = ALLOCATIONS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|a| a.start <= address && address < a.start + a.len)
            .copied()
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let value: c_uint = match attribute {
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL => found.device as c_uint,
            CU_POINTER_ATTRIBUTE_IS_MANAGED => c_uint::from(found.kind == 2),
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE if found.kind == 1 => CU_MEMORYTYPE_HOST,
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE => CU_MEMORYTYPE_DEVICE,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        if data.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: writable for an int (the caller's contract); int and
        // unsigned int have one size.
        unsafe { data.cast::<c_uint>().write(value) };
        Ok(())
    })
}

/// A new stream of `device` (non-blocking: it does not synchronise with the
/// legacy default stream); its handle, a leaked allocation's address.
fn new_stream(device: usize, non_blocking: bool) -> usize {
    let handle = Box::into_raw(Box::new(device)) as usize;
    with_state(|state| state.queue_of(Key::Created(handle), device, non_blocking));
    handle
}

/// # Safety
///
/// `stream` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> CuResult {
    entry(|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if stream.is_null() || flags & !CU_STREAM_NON_BLOCKING != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let handle = new_stream(device, flags & CU_STREAM_NON_BLOCKING != 0);
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { stream.write(handle as *mut c_void) };
        Ok(())
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            state.synchronize(queue)?;
            let q = &mut state.queues[queue];
            match q.key {
                Key::Created(_) => q.syncs += 1,
                _ => state.default_syncs[q.device] += 1,
            }
            Ok(())
        })
    })
}

/// # Safety
///
/// `context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(
    handle: *mut c_void,
    context: *mut *mut c_void,
) -> CuResult {
    entry(|| {
        let device = with_state(|state| stream_device(state, handle as usize))?;
        if context.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { context.write(context_handle(device)) };
        Ok(())
    })
}

/// # Safety
///
/// `event` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(event: *mut *mut c_void, _flags: c_uint) -> CuResult {
    entry(|| {
        let device = current_device().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if event.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let handle = Box::into_raw(Box::new(device)) as usize;
        with_state(|state| {
            state.events.insert(
                handle,
                Event {
                    device,
                    destroyed: false,
                    recorded: Recorded::Never,
                },
            )
        });
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { event.write(handle as *mut c_void) };
        Ok(())
    })
}

fn live_event(state: &mut State, handle: usize) -> Result<&mut Event, CuResult> {
    state
        .events
        .get_mut(&handle)
        .filter(|e| !e.destroyed)
        .ok_or(CUDA_ERROR_INVALID_HANDLE)
}

/// # Safety
///
/// None (handles are looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(event_handle: *mut c_void, stream: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            let device = live_event(state, event_handle as usize)?.device;
            let queue = state.resolve(stream as usize)?;
            // The driver: "the event and stream must be in the same context".
            if state.queues[queue].device != device {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            state.check_legacy_use(queue)?;
            let recorded = match state.queues[queue].capture {
                Some(capture) if state.captures[capture].invalidated => {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                }
                Some(capture) => Recorded::Captured {
                    capture,
                    stream: queue,
                },
                None => Recorded::At(state.queues[queue].tail.clone()),
            };
            live_event(state, event_handle as usize)?.recorded = recorded;
            Ok(())
        })
    })
}

/// # Safety
///
/// None (handles are looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(
    handle: *mut c_void,
    event_handle: *mut c_void,
    flags: c_uint,
) -> CuResult {
    entry(|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        with_state(|state| {
            let recorded = live_event(state, event_handle as usize)?.recorded.clone();
            // A stream may wait on an event of another device.
            let queue = state.resolve(handle as usize)?;
            state.check_legacy_use(queue)?;
            let own = state.queues[queue].capture;
            match (recorded, own) {
                (Recorded::Never, _) => {}
                (Recorded::At(clock), None) => state.enqueue(queue, Some(&clock), None, None)?,
                (Recorded::At(_), Some(capture)) => {
                    // An event from outside the capture.
                    state.invalidate(capture);
                    return Err(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
                }
                (Recorded::Captured { capture, .. }, _) if state.captures[capture].invalidated => {
                    return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                }
                (Recorded::Captured { capture, .. }, None) => {
                    if state.is_legacy(queue) {
                        // The legacy stream cannot join a capture.
                        state.invalidate(capture);
                        return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
                    }
                    // The stream joins the capture (a fork, to be joined back).
                    state.queues[queue].capture = Some(capture);
                    let c = &mut state.captures[capture];
                    c.members.push(queue);
                    c.unjoined.insert(queue);
                }
                (Recorded::Captured { capture, stream }, Some(own)) if capture == own => {
                    let c = &mut state.captures[capture];
                    if c.invalidated {
                        return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
                    }
                    if queue == c.origin {
                        c.unjoined.remove(&stream);
                    }
                }
                (Recorded::Captured { capture, .. }, Some(own)) => {
                    state.invalidate(capture);
                    state.invalidate(own);
                    return Err(CUDA_ERROR_STREAM_CAPTURE_MERGE);
                }
            }
            let q = &mut state.queues[queue];
            match q.key {
                Key::Created(_) => q.waits += 1,
                _ => state.default_waits[q.device] += 1,
            }
            Ok(())
        })
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventSynchronize(event_handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(
            |state| match live_event(state, event_handle as usize)?.recorded.clone() {
                Recorded::Never => Ok(()),
                Recorded::Captured { .. } => Err(CUDA_ERROR_CAPTURED_EVENT),
                Recorded::At(clock) => {
                    for (&queue, &count) in &clock {
                        state.run(queue, count);
                    }
                    state.observe(&clock);
                    Ok(())
                }
            },
        )
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(event_handle: *mut c_void) -> CuResult {
    entry(|| {
        with_state(|state| {
            // A pending wait on it keeps what it recorded (the driver's rule).
            live_event(state, event_handle as usize)?.destroyed = true;
            Ok(())
        })
    })
}

/// # Safety
///
/// None (the handle is looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(handle: *mut c_void, mode: c_int) -> CuResult {
    entry(|| {
        if !(0..=2).contains(&mode) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            if state.is_legacy(queue) {
                return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            }
            if state.queues[queue].capture.is_some() {
                return Err(CUDA_ERROR_ILLEGAL_STATE);
            }
            state.queues[queue].capture = Some(state.captures.len());
            state.captures.push(Capture {
                origin: queue,
                members: vec![queue],
                unjoined: BTreeSet::new(),
                invalidated: false,
            });
            Ok(())
        })
    })
}

/// # Safety
///
/// `graph` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(
    handle: *mut c_void,
    graph: *mut *mut c_void,
) -> CuResult {
    entry(|| {
        if graph.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let outcome = with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            let capture = state.queues[queue]
                .capture
                .ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
            if state.captures[capture].origin != queue {
                state.invalidate(capture);
                return Err(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
            }
            let members = std::mem::take(&mut state.captures[capture].members);
            for member in members {
                state.queues[member].capture = None;
            }
            let c = &state.captures[capture];
            if c.invalidated {
                Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            } else if !c.unjoined.is_empty() {
                Err(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
            } else {
                Ok(())
            }
        });
        let made = match outcome {
            Ok(()) => Box::into_raw(Box::new(0u8)).cast(),
            Err(_) => std::ptr::null_mut(),
        };
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { graph.write(made) };
        outcome
    })
}

/// # Safety
///
/// `status` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(handle: *mut c_void, status: *mut c_int) -> CuResult {
    entry(|| {
        if status.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let answer = with_state(|state| {
            let queue = state.resolve(handle as usize)?;
            // A query: the legacy stream's answer is an error, which
            // invalidates nothing.
            if !state.legacy_conflicts(queue).is_empty() {
                return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
            }
            Ok::<_, CuResult>(match state.queues[queue].capture {
                None => CU_STREAM_CAPTURE_STATUS_NONE,
                Some(c) if state.captures[c].invalidated => CU_STREAM_CAPTURE_STATUS_INVALIDATED,
                Some(_) => CU_STREAM_CAPTURE_STATUS_ACTIVE,
            })
        })?;
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { status.write(answer) };
        Ok(())
    })
}

/// # Safety
///
/// None (the graph is never read; the stand-in keeps no graphs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(graph: *mut c_void) -> CuResult {
    entry(|| {
        if graph.is_null() {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    })
}

unsafe extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
}

/// Test entry: `bytes` of memory on `device`, of `kind` 0 (device memory,
/// mapped `PROT_NONE`: the host cannot touch it), 1 (pinned host memory) or
/// 2 (managed memory); 0 on failure. Never freed.
#[unsafe(no_mangle)]
pub extern "C" fn standin_alloc(device: c_int, bytes: usize, kind: c_int) -> usize {
    const PROT_NONE: c_int = 0;
    const PROT_READ_WRITE: c_int = 3;
    const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    let Ok(device) = usize::try_from(device) else {
        return 0;
    };
    if device >= DEVICES || !(0..=2).contains(&kind) || bytes == 0 {
        return 0;
    }
    let prot = if kind == 0 {
        PROT_NONE
    } else {
        PROT_READ_WRITE
    };
    // SAFETY: an anonymous private mapping of `bytes`, kept for the process.
    let start = unsafe {
        mmap(
            std::ptr::null_mut(),
            bytes,
            prot,
            MAP_PRIVATE_ANONYMOUS,
            -1,
            0,
        )
    };
    if start as isize == -1 {
        return 0;
    }
    let start = start as usize;
    ALLOCATIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Allocation {
            start,
            len: bytes,
            device,
            kind,
        });
    start
}

/// Test entry: a new blocking stream of `device` (no context needed); 0 for
/// no such device.
#[unsafe(no_mangle)]
pub extern "C" fn standin_stream_create(device: c_int) -> usize {
    standin_stream_create_with_flags(device, 0)
}

/// Test entry: a new stream of `device` with `cuStreamCreate`'s `flags`
/// (`CU_STREAM_NON_BLOCKING`, 1, or 0); 0 for no such device or flags.
#[unsafe(no_mangle)]
pub extern "C" fn standin_stream_create_with_flags(device: c_int, flags: c_uint) -> usize {
    test_entry(0, || match usize::try_from(device) {
        Ok(device) if device < DEVICES && flags & !CU_STREAM_NON_BLOCKING == 0 => {
            new_stream(device, flags != 0)
        }
        _ => 0,
    })
}

/// Test entry: enqueues on `stream` (a handle, as `cuStreamSynchronize`
/// takes it) a simulated kernel that writes the `len` bytes at `bytes`
/// (copied now) to `address` when it runs; a `CUresult`.
///
/// # Safety
///
/// `bytes` is readable for `len` bytes; `[address, address + len)` is
/// writable host memory (or stand-in device memory, whose writes are not
/// applied) until the write has run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn standin_enqueue_write(
    stream: usize,
    address: usize,
    bytes: *const u8,
    len: usize,
) -> CuResult {
    entry(|| {
        if bytes.is_null() || len == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: readable for `len` bytes (the caller's contract).
        let data = unsafe { std::slice::from_raw_parts(bytes, len) }.to_vec();
        with_state(|state| {
            let queue = state.resolve(stream)?;
            state.enqueue(queue, None, Some((address, len, true)), Some(data))
        })
    })
}

/// Test entry: enqueues on `stream` a simulated kernel that reads
/// `[address, address + len)` (it races with unordered writes); a `CUresult`.
#[unsafe(no_mangle)]
pub extern "C" fn standin_enqueue_read(stream: usize, address: usize, len: usize) -> CuResult {
    entry(|| {
        with_state(|state| {
            let queue = state.resolve(stream)?;
            state.enqueue(queue, None, Some((address, len, false)), None)
        })
    })
}

/// Test entry: the host reads `[address, address + len)` now; returns the
/// races this read makes (writes to it the host has not waited for), which
/// are also counted in `standin_races`.
#[unsafe(no_mangle)]
pub extern "C" fn standin_host_read(address: usize, len: usize) -> usize {
    test_entry(0, || {
        with_state(|state| {
            let racing: Vec<Access> = state
                .unobserved
                .iter()
                .filter(|a| a.write && a.overlaps(address, len))
                .copied()
                .collect();
            for write in &racing {
                let what = format!(
                    "a host read of [{address:#x}, +{len}) is not ordered after the write of [{:#x}, +{}) on {:?}",
                    write.start, write.len, state.queues[write.stream].key
                );
                state.race(&what);
            }
            racing.len()
        })
    })
}

/// Test entry: how many races were recorded, since the start.
#[unsafe(no_mangle)]
pub extern "C" fn standin_races() -> usize {
    test_entry(usize::MAX, || with_state(|state| state.races))
}

/// Test entry: how many enqueued writes to `[address, address + len)` have
/// not run yet.
#[unsafe(no_mangle)]
pub extern "C" fn standin_pending(address: usize, len: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            state
                .queues
                .iter()
                .flat_map(|q| &q.ops[q.done..])
                .filter_map(|op| op.write.as_ref())
                .filter(|(start, bytes)| {
                    *start < address.saturating_add(len)
                        && address < start.saturating_add(bytes.len())
                })
                .count()
        })
    })
}

/// Test entry: how many `cuStreamSynchronize` calls `stream` had.
#[unsafe(no_mangle)]
pub extern "C" fn standin_syncs(handle: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            let queue = state.keys.get(&Key::Created(handle)).copied();
            queue.map_or(0, |q| state.queues[q].syncs)
        })
    })
}

/// Test entry: how many `cuStreamWaitEvent` calls made `stream` wait.
#[unsafe(no_mangle)]
pub extern "C" fn standin_waits(handle: usize) -> usize {
    test_entry(usize::MAX, || {
        with_state(|state| {
            let queue = state.keys.get(&Key::Created(handle)).copied();
            queue.map_or(0, |q| state.queues[q].waits)
        })
    })
}

/// Test entry: how many waits `device`'s default streams (0, 1, 2) made.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_waits(device: c_int) -> usize {
    test_entry(usize::MAX, || {
        let device = usize::try_from(device).ok().filter(|&d| d < DEVICES);
        device.map_or(0, |d| with_state(|state| state.default_waits[d]))
    })
}

/// Test entry: how many synchronisations of `device`'s default streams (0, 1, 2) ran.
#[unsafe(no_mangle)]
pub extern "C" fn standin_default_stream_syncs(device: c_int) -> usize {
    test_entry(usize::MAX, || {
        let device = usize::try_from(device).ok().filter(|&d| d < DEVICES);
        device.map_or(0, |d| with_state(|state| state.default_syncs[d]))
    })
}

/// Test entry: how many calls were refused with an error, since the start.
#[unsafe(no_mangle)]
pub extern "C" fn standin_refusals() -> usize {
    REFUSALS.load(Ordering::Relaxed)
}

/// Test entry: the depth of this thread's context stack.
#[unsafe(no_mangle)]
pub extern "C" fn standin_context_depth() -> usize {
    CURRENT.try_with(|stack| stack.borrow().len()).unwrap_or(0)
}
