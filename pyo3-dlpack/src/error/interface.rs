//! What can go wrong importing from the producer protocols other than DLPack:
//! the buffer protocol, `__array_interface__` and `__cuda_array_interface__`.

use std::fmt;

/// A producer protocol other than DLPack that an import reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// NumPy's `__cuda_array_interface__` (versions 2 and 3).
    CudaArrayInterface,
    /// NumPy's `__array_interface__` (version 3).
    ArrayInterface,
    /// Python's buffer protocol (`memoryview`, `bytes`, `bytearray`, `array.array`, `mmap`).
    Buffer,
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CudaArrayInterface => "__cuda_array_interface__",
            Self::ArrayInterface => "__array_interface__",
            Self::Buffer => "the buffer protocol",
        })
    }
}

/// A producer of one of the [`Interface`]s described something this crate
/// cannot import, or the CUDA driver it needs failed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterfaceError {
    /// An element type with no DLPack dtype (a struct format such as `"3f"`
    /// or `"P"`, a typestr such as `"<U4"` or `"|O8"`).
    UnsupportedFormat {
        /// The protocol.
        interface: Interface,
        /// The format or typestr as given.
        format: String,
    },
    /// Elements in the other byte order than this machine's, which would be
    /// misread.
    ByteOrder {
        /// The protocol.
        interface: Interface,
        /// The format or typestr as given.
        format: String,
    },
    /// A stride in bytes that is not a multiple of the element size.
    Stride {
        /// The protocol.
        interface: Interface,
        /// The stride in bytes.
        stride: i64,
        /// The element size in bytes.
        itemsize: usize,
    },
    /// A masked array: the mask would be lost.
    Mask {
        /// The protocol.
        interface: Interface,
    },
    /// An indirect (PIL-style) buffer, with suboffsets.
    Suboffsets,
    /// A field missing, of the wrong type or out of range.
    Malformed {
        /// The protocol.
        interface: Interface,
        /// The field, such as `shape` or `data`.
        field: &'static str,
        /// What the field must be.
        expected: &'static str,
        /// What it was (`repr`, or a description).
        found: String,
    },
    /// A version this crate does not read.
    Version {
        /// The protocol.
        interface: Interface,
        /// The versions read.
        expected: &'static str,
        /// The version given.
        found: String,
    },
    /// The CUDA driver (`libcuda.so.1`, or the library `PYO3_DLPACK_CUDA_DRIVER`
    /// names) could not be loaded.
    NoCudaDriver {
        /// What it was needed for.
        purpose: &'static str,
        /// Why, as the loader says (naming the library), or the failed
        /// `cuInit` of the library.
        reason: String,
    },
    /// A CUDA driver call failed.
    Cuda {
        /// The driver function.
        call: &'static str,
        /// Its `CUresult`.
        code: i32,
    },
    /// A stream is being captured into a CUDA graph, where the crate's
    /// ordering call `call` is not allowed (the driver would refuse it and
    /// invalidate the capture); refused first, the capture left as it was.
    CudaCapturing {
        /// The driver call that was not made.
        call: &'static str,
        /// The capturing stream's handle (DLPack's number).
        stream: usize,
    },
    /// The buffer protocol is not in the limited API this extension was
    /// built for (abi3 before CPython 3.11).
    BufferUnavailable,
}

impl fmt::Display for InterfaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedFormat { interface, format } => write!(
                f,
                "{interface} describes elements of format '{format}', which has no DLPack dtype: \
                 expected a bool, integer, float or complex number"
            ),
            Self::ByteOrder { interface, format } => write!(
                f,
                "{interface} describes elements of format '{format}' in non-native byte order: \
                 expected native ({}-endian) order; swap the bytes first",
                if cfg!(target_endian = "little") {
                    "little"
                } else {
                    "big"
                }
            ),
            Self::Stride {
                interface,
                stride,
                itemsize,
            } => write!(
                f,
                "{interface} gives a stride of {stride} bytes: expected a multiple of the \
                 element size, {itemsize} bytes"
            ),
            Self::Mask { interface } => write!(
                f,
                "{interface} describes a masked array: expected no mask (DLPack has no mask; \
                 fill or drop the masked elements first)"
            ),
            Self::Suboffsets => f.write_str(
                "the buffer protocol gives an indirect buffer (suboffsets): expected one block \
                 of memory",
            ),
            Self::Malformed {
                interface,
                field,
                expected,
                found,
            } => write!(f, "{interface}: {field} must be {expected}, got {found}"),
            Self::Version {
                interface,
                expected,
                found,
            } => write!(f, "{interface}: expected version {expected}, got {found}"),
            Self::NoCudaDriver { purpose, reason } => write!(
                f,
                "{purpose} needs the CUDA driver, which could not be loaded: {reason}"
            ),
            Self::Cuda { call, code } => {
                write!(f, "the CUDA driver's {call} failed with CUresult {code}")?;
                if let Some((name, hint)) = cuda_error_name(*code) {
                    write!(f, " ({name}{hint})")?;
                }
                Ok(())
            }
            Self::CudaCapturing { call, stream } => write!(
                f,
                "CUDA stream {stream:#x} is being captured into a CUDA graph, where {call} is \
                 not allowed; export or import outside the capture (or export with stream=-1 \
                 and order the streams yourself): the capture is left as it was"
            ),
            Self::BufferUnavailable => f.write_str(
                "the buffer protocol is not in the limited API before CPython 3.11: \
                 build the extension for abi3-py311 or later, or without abi3",
            ),
        }
    }
}

/// The driver's name of the `CUresult`s this crate's calls can return (the
/// names `cuGetErrorName` gives), and what a Python user can do about the
/// stream-capture ones: the crate's ordering calls (an event wait, a
/// synchronisation) are illegal while a stream is being captured into a
/// CUDA graph.
fn cuda_error_name(code: i32) -> Option<(&'static str, &'static str)> {
    const CAPTURE: &str = ": a stream is being captured into a CUDA graph; export or import \
                           outside the capture (or export with stream=-1 and order the streams \
                           yourself)";
    Some(match code {
        1 => ("CUDA_ERROR_INVALID_VALUE", ""),
        2 => ("CUDA_ERROR_OUT_OF_MEMORY", ""),
        3 => ("CUDA_ERROR_NOT_INITIALIZED", ""),
        4 => ("CUDA_ERROR_DEINITIALIZED", ""),
        100 => ("CUDA_ERROR_NO_DEVICE", ""),
        101 => ("CUDA_ERROR_INVALID_DEVICE", ""),
        201 => ("CUDA_ERROR_INVALID_CONTEXT", ""),
        400 => (
            "CUDA_ERROR_INVALID_HANDLE",
            ": not a live stream or event of this driver",
        ),
        401 => ("CUDA_ERROR_ILLEGAL_STATE", ""),
        700 => ("CUDA_ERROR_ILLEGAL_ADDRESS", ""),
        900 => ("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", CAPTURE),
        901 => ("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", CAPTURE),
        902 => ("CUDA_ERROR_STREAM_CAPTURE_MERGE", CAPTURE),
        903 => ("CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", CAPTURE),
        904 => ("CUDA_ERROR_STREAM_CAPTURE_UNJOINED", CAPTURE),
        905 => ("CUDA_ERROR_STREAM_CAPTURE_ISOLATION", CAPTURE),
        906 => ("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", CAPTURE),
        907 => ("CUDA_ERROR_CAPTURED_EVENT", CAPTURE),
        999 => ("CUDA_ERROR_UNKNOWN", ""),
        _ => return None,
    })
}

#[cfg(test)]
mod cuda_names {
    use super::*;

    #[test]
    fn driver_errors_are_named_and_capture_ones_explained() {
        let err = InterfaceError::Cuda {
            call: "cuStreamWaitEvent",
            code: 906,
        };
        assert_eq!(
            err.to_string(),
            "the CUDA driver's cuStreamWaitEvent failed with CUresult 906 \
             (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: a stream is being captured into a CUDA graph; \
             export or import outside the capture (or export with stream=-1 and order the \
             streams yourself))"
        );
        let err = InterfaceError::Cuda {
            call: "cuEventCreate",
            code: 201,
        };
        assert_eq!(
            err.to_string(),
            "the CUDA driver's cuEventCreate failed with CUresult 201 (CUDA_ERROR_INVALID_CONTEXT)"
        );
        let err = InterfaceError::Cuda {
            call: "cuInit",
            code: 12345,
        };
        assert_eq!(
            err.to_string(),
            "the CUDA driver's cuInit failed with CUresult 12345"
        );
    }
}
