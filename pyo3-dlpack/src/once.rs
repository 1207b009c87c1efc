//! Values made once per process, in cells a `fork` never copies held
//! (DESIGN.md invariant 10).
//!
//! PyO3's `PyOnceLock::get_or_try_init` holds its cell while the
//! initialiser runs; an initialiser that runs Python code (an import, an
//! allocation that starts the garbage collector) lets other threads run,
//! and one that forks then copies the cell held: the child waited for it
//! forever. Here the value is made first, with no cell held, and then
//! stored: `set` holds the cell only to move the value in, attached and
//! running no Python code, so no fork falls there (a fork needs the
//! interpreter, and on a free-threaded one stops the world at a point
//! where Python code runs). Threads racing to make a value may each make
//! one; the first stored is kept and the others are dropped, so what an
//! initialiser does must be harmless to repeat.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// `cell`'s value, storing `value` first if it has none (else dropping it).
pub(crate) fn get_or_set<'a, T>(cell: &'a PyOnceLock<T>, py: Python<'_>, value: T) -> &'a T {
    let _lost = cell.set(py, value);
    cell.get(py).expect("a cell just set holds a value")
}

/// `cell`'s value, made by `init` (with no cell held) if it has none.
///
/// Inlined, the making apart: a value already made is one load and a
/// compare in the caller (the torch import asks two such cells per call).
#[inline]
pub(crate) fn get_or_try_init<'a, T, E>(
    cell: &'a PyOnceLock<T>,
    py: Python<'_>,
    init: impl FnOnce() -> Result<T, E>,
) -> Result<&'a T, E> {
    match cell.get(py) {
        Some(value) => Ok(value),
        None => make(cell, py, init),
    }
}

/// The first call's half of [`get_or_try_init`].
#[cold]
#[inline(never)]
fn make<'a, T, E>(
    cell: &'a PyOnceLock<T>,
    py: Python<'_>,
    init: impl FnOnce() -> Result<T, E>,
) -> Result<&'a T, E> {
    Ok(get_or_set(cell, py, init()?))
}

/// The type `module.name`, imported once (as `PyOnceLock::import`, with no
/// cell held while importing).
// Its users: the torch import's method check (of the exchange API's path),
// and pickling's `PickleBuffer` (which needs `Py_buffer`).
#[cfg(any(
    all(feature = "exchange-api", not(any(Py_LIMITED_API, PyPy, GraalPy))),
    all(feature = "pickle", any(not(Py_LIMITED_API), Py_3_11))
))]
pub(crate) fn import_type<'py>(
    cell: &'static PyOnceLock<Py<pyo3::types::PyType>>,
    py: Python<'py>,
    module: &str,
    name: &str,
) -> PyResult<&'py Bound<'py, pyo3::types::PyType>> {
    let ty = get_or_try_init(cell, py, || {
        Ok::<_, PyErr>(
            py.import(module)?
                .getattr(name)?
                .cast_into::<pyo3::types::PyType>()?
                .unbind(),
        )
    })?;
    Ok(ty.bind(py))
}
