//! What a pickled tensor carries besides its bytes, and the checks that
//! make a pickle payload (input, like any other) safe to rebuild from.
//!
//! On the wire the state is one tuple:
//! `(1, (code, bits, lanes), shape, (device_type, device_id), read_only, data)`:
//! the format's version, the DLPack dtype, the extents, the DLPack device,
//! whether the tensor was read-only, and the row-major bytes (`bytes`,
//! `bytearray`, a `PickleBuffer` or any out-of-band buffer object).

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::export::TensorInfo;
use crate::{DataType, DataTypeCode, Device, DeviceType, layout};

/// The payload format this crate writes and reads.
const FORMAT: u32 = 1;

/// A tensor's description as pickled: everything but the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) dtype: DataType,
    pub(crate) shape: Vec<i64>,
    pub(crate) device: Device,
    pub(crate) read_only: bool,
    /// The bytes the elements fill, row-major (packed sub-byte types: their
    /// packed storage).
    pub(crate) nbytes: usize,
}

/// Why a payload cannot be rebuilt: `pickle.UnpicklingError` with this text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PayloadError(pub(crate) String);

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot unpickle a DLPackTensor: {}", self.0)
    }
}

/// Why a state cannot be read: it is no payload (`Invalid`, raised as
/// `pickle.UnpicklingError`), or an interruption was raised while one of
/// its items was read (`Interrupted`, raised as itself: the one rule of
/// [`crate::python::is_interruption`], as typed arguments follow it).
#[derive(Debug)]
pub(crate) enum StateError {
    Invalid(PayloadError),
    Interrupted(PyErr),
}

impl From<PayloadError> for StateError {
    fn from(err: PayloadError) -> Self {
        Self::Invalid(err)
    }
}

fn invalid(message: impl Into<String>) -> PayloadError {
    PayloadError(message.into())
}

impl Header {
    /// The header of the tensor `info` describes (its bytes gathered
    /// row-major, as the pickle carries them).
    pub(crate) fn of(info: &TensorInfo<'_>) -> Self {
        let dtype = info.dtype();
        Self {
            dtype,
            shape: info.shape().to_vec(),
            device: info.device(),
            read_only: info.is_read_only(),
            // Fits: a checked description's storage lies inside a buffer.
            nbytes: layout::storage_bytes(info.numel(), dtype, false).unwrap_or(usize::MAX),
        }
    }

    /// The state tuple, with `data` as the bytes.
    pub(crate) fn to_state<'py>(
        &self,
        py: Python<'py>,
        data: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let dtype = (self.dtype.code.code(), self.dtype.bits, self.dtype.lanes);
        let shape = PyTuple::new(py, self.shape.as_slice())?;
        let device = (self.device.device_type.code(), self.device.device_id);
        (FORMAT, dtype, shape, device, self.read_only, data).into_pyobject(py)
    }

    /// Reads and checks a state tuple: its header, and the data object (not
    /// yet looked at: its length is checked against `nbytes` where it is read).
    pub(crate) fn from_state<'py>(
        state: &Bound<'py, PyAny>,
    ) -> Result<(Self, Bound<'py, PyAny>), StateError> {
        let state = state.cast::<PyTuple>().map_err(|_| {
            invalid(format!(
                "expected the state to be a tuple, got {}",
                crate::python::type_name(state)
            ))
        })?;
        if state.len() != 6 {
            return Err(
                invalid(format!("expected a state of 6 items, got {}", state.len())).into(),
            );
        }
        // The six items in order, borrowed from the tuple (iterated: read
        // without an error to handle, and no reference counted per item).
        let mut items = state.iter_borrowed();
        let mut item = || items.next().expect("6 items");
        let format: u32 = extract(&item(), "the payload format")?;
        if format != FORMAT {
            return Err(invalid(format!(
                "expected payload format {FORMAT}, got {format} (pickled by another version \
                 of pyo3-dlpack?)"
            ))
            .into());
        }
        let (code, bits, lanes): (u8, u8, u16) = extract(&item(), "the dtype (code, bits, lanes)")?;
        let dtype = DataType::new(DataTypeCode::from_code(code), bits, lanes);
        crate::protocol::check_dtype(dtype).map_err(|err| invalid(err.into_message()))?;
        let shape: Vec<i64> = extract(&item(), "the shape (a tuple of ints)")?;
        let (device_type, device_id): (i32, i32) = extract(&item(), "the device")?;
        let device = Device::new(DeviceType::from_code(device_type), device_id);
        let read_only: bool = extract(&item(), "the read-only flag")?;
        let header = Self::checked(dtype, shape, device, read_only)?;
        Ok((header, item().to_owned()))
    }

    /// A header whose shape fits: at most `MAX_NDIM` extents, none
    /// negative, a size that fits in memory.
    pub(crate) fn checked(
        dtype: DataType,
        shape: Vec<i64>,
        device: Device,
        read_only: bool,
    ) -> Result<Self, PayloadError> {
        if shape.len() > layout::MAX_NDIM {
            return Err(invalid(format!(
                "expected at most {} dimensions, got {}",
                layout::MAX_NDIM,
                shape.len()
            )));
        }
        if let Some(extent) = shape.iter().find(|&&n| n < 0) {
            return Err(invalid(format!(
                "expected extents >= 0, got {extent} in shape {shape:?}"
            )));
        }
        // Extents whose product overflows are refused even when another is 0
        // (an empty tensor), as NumPy refuses them: strides over them overflow.
        let spans = shape
            .iter()
            .filter(|&&n| n != 0)
            .try_fold(1i64, |product, &n| product.checked_mul(n));
        let too_large = |shape: &[i64]| {
            invalid(format!(
                "a {dtype} tensor of shape {shape:?} does not fit in memory"
            ))
        };
        if spans.is_none_or(|product| isize::try_from(product).is_err()) {
            return Err(too_large(&shape));
        }
        if device.device_id < 0 {
            return Err(invalid(format!(
                "expected a device index >= 0, got {}",
                device.device_id
            )));
        }
        if device.device_type == DeviceType::CPU && device.device_id != 0 {
            return Err(invalid(format!("expected the CPU as cpu:0, got {device}")));
        }
        let nbytes = layout::numel(&shape)
            .map_err(crate::DLPackError::discard)
            .ok()
            .and_then(|numel| layout::storage_bytes(numel, dtype, false))
            .filter(|&n| isize::try_from(n).is_ok())
            .ok_or_else(|| too_large(&shape))?;
        Ok(Self {
            dtype,
            shape,
            device,
            read_only,
            nbytes,
        })
    }
}

/// `item` as a `T`, or what was expected and what was found: the item's
/// type and `repr` (an unprintable item is named by its type). An
/// interruption raised meanwhile (by an `__index__`, a `__repr__`) is
/// raised as itself.
fn extract<'py, T: FromPyObjectOwned<'py>>(
    item: &Bound<'py, PyAny>,
    what: &str,
) -> Result<T, StateError> {
    match item.extract() {
        Ok(value) => Ok(value),
        Err(err) => Err(refused(item, err.into(), what)),
    }
}

/// [`extract`]'s error: `err` raised as itself when it is an interruption,
/// else what was expected and what was found. (One copy for every `T`.)
#[cold]
#[inline(never)]
fn refused(item: &Bound<'_, PyAny>, err: PyErr, what: &str) -> StateError {
    if let Some(err) = crate::python::interruption(item.py(), err) {
        return StateError::Interrupted(err);
    }
    match crate::python::shown(item, item.repr()) {
        Ok(shown) => invalid(format!(
            "expected {what}, got {} {shown}",
            crate::python::type_name(item),
        ))
        .into(),
        Err(err) => StateError::Interrupted(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(shape: Vec<i64>) -> Result<Header, PayloadError> {
        Header::checked(DataType::F32, shape, Device::cpu(), false)
    }

    #[test]
    fn the_size_is_the_row_major_storage() {
        assert_eq!(header(vec![2, 3]).unwrap().nbytes, 24);
        let packed = Header::checked(DataType::F4_E2M1FN, vec![3], Device::cpu(), false);
        assert_eq!(packed.unwrap().nbytes, 2);
    }

    #[test]
    fn negative_extents_and_overflowing_sizes_are_refused() {
        let negative = header(vec![2, -1]).unwrap_err();
        assert_eq!(negative.0, "expected extents >= 0, got -1 in shape [2, -1]");
        let huge = header(vec![i64::MAX, 4]).unwrap_err();
        assert!(huge.0.contains("does not fit in memory"), "{huge}");
        let too_many = header(vec![1; layout::MAX_NDIM + 1]).unwrap_err();
        assert!(too_many.0.starts_with("expected at most"), "{too_many}");
    }

    #[test]
    fn a_state_round_trips() {
        Python::attach(|py| {
            let written =
                Header::checked(DataType::BF16, vec![4, 1], Device::cuda(1), true).unwrap();
            let state = written.to_state(py, py.None().into_bound(py)).unwrap();
            let (read, data) = Header::from_state(state.as_any()).unwrap();
            assert_eq!(read, written);
            assert!(data.is_none());
        });
    }

    #[test]
    fn forged_states_are_refused_with_what_was_found() {
        Python::attach(|py| {
            let refuse = |state: Bound<'_, PyAny>| match Header::from_state(&state) {
                Err(StateError::Invalid(err)) => err.0,
                other => panic!("expected an invalid payload, got {other:?}"),
            };
            let list = pyo3::types::PyList::empty(py).into_any();
            assert_eq!(refuse(list), "expected the state to be a tuple, got list");
            let short = (1, 2).into_pyobject(py).unwrap().into_any();
            assert_eq!(refuse(short), "expected a state of 6 items, got 2");
            let unknown_dtype = (1, (99, 8, 1), (2,), (1, 0), false, b"ab".as_slice());
            let message = refuse(unknown_dtype.into_pyobject(py).unwrap().into_any());
            assert!(message.contains("99"), "{message}");
            let later = (2, (2, 32, 1), (1,), (1, 0), false, b"abcd".as_slice());
            let message = refuse(later.into_pyobject(py).unwrap().into_any());
            assert!(
                message.starts_with("expected payload format 1, got 2"),
                "{message}"
            );
        });
    }
}
