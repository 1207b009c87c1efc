//! JAX: `Native::jax` results, through JAX's public `jax.numpy.from_dlpack`.
//!
//! JAX (up to 0.12 at least) asks `__dlpack__(stream=None)` for a legacy
//! capsule, which cannot say "read-only", so a read-only value is refused to
//! every other legacy consumer (NumPy's rule: it might write). JAX arrays
//! are immutable, so a read-only value goes to JAX with its writability
//! unknown, the state a legacy capsule may carry.

use std::sync::Arc;

use pyo3::prelude::*;

use super::framework::Framework;
use crate::export::IntoDLPack;
use crate::{DLPackError, TensorInfo};

/// `value` as a `jax.Array` (imports JAX).
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    Framework::Jax.through_from_dlpack(py, ForImmutableConsumer(value))
}

/// A `DLPackTensor`'s shared value as a `jax.Array` (`DLPackTensor.__jax_array__`,
/// which `jnp.asarray(t)` and every `jax.numpy` function call): zero-copy, as
/// [`array_of`]. JAX never writes, so a value the tensor exports read-only
/// (its own flag, or a shared `Arc`) is handed over with its writability
/// unknown, as `Native::jax` does.
pub(crate) fn array_of_shared<'py>(
    py: Python<'py>,
    value: &Arc<dyn IntoDLPack>,
) -> PyResult<Bound<'py, PyAny>> {
    array_of(py, Shared(Arc::clone(value)))
}

/// A value shared with a `DLPackTensor`, exported again.
struct Shared(Arc<dyn IntoDLPack>);

impl IntoDLPack for Shared {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.0.tensor_info()
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.0.synchronize(consumer_stream)
    }
}

/// A value exported to a consumer that never writes (see the module docs).
struct ForImmutableConsumer<T>(T);

impl<T: IntoDLPack> IntoDLPack for ForImmutableConsumer<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        let mut info = self.0.tensor_info()?;
        info.for_immutable_consumer();
        Ok(info)
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.0.synchronize(consumer_stream)
    }
}
