//! What a `PyTensor` keeps on the heap: one allocation per import, the
//! thread's spare one when it has one (see `crate::spare`).

use std::alloc::Layout;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::OnceLock;

use crate::DataType;
use crate::Device;
use crate::ffi::DLTensor;
use crate::foreign::Checked;
use crate::import::consume::Managed;
use crate::import::registry::Registration;
use crate::layout::DimsBuf;
use crate::spare;

thread_local! {
    /// This thread's spare `State` allocation.
    static SPARE: spare::Slot = const { spare::Slot::new() };
}

/// What a `PyTensor` knows, on the heap (see `PyTensor::state`).
pub(crate) struct State {
    pub(crate) managed: Option<Managed>,
    /// The description of a borrowed view or a NumPy array read directly
    /// (their `Managed` holds none); unused for capsules, which hold theirs.
    /// Its `shape` and `strides` are never read after import (NULL for an
    /// array, the producer's for a view): `dims_copy` has them.
    pub(crate) own_tensor: DLTensor,
    pub(crate) checked: Checked,
    /// This import's entry in the aliasing registry, made when the first
    /// view is (imports that never hand out a view cost the registry
    /// nothing); `None` inside for no elements, or after `unregister`.
    pub(crate) registration: OnceLock<Option<Registration>>,
    /// Shape and strides, copied out of the producer's arrays when checked
    /// on import (they may change while the import lives: torch's are the
    /// source tensor's own) or read from a NumPy array; `None` only before
    /// that. Inline up to 4 dimensions.
    pub(crate) dims_copy: Option<DimsBuf>,
    /// What a legacy capsule's producer said, through its own API or what
    /// it is, about writes (see `legacy_writability`).
    pub(crate) legacy_writes: LegacyWrites,
    /// Sub-byte elements stored a byte each by a producer known to store
    /// them so without the flag that says it (JAX's float4).
    pub(crate) subbyte_padded: bool,
    /// The stream the data is ready on (see `PyTensor::stream`).
    pub(crate) stream: Option<i64>,
}

/// What a legacy capsule's producer says about writes, beyond the capsule
/// (which cannot say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegacyWrites {
    /// Nothing: the import is read-only in Rust.
    Unknown,
    /// Its own API says the memory may be written (NumPy's flags; torch).
    Writable,
    /// A `jax.Array` (jaxlib's own type): JAX arrays are immutable.
    JaxImmutable,
}

impl State {
    /// The state of a tensor owning `managed`, not yet checked, written in
    /// its allocation (`Box::new` built it on the stack and copied it): this
    /// thread's spare one, or a new one.
    pub(crate) fn new(managed: Managed) -> Box<Self> {
        let block = spare::take(&SPARE, Layout::new::<Self>());
        // SAFETY: a block of `State`'s layout (not zero-sized) from the global
        // allocator, owned by nobody else: what a `Box` of it would hold.
        let mut state = unsafe { Box::from_raw(block.as_ptr().cast::<MaybeUninit<Self>>()) };
        state.write(Self {
            managed: Some(managed),
            own_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: Device::cpu(),
                ndim: 0,
                dtype: DataType::U8,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            checked: Checked::EMPTY,
            registration: OnceLock::new(),
            dims_copy: None,
            legacy_writes: LegacyWrites::Unknown,
            subbyte_padded: false,
            stream: None,
        });
        // SAFETY: initialised by the `write` just above.
        unsafe { state.assume_init() }
    }

    /// Drops the state's fields and keeps its allocation as this thread's
    /// spare (or frees it, when the thread has one or is exiting).
    pub(crate) fn recycle(state: Box<Self>) {
        let ptr = NonNull::from(Box::leak(state));
        // SAFETY: `ptr` is the leaked `Box`'s, so valid, aligned and
        // initialised, and nothing else refers to it; its fields are dropped
        // here once, and it is only used again as uninitialised memory below.
        unsafe { std::ptr::drop_in_place(ptr.as_ptr()) };
        // SAFETY: the `Box`'s allocation, of `State`'s layout, from the global
        // allocator; its contents were dropped just above and nothing refers
        // to it.
        unsafe { spare::give_back(&SPARE, ptr.cast(), Layout::new::<Self>()) };
    }
}

// The states tested hold borrowed views, which the exchange API alone makes.
#[cfg(all(test, feature = "exchange-api"))]
mod tests {
    use super::*;

    fn fresh() -> Box<State> {
        State::new(Managed::Borrowed {
            version: crate::ffi::DLPackVersion { major: 1, minor: 3 },
        })
    }

    #[test]
    fn a_dropped_state_is_reused_by_the_next_import_on_its_thread() {
        let first = fresh();
        let address = &*first as *const State;
        State::recycle(first);
        let second = fresh();
        assert_eq!(&*second as *const State, address);
        State::recycle(second);
    }

    #[test]
    fn a_thread_keeps_the_last_spare() {
        let (a, b) = (fresh(), fresh());
        let address_b = &*b as *const State;
        State::recycle(a);
        // The slot is full: `b`'s allocation replaces `a`'s, which is freed.
        State::recycle(b);
        let c = fresh();
        assert_eq!(&*c as *const State, address_b);
        State::recycle(c);
    }

    /// A state moved to another thread, as a `PyTensor` may be.
    struct Sent(Box<State>);
    // SAFETY: the state made by `fresh` holds a borrowed view's version and
    // NULL pointers only: nothing tied to the thread that made it.
    unsafe impl Send for Sent {}

    impl Sent {
        /// Takes the whole `Sent` (a closure would capture only the field).
        fn into_inner(self) -> Box<State> {
            self.0
        }
    }

    #[test]
    fn a_state_dropped_on_another_thread_is_kept_there() {
        let state = Sent(fresh());
        let address = &*state.0 as *const State as usize;
        let reused = std::thread::spawn(move || {
            State::recycle(state.into_inner());
            let next = fresh();
            let same = &*next as *const State as usize == address;
            State::recycle(next);
            same
        })
        .join()
        .unwrap();
        assert!(reused);
    }
}
