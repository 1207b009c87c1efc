//! A description that contradicts the memory it describes: what safe code
//! can never export (the memory's own device, dtype or layout decides).

use std::fmt;

use super::detail::list;
use crate::{DataType, Device};

/// What a description said that its memory contradicts, in
/// [`DLPackError::Contradicts`](crate::DLPackError::Contradicts).
///
/// ```
/// use pyo3_dlpack::{DLPackError, Device, TensorInfo, error::Contradiction};
///
/// let host = vec![0.0f32; 4];
/// let err = TensorInfo::builder(&host).device(Device::cuda(1)).build().unwrap_err();
/// assert_eq!(err, DLPackError::Contradicts {
///     field: None,
///     what: Contradiction::Device { memory: Device::cpu(), given: Device::cuda(1) },
/// });
/// assert_eq!(err.to_string(),
///     "the description says device cuda:1, but the memory is on cpu:0 \
///      (memory on another device is vouched for by RawBuffer::new)");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contradiction {
    /// A device other than the memory's.
    Device {
        /// The memory's device.
        memory: Device,
        /// The device given.
        given: Device,
    },
    /// A dtype that typed memory does not hold.
    Dtype {
        /// The memory's element type.
        memory: DataType,
        /// The dtype given.
        given: DataType,
    },
    /// A shape other than that of memory that knows its own (an `ndarray` array, a matrix).
    Shape {
        /// The memory's own shape.
        memory: Vec<i64>,
        /// The shape given.
        given: Vec<i64>,
    },
    /// Strides other than those of memory that knows its own.
    Strides {
        /// The memory's own strides.
        memory: Vec<i64>,
        /// The strides given.
        given: Vec<i64>,
    },
    /// A byte offset other than that of memory that knows its own layout.
    ByteOffset {
        /// Bytes from the buffer's start to the memory's own first element.
        memory: usize,
        /// The offset given.
        given: usize,
    },
}

impl Contradiction {
    /// The derive attribute of the field that gives this part of a
    /// description (`"device"`, `"dtype"`, `"shape"`, `"strides"`, `"byte_offset"`).
    pub fn role(&self) -> &'static str {
        match self {
            Self::Device { .. } => "device",
            Self::Dtype { .. } => "dtype",
            Self::Shape { .. } => "shape",
            Self::Strides { .. } => "strides",
            Self::ByteOffset { .. } => "byte_offset",
        }
    }
}

/// The message of [`DLPackError::Contradicts`](crate::DLPackError::Contradicts).
pub(crate) fn fmt(
    field: Option<&str>,
    what: &Contradiction,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    match field {
        Some(field) => write!(f, "the #[dlpack({})] field `{field}` says ", what.role())?,
        None => f.write_str("the description says ")?,
    }
    match what {
        Contradiction::Device { memory, given } => write!(
            f,
            "device {given}, but the memory is on {memory} \
             (memory on another device is vouched for by RawBuffer::new)"
        ),
        Contradiction::Dtype { memory, given } => write!(
            f,
            "dtype {given}, but the memory holds {memory} elements \
             (a runtime dtype is for untyped bytes: Vec<u8>, RawBuffer)"
        ),
        Contradiction::Shape { memory, given } => write!(
            f,
            "shape {}, but the data's own shape is {} (it brings its own layout: \
             drop the shape or make it agree)",
            list(given),
            list(memory)
        ),
        Contradiction::Strides { memory, given } => write!(
            f,
            "strides {}, but the data's own strides are {} (it brings its own layout: \
             drop the strides or make them agree)",
            list(given),
            list(memory)
        ),
        Contradiction::ByteOffset { memory, given } => write!(
            f,
            "byte offset {given}, but the data's own first element is at byte {memory} \
             (it brings its own layout)"
        ),
    }
}
