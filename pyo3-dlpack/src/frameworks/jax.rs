//! JAX: `Native::jax` results, through JAX's public `jax.numpy.from_dlpack`.
//!
//! JAX (up to 0.12 at least) asks `__dlpack__(stream=None)` for a legacy
//! capsule, which cannot say "read-only", so a read-only value is refused to
//! every other legacy consumer (NumPy's rule: it might write). JAX arrays
//! are immutable, so a read-only value goes to JAX with its writability
//! unknown, the state a legacy capsule may carry.

use pyo3::prelude::*;

use super::native::{Framework, through_from_dlpack};
use crate::export::IntoDLPack;
use crate::{DLPackError, TensorInfo};

/// `value` as a `jax.Array` (imports JAX).
pub(crate) fn array_of<T: IntoDLPack>(py: Python<'_>, value: T) -> PyResult<Bound<'_, PyAny>> {
    through_from_dlpack(py, ForImmutableConsumer(value), Framework::Jax)
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
