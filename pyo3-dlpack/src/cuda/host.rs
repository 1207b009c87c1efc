//! The one rule for when the host may read memory that a value describes:
//! plain host memory at once; CUDA pinned (`cuda_host`) and managed memory
//! only after the value's own stream (`TensorData::stream`), when it names
//! one, has finished its work (through the CUDA driver; pending work the
//! host must see is named there, not ordered in `IntoDLPack::synchronize`,
//! which is for consumers' streams); device memory never. The buffer
//! export, `copy=True`, `dl_device=cpu`, an export of pinned memory as it
//! is (its consumer reads it on the host: pinned memory has no stream
//! protocol), `Native::numpy` and the host views of an import (`as_slice`,
//! `to_vec`, `as_array`: after the stream the import's data is ready on,
//! [`PyTensor::stream`](crate::PyTensor::stream)) all ask it before the
//! host reads. ROCm's
//! pinned memory names no stream this crate can wait on: it is read at once.

use pyo3::Python;

use crate::{DLPackError, Device, DeviceType};

/// Makes memory on `device`, written by pending work on `stream` (if any),
/// safe for the host to read now, blocking without the GIL (work queued on
/// the stream may need it: host callbacks). Device memory the host cannot
/// reach is the callers' to refuse (each with its own message); here it is
/// no error.
pub(crate) fn make_host_readable(
    py: Python<'_>,
    device: Device,
    stream: Option<usize>,
) -> Result<(), DLPackError> {
    let ordered_by_cuda = matches!(
        device.device_type,
        DeviceType::CUDA_HOST | DeviceType::CUDA_MANAGED
    );
    match stream {
        Some(stream) if ordered_by_cuda => {
            let cuda = super::driver::driver(
                "reading pinned or managed memory on the host after its stream",
            )?;
            py.detach(|| cuda.synchronize(device.device_id, stream))?;
            Ok(())
        }
        _ => Ok(()),
    }
}
