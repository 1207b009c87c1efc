//! Values made once per process: the crate's one rule for them. Each lives
//! in a `static` [`Cell`], is made with no cell held, and is published by
//! one compare-and-swap.
//!
//! **Fork-safe** (DESIGN.md invariant 10). PyO3's `PyOnceLock::get_or_try_init`
//! holds its cell while the initialiser runs; an initialiser that runs
//! Python code (an import, an allocation that starts the garbage collector)
//! lets other threads run, and one that forks then copies the cell held:
//! the child waited for it forever. A [`Cell`] is never held at all: the
//! value is made first, by whichever thread asks, and a fork copies either
//! an empty cell (the child makes the value itself) or a published one.
//!
//! **Racing threads** may each make a value; the first published is kept
//! and the others are dropped, so what an initialiser does must be harmless
//! to repeat.
//!
//! **Small.** A `PyOnceLock<T>` brings its own copy of the once-machinery
//! for every `T` (some hundreds of bytes each); a [`Cell`] brings a load
//! and a swap.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::prelude::*;

/// A cell set once per process with no lock at all: the value is boxed and
/// published by one compare-and-swap of a pointer, never freed nor changed
/// afterwards. Only a `static` can be used (the methods take `&'static
/// self`), so the value lives as long as its cell: nothing leaks. Threads
/// racing to set it may each make a value; the first published is kept and
/// the others are dropped.
pub(crate) struct Cell<T> {
    value: AtomicPtr<T>,
    /// Shares a `T` between threads as a `PyOnceLock<T>` does (no `Sync`
    /// without `T: Sync`; values are made and dropped on any thread, hence
    /// the `T: Send` of the methods).
    _shares: PhantomData<T>,
}

impl<T: Send + Sync> Cell<T> {
    /// An empty cell.
    pub(crate) const fn new() -> Self {
        Self {
            value: AtomicPtr::new(ptr::null_mut()),
            _shares: PhantomData,
        }
    }

    /// The value, if one was set.
    #[inline]
    pub(crate) fn get(&'static self, _py: Python<'_>) -> Option<&'static T> {
        let value = self.value.load(Ordering::Acquire);
        // SAFETY: a non-NULL pointer here came from `Box::into_raw` in
        // `get_or_set`, was published with Release (read with Acquire) and
        // is never freed nor written again.
        unsafe { value.as_ref() }
    }

    /// The value, setting `value` first if there is none (else dropping it,
    /// attached: values hold Python references).
    pub(crate) fn get_or_set(&'static self, _py: Python<'_>, value: T) -> &'static T {
        let mine = Box::into_raw(Box::new(value));
        match self.value.compare_exchange(
            ptr::null_mut(),
            mine,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just published, never freed (as in `get`).
            Ok(_) => unsafe { &*mine },
            Err(first) => {
                // SAFETY: `mine` came from `Box::into_raw` above and was
                // never published: still this thread's alone.
                drop(unsafe { Box::from_raw(mine) });
                // SAFETY: the published value, as in `get`.
                unsafe { &*first }
            }
        }
    }

    /// The value, made by `init` (with no cell held) if there is none.
    ///
    /// Inlined, the making apart: a value already made is one load and a
    /// compare in the caller (the torch import asks two such cells per call).
    #[inline]
    pub(crate) fn get_or_try_init<E>(
        &'static self,
        py: Python<'_>,
        init: impl FnOnce() -> Result<T, E>,
    ) -> Result<&'static T, E> {
        match self.get(py) {
            Some(value) => Ok(value),
            None => self.make(py, init),
        }
    }

    /// The first call's half of [`Cell::get_or_try_init`].
    #[cold]
    #[inline(never)]
    fn make<E>(
        &'static self,
        py: Python<'_>,
        init: impl FnOnce() -> Result<T, E>,
    ) -> Result<&'static T, E> {
        Ok(self.get_or_set(py, init()?))
    }
}

/// The type `module.name`, imported once (as `PyOnceLock::import`, but with
/// no cell held while importing).
// Its users: the torch import's method check (of the exchange API's path),
// and pickling's `PickleBuffer` (which needs `Py_buffer`).
#[cfg(any(
    all(feature = "exchange-api", not(any(Py_LIMITED_API, PyPy, GraalPy))),
    all(feature = "pickle", any(not(Py_LIMITED_API), Py_3_11))
))]
pub(crate) fn import_type<'py>(
    cell: &'static Cell<Py<pyo3::types::PyType>>,
    py: Python<'py>,
    module: &str,
    name: &str,
) -> PyResult<&'py Bound<'py, pyo3::types::PyType>> {
    let ty = cell.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            py.import(module)?
                .getattr(name)?
                .cast_into::<pyo3::types::PyType>()?
                .unbind(),
        )
    })?;
    Ok(ty.bind(py))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use pyo3::prelude::*;

    use super::Cell;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    /// Counts its drops in `DROPS`.
    struct Counted(u8);

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_cell_keeps_the_first_value_and_drops_the_others() {
        static CELL: Cell<Counted> = Cell::new();
        Python::attach(|py| {
            assert!(CELL.get(py).is_none());
            assert_eq!(CELL.get_or_set(py, Counted(1)).0, 1);
            // A second value loses: dropped at once, the first kept.
            assert_eq!(CELL.get_or_set(py, Counted(2)).0, 1);
            assert_eq!(DROPS.load(Ordering::Relaxed), 1);
            let made: Result<_, ()> = CELL.get_or_try_init(py, || Ok(Counted(3)));
            assert_eq!(made.unwrap().0, 1, "no value made once one is set");
            assert_eq!(DROPS.load(Ordering::Relaxed), 1);
            assert!(std::ptr::eq(CELL.get(py).unwrap(), CELL.get(py).unwrap()));
        });
    }
}
