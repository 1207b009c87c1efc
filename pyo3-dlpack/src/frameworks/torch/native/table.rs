//! `Native::torch` through torch's C exchange table: the value in a
//! versioned block handed to its `managed_tensor_to_py_object_no_sync`.

use std::cell::Cell;

use pyo3::prelude::*;

use super::{refused, writable_for_torch};
use crate::DLPackError;
use crate::TensorInfo;
use crate::exchange::ExchangeApi;
use crate::export::managed::{IntoBlock, call_deleter};
use crate::export::plan::{CapsuleFormat, ExportRequest};
use crate::export::{Described, IntoDLPack};
use crate::ffi::DLManagedTensorVersioned;

/// `torch.Tensor`'s exchange table (`None`: torch < 2.10).
pub(super) fn torch_table(py: Python<'_>) -> PyResult<Option<ExchangeApi>> {
    crate::exchange::lookup_type(super::super::import_tensor_type(py)?)
}

thread_local! {
    /// The token of the last value handed to torch's table that was dropped
    /// on this thread, and the next token to hand out (see [`Watched`]).
    static DROPPED: Cell<u64> = const { Cell::new(0) };
    static NEXT: Cell<u64> = const { Cell::new(1) };
}

/// The owner of a block handed to torch: tells, on this thread, whether its
/// deleter has run. torch's table takes the block when it succeeds; when it
/// fails, it may have run the deleter (an error after `from_blob`) or not
/// (an error before it): the token says which, so the value is dropped
/// exactly once either way (another value dropped meanwhile, say by a
/// garbage collection inside torch, has another token).
struct Watched<T> {
    value: T,
    token: u64,
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        DROPPED.set(self.token);
    }
}

impl<T: IntoDLPack> IntoDLPack for Watched<T> {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        self.value.tensor_info()
    }

    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        self.value.synchronize(consumer_stream)
    }
}

/// A versioned block of the value (the plan of `__dlpack__(max_version=(1, 3))`)
/// handed to torch's `managed_tensor_to_py_object_no_sync`.
pub(super) fn to_torch<T: IntoDLPack>(
    py: Python<'_>,
    api: ExchangeApi,
    value: T,
) -> PyResult<Bound<'_, PyAny>> {
    let token = NEXT.get();
    NEXT.set(token.wrapping_add(1));
    let managed = versioned_block(value, token)?;
    let (dtype, device) = {
        // SAFETY: the block just written, ours until handed to torch below.
        let tensor = &unsafe { managed.as_ref() }.dl_tensor;
        (tensor.dtype, tensor.device)
    };
    // SAFETY: a live block this function owns and gives to torch.
    match unsafe { api.to_py_object(py, managed) } {
        Ok(tensor) => Ok(tensor),
        Err(err) => {
            if DROPPED.get() != token {
                // SAFETY: torch failed before taking the block (its deleter
                // did not run, see `Watched`): it is still ours, freed once here.
                unsafe { call_deleter(managed) };
            }
            Err(refused(py, err, dtype, device))
        }
    }
}

/// The value in a versioned managed block (described once, as `export_value`
/// does).
fn versioned_block<T: IntoDLPack>(
    value: T,
    token: u64,
) -> Result<std::ptr::NonNull<DLManagedTensorVersioned>, DLPackError> {
    let described = Described::new(Watched { value, token })?;
    let info = described.info();
    writable_for_torch(info)?;
    let plan = ExportRequest::of_format(CapsuleFormat::Versioned).plan(info)?;
    if let Some(stream) = plan.sync_stream {
        crate::export::synchronize(described.owner(), info, stream)?;
    }
    Ok(described.into_block(&plan))
}
