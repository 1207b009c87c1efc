//! The crate's one error type, its structured details, and its one mapping
//! to Python exceptions.
//!
//! A [`DLPackError`] is dropped in this module only: the crate's code moves
//! one into an out-of-line function here (`into_pyerr`, `into_message`,
//! `discard`, `redescribed`, ...) rather than dropping it.
//! Its drop glue (about 1 KB, with its fields') is copied into every
//! codegen unit that drops one, so into every extension once per such unit.

mod contradiction;
mod detail;
mod interface;
mod user;

use std::fmt;

pub use contradiction::Contradiction;
pub use detail::{
    AdapterError, ArgumentError, CapsuleError, DimsKind, DtypeError, ExportError, LayoutDesc,
    LayoutError, SizeOverflow,
};
pub use interface::{Interface, InterfaceError};
pub use user::UserError;
pub(crate) use user::panic_error;

use pyo3::exceptions::{
    PyAttributeError, PyBaseException, PyBufferError, PyImportError, PyMemoryError,
    PyOverflowError, PyRecursionError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::types::{PyAnyMethods, PyType};
use pyo3::{Bound, Py, PyAny, PyErr, PyErrArguments, Python};

use crate::{DataType, Device, DeviceType};

/// Everything that can go wrong exchanging a tensor.
///
/// Each message names what was expected and what was found. Converted to a
/// Python exception ([`From<DLPackError> for PyErr`](#impl-From%3CDLPackError%3E-for-PyErr)),
/// the kind of failure picks the type:
///
/// | failure | Python exception |
/// |---|---|
/// | the tensor cannot be exported as asked ([`Export`](Self::Export), [`UnsupportedVersion`](Self::UnsupportedVersion)) | `BufferError` |
/// | another protocol's producer describes what DLPack cannot hold, or CUDA fails ([`Interface`](Self::Interface), but for [`InterfaceError::Malformed`] and [`InterfaceError::Version`]) | `BufferError` |
/// | the object speaks no accepted protocol, or returned the wrong type ([`NotDLPack`](Self::NotDLPack), [`NotATensor`](Self::NotATensor), [`NotACapsule`](Self::NotACapsule), [`NotADLPackTensor`](Self::NotADLPackTensor), [`CapsuleError::DeviceTuple`]) | `TypeError` |
/// | the tensor is not the one asked for: its dtype, rank, device, layout or writability ([`Dtype`](Self::Dtype), [`Ndim`](Self::Ndim), [`Device`](Self::Device), [`DeviceType`](Self::DeviceType), [`ReadOnly`](Self::ReadOnly), [`WritabilityUnknown`](Self::WritabilityUnknown), [`Immutable`](Self::Immutable), [`LayoutError::NotContiguous`], [`LayoutError::Misaligned`], [`LayoutError::Overlapping`], [`LayoutError::Shared`], [`LayoutError::NegativeEntries`], [`AdapterError::Inexpressible`], [`AdapterError::DtypeNotHeld`]), wherever it was found | `TypeError` |
/// | an integer argument outside its field's range ([`ArgumentError::OutOfRange`]) | `OverflowError` |
/// | a host copy the allocator refused ([`OutOfMemory`](Self::OutOfMemory)) | `MemoryError` |
/// | your own code's Python exception ([`User`](Self::User), from a `PyErr`) | that exception |
/// | a constraint the data or an argument fails (everything else, your own Rust errors included) | `ValueError` |
///
/// The same failure raises the same exception from every entry point
/// (`__dlpack__`, [`IntoDLPack::into_capsule`](crate::IntoDLPack::into_capsule),
/// [`DLPackTensor::new`](crate::DLPackTensor::new), imports, the derives and
/// the C exchange table). A value whose own description fails is a
/// `ValueError` wherever it is turned into a tensor; only when a consumer's
/// `__dlpack__(copy=True)` describes it again and that fails is the failure
/// the export's ([`ExportError::Description`], `BufferError`, wrapping the
/// description's error as its `source`).
///
/// Variants carry their details as fields (the types in [`error`](crate::error)),
/// so code can tell failures apart without parsing messages:
///
/// ```
/// use pyo3_dlpack::error::LayoutError;
/// use pyo3_dlpack::{DataType, DLPackError, TensorInfo};
///
/// let err = DLPackError::Dtype { expected: DataType::F32, found: DataType::I64 };
/// assert_eq!(err.to_string(), "expected a float32 tensor, got int64");
///
/// let data = vec![0u8; 4];
/// match TensorInfo::new(&data, [9usize]).unwrap_err() {
///     DLPackError::Layout(LayoutError::PastEnd { needed, available, .. }) => {
///         assert_eq!((needed, available), (9, 4));
///     }
///     other => panic!("{other}"),
/// }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DLPackError {
    /// The tensor has another element type than required.
    Dtype {
        /// The required type.
        expected: DataType,
        /// The tensor's type.
        found: DataType,
    },
    /// A tensor of untyped memory was described without a dtype.
    MissingDtype,
    /// The tensor has another number of dimensions than required.
    Ndim {
        /// The required rank.
        expected: usize,
        /// The tensor's rank.
        found: usize,
    },
    /// The tensor is on another device than required.
    Device {
        /// The required device.
        expected: Device,
        /// The tensor's device.
        found: Device,
    },
    /// The tensor is on another kind of device than required (any index of
    /// it would do: a derive's `#[dlpack(device = "cuda")]`).
    DeviceType {
        /// The required kind of device.
        expected: DeviceType,
        /// The tensor's device.
        found: Device,
    },
    /// Shape, strides and offset do not describe memory inside the buffer,
    /// or the layout is not the one required (for example, not contiguous).
    Layout(LayoutError),
    /// A host copy this crate was asked to make could not be allocated
    /// (the sizes fit; the allocator refused): `MemoryError`, as NumPy
    /// raises for an array it cannot allocate.
    OutOfMemory {
        /// The bytes asked for.
        bytes: usize,
    },
    /// Writing was required but the tensor is read-only.
    ReadOnly,
    /// Writing was required but the tensor came in a legacy capsule, which
    /// cannot say whether it may be written (see [`Writability::Unknown`](crate::Writability::Unknown)).
    WritabilityUnknown,
    /// Writing was required but the tensor is an array of a framework whose
    /// arrays are immutable (a `jax.Array`: its legacy capsule cannot say
    /// so, the array's type does).
    Immutable {
        /// The array's type, such as `jax.Array`.
        producer: &'static str,
        /// Its framework, such as `JAX`.
        framework: &'static str,
    },
    /// A size computation overflowed (shape × strides × itemsize).
    SizeOverflow(SizeOverflow),
    /// A dtype the DLPack header does not allow (both directions refuse the same ones).
    InvalidDtype(DtypeError),
    /// A versioned capsule of a major version this crate cannot read.
    UnsupportedVersion {
        /// Major version found.
        major: u32,
        /// Minor version found.
        minor: u32,
    },
    /// The capsule was already consumed by another importer.
    AlreadyConsumed,
    /// A capsule or a producer's struct is malformed.
    InvalidCapsule(CapsuleError),
    /// The tensor cannot be exported as the consumer asked (device, stream,
    /// copy, read-only through a legacy capsule, …).
    Export(ExportError),
    /// An argument has a value outside what the protocol allows.
    InvalidArgument(ArgumentError),
    /// The object has neither `__dlpack__` nor is a DLPack capsule.
    NotDLPack {
        /// Python type name of the object.
        type_name: String,
    },
    /// The object speaks none of the protocols the import accepts (DLPack,
    /// and those of [`Protocols`](crate::Protocols)).
    NotATensor {
        /// Python type name of the object.
        type_name: String,
        /// The accepted protocols, as the message lists them.
        accepted: String,
    },
    /// A producer of a protocol other than DLPack described something that
    /// cannot be imported, or the CUDA driver it needs failed.
    Interface(InterfaceError),
    /// A producer's `__dlpack__` returned something other than a capsule.
    NotACapsule {
        /// Python type name of the producer.
        producer: String,
        /// Python type name of what it returned.
        found: String,
    },
    /// `DLPackTensor`'s exchange API was called with another type of object.
    NotADLPackTensor {
        /// Python type name of the object.
        found: String,
    },
    /// Your own code failed (see [`UserError`]): a Python exception through
    /// `From<PyErr>` (raised as itself), or any error through
    /// [`DLPackError::user`] (raised as a `ValueError` with its message).
    User(UserError),
    /// An adapter to another crate's types (features `safetensors`,
    /// `nalgebra`, `image`) met a layout or a file it cannot take.
    Adapter(AdapterError),
    /// A description that contradicts its memory (a device, dtype or
    /// layout other than the memory's own), refused by
    /// [`TensorInfoBuilder::build`](crate::TensorInfoBuilder::build).
    Contradicts {
        /// The derived struct's field that said it, when a derive built
        /// the description.
        field: Option<&'static str>,
        /// What was said, and what the memory is.
        what: Contradiction,
    },
}

impl DLPackError {
    /// Your own error, for the methods of your [`IntoDLPack`](crate::IntoDLPack),
    /// [`TensorData`](crate::TensorData) or [`FromDLPack`](crate::FromDLPack)
    /// implementations: raised in Python as a `ValueError` with its message
    /// (a `PyErr` converts with `?` or `.into()` instead, and is raised as
    /// itself).
    ///
    /// ```
    /// use pyo3_dlpack::DLPackError;
    ///
    /// let err = DLPackError::user(std::io::Error::other("the weights file is truncated"));
    /// assert_eq!(err.to_string(), "the weights file is truncated");
    /// ```
    pub fn user(err: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self::User(UserError::rust(err.into()))
    }
}

impl DLPackError {
    /// This error, met when a copy's export described its value again: the
    /// export's ([`ExportError::Description`], wrapping it), but for the
    /// user's own error, which reaches Python as itself. Out of line, so the
    /// export's code drops no `DLPackError` (whose drop glue is copied into
    /// every codegen unit that drops one).
    #[cold]
    #[inline(never)]
    pub(crate) fn redescribed(self) -> Self {
        match self {
            Self::User(_) => self,
            err => Self::Export(ExportError::Description(Box::new(err))),
        }
    }

    /// This error, met making the exchange API allocator's tensor of
    /// `dtype`: the allocator's ([`ExportError::Allocation`], wrapping it).
    /// Out of line, so the allocator holds no `DLPackError` where an
    /// unwind would drop it (see the module's documentation).
    #[cfg(feature = "exchange-api")]
    #[cold]
    #[inline(never)]
    pub(crate) fn in_allocation(self, dtype: DataType) -> Self {
        Self::Export(ExportError::Allocation {
            dtype,
            source: Box::new(self),
        })
    }
}

impl From<PyErr> for DLPackError {
    fn from(err: PyErr) -> Self {
        Self::User(UserError::python(err))
    }
}

/// "a" or "an" before `word` as it is read aloud: dtype names (`an int8`)
/// and numbers (`an 8-dimensional`, `an 11-dimensional`).
pub(crate) fn article(word: &str) -> &'static str {
    let vowel_sound =
        word.starts_with("int") || word.starts_with('8') || word == "11" || word == "18";
    if vowel_sound { "an" } else { "a" }
}

/// A value after its [`article`]: `an int64`, `a 2`, `an 8`. One
/// non-generic formatter for every message that names a dtype or a rank
/// this way.
pub(crate) struct WithArticle<'a>(pub(crate) &'a dyn fmt::Display);

impl fmt::Display for WithArticle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = format!("{}", self.0);
        write!(f, "{} {word}", article(&word))
    }
}

/// A Python exception type this crate raises: those a [`DLPackError`]
/// becomes ([`DLPackError::python_kind`]), and those of the Python-facing
/// code's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PythonKind {
    Buffer,
    Type,
    Value,
    Overflow,
    Memory,
    #[cfg_attr(not(feature = "non-dlpack-export"), allow(dead_code))]
    Attribute,
    Import,
    Recursion,
    Runtime,
}

impl PythonKind {
    /// The exception's name, for the exchange API's `SetError` callback.
    #[cfg(any(feature = "exchange-api", test))]
    pub(crate) fn name(self) -> &'static std::ffi::CStr {
        match self {
            Self::Buffer => c"BufferError",
            Self::Type => c"TypeError",
            Self::Value => c"ValueError",
            Self::Overflow => c"OverflowError",
            Self::Memory => c"MemoryError",
            Self::Attribute => c"AttributeError",
            Self::Import => c"ImportError",
            Self::Recursion => c"RecursionError",
            Self::Runtime => c"RuntimeError",
        }
    }

    /// The exception's type object.
    fn type_object(self, py: Python<'_>) -> Bound<'_, PyType> {
        match self {
            Self::Buffer => py.get_type::<PyBufferError>(),
            Self::Type => py.get_type::<PyTypeError>(),
            Self::Value => py.get_type::<PyValueError>(),
            Self::Overflow => py.get_type::<PyOverflowError>(),
            Self::Memory => py.get_type::<PyMemoryError>(),
            Self::Attribute => py.get_type::<PyAttributeError>(),
            Self::Import => py.get_type::<PyImportError>(),
            Self::Recursion => py.get_type::<PyRecursionError>(),
            Self::Runtime => py.get_type::<PyRuntimeError>(),
        }
    }

    /// This exception with `message`, as `PyTypeError::new_err(message)`
    /// makes a `TypeError`: lazy, made when Python first looks at it, so
    /// that no interpreter is needed here (a user may convert on a thread
    /// that is not attached).
    ///
    /// The one constructor of this crate's exceptions with a message, and
    /// not generic, so that one lazy closure serves them all: each
    /// `PyErr::new::<E, String>` compiles a boxed closure and its vtable per
    /// exception type and per codegen unit into every extension.
    #[cold]
    #[inline(never)]
    pub(crate) fn new_err(self, message: String) -> PyErr {
        PyErr::new::<PyBaseException, _>(Exception {
            kind: self,
            message,
        })
    }
}

/// The arguments of [`PythonKind::new_err`]'s lazy error: the exception
/// itself, made when Python first looks at the error. The error's type is
/// `BaseException` for every kind (one closure type for all), and CPython
/// raises an instance of a subclass of the type it is given as it is, so
/// the error is this instance, of its own type, as `E::new_err` makes it.
struct Exception {
    kind: PythonKind,
    message: String,
}

impl PyErrArguments for Exception {
    fn arguments(self, py: Python<'_>) -> Py<PyAny> {
        match self.kind.type_object(py).call1((self.message,)) {
            Ok(exception) => exception.unbind(),
            // Made as CPython makes an exception from its arguments: a
            // failure (a `MemoryError`) is the error raised instead.
            Err(failure) => failure.into_value(py).into_any(),
        }
    }
}

impl DLPackError {
    /// The one rule from failure to Python exception (see the type's table).
    pub(crate) fn python_kind(&self) -> PythonKind {
        match self {
            Self::Export(_) | Self::UnsupportedVersion { .. } => PythonKind::Buffer,
            Self::NotDLPack { .. }
            | Self::NotATensor { .. }
            | Self::NotACapsule { .. }
            | Self::NotADLPackTensor { .. }
            | Self::InvalidCapsule(CapsuleError::DeviceTuple { .. }) => PythonKind::Type,
            // A tensor that is not the one asked for, wherever it was found
            // (a typed argument, a derive, a check in a function's body): a
            // `TypeError`, as rust-numpy raises for all of them.
            Self::Dtype { .. }
            | Self::Ndim { .. }
            | Self::Device { .. }
            | Self::DeviceType { .. }
            | Self::ReadOnly
            | Self::WritabilityUnknown
            | Self::Immutable { .. }
            | Self::Layout(
                LayoutError::NotContiguous { .. }
                | LayoutError::Misaligned { .. }
                | LayoutError::Overlapping { .. }
                | LayoutError::Shared
                | LayoutError::NegativeEntries { .. },
            )
            | Self::Adapter(
                AdapterError::Inexpressible { .. } | AdapterError::DtypeNotHeld { .. },
            ) => PythonKind::Type,
            Self::Interface(InterfaceError::Malformed { .. } | InterfaceError::Version { .. }) => {
                PythonKind::Value
            }
            Self::Interface(_) => PythonKind::Buffer,
            // As NumPy's `__dlpack__` and Python's own conversions raise; not
            // a `TypeError`, which consumers read as "old producer".
            Self::InvalidArgument(ArgumentError::OutOfRange { .. }) => PythonKind::Overflow,
            Self::OutOfMemory { .. } => PythonKind::Memory,
            _ => PythonKind::Value,
        }
    }
}

impl fmt::Display for DLPackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dtype { expected, found } => {
                write!(f, "expected {} tensor, got {found}", WithArticle(expected))
            }
            Self::MissingDtype => f.write_str(
                "the tensor's memory has no element type: give a dtype \
                 (TensorInfoBuilder::dtype, or a #[dlpack(dtype)] field)",
            ),
            Self::Ndim { expected, found } => {
                write!(
                    f,
                    "expected {}-dimensional tensor, got {}",
                    WithArticle(expected),
                    detail::dimensions(*found)
                )
            }
            Self::Device { expected, found } => {
                write!(f, "expected a tensor on {expected}, got one on {found}")
            }
            Self::DeviceType { expected, found } => {
                write!(f, "expected a tensor on {expected}, got one on {found}")
            }
            Self::Layout(err) => err.fmt(f),
            Self::InvalidCapsule(err) => err.fmt(f),
            Self::Export(err) => err.fmt(f),
            Self::InvalidDtype(err) => err.fmt(f),
            Self::OutOfMemory { bytes } => {
                write!(
                    f,
                    "cannot allocate {bytes} bytes for a host copy of the tensor"
                )
            }
            Self::ReadOnly => f.write_str("expected a writable tensor, got a read-only one"),
            Self::WritabilityUnknown => f.write_str(
                "expected a writable tensor, got one from a legacy DLPack capsule, which cannot \
                 say whether it may be written (a producer of DLPack 1.0 or later can)",
            ),
            Self::Immutable {
                producer,
                framework,
            } => write!(
                f,
                "expected a writable tensor, got a {producer}, which cannot be written: \
                 {framework} arrays are immutable (return a new array instead)"
            ),
            Self::SizeOverflow(what) => write!(f, "size overflow: {what}"),
            Self::UnsupportedVersion { major, minor } => write!(
                f,
                "unsupported DLPack version {major}.{minor}: expected major version 1"
            ),
            Self::AlreadyConsumed => f.write_str(
                "the DLPack capsule was already consumed; a capsule can be imported once",
            ),
            Self::InvalidArgument(err) => err.fmt(f),
            Self::NotDLPack { type_name } => write!(
                f,
                "expected an object with __dlpack__ or a DLPack capsule, got {type_name}"
            ),
            Self::NotATensor {
                type_name,
                accepted,
            } => write!(
                f,
                "expected an object with {accepted}, or a DLPack capsule, got {type_name}"
            ),
            Self::Interface(err) => err.fmt(f),
            Self::NotACapsule { producer, found } => write!(
                f,
                "{producer}.__dlpack__() returned {found}, expected a DLPack capsule"
            ),
            Self::NotADLPackTensor { found } => {
                write!(f, "the DLPackTensor exchange API got a {found}")
            }
            Self::User(err) => err.fmt(f),
            Self::Adapter(err) => err.fmt(f),
            Self::Contradicts { field, what } => contradiction::fmt(*field, what, f),
        }
    }
}

impl std::error::Error for DLPackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Export(
                ExportError::Description(source) | ExportError::Allocation { source, .. },
            ) => Some(&**source),
            Self::User(err) => err.source(),
            _ => None,
        }
    }
}

impl From<LayoutError> for DLPackError {
    fn from(err: LayoutError) -> Self {
        Self::Layout(err)
    }
}

impl From<SizeOverflow> for DLPackError {
    fn from(err: SizeOverflow) -> Self {
        Self::SizeOverflow(err)
    }
}

impl From<DtypeError> for DLPackError {
    fn from(err: DtypeError) -> Self {
        Self::InvalidDtype(err)
    }
}

impl From<CapsuleError> for DLPackError {
    fn from(err: CapsuleError) -> Self {
        Self::InvalidCapsule(err)
    }
}

impl From<ExportError> for DLPackError {
    fn from(err: ExportError) -> Self {
        Self::Export(err)
    }
}

impl From<ArgumentError> for DLPackError {
    fn from(err: ArgumentError) -> Self {
        Self::InvalidArgument(err)
    }
}

impl From<AdapterError> for DLPackError {
    fn from(err: AdapterError) -> Self {
        Self::Adapter(err)
    }
}

/// The one conversion every entry point uses (Python methods, the exchange
/// table, derives), so the same failure raises the same exception everywhere.
impl From<InterfaceError> for DLPackError {
    fn from(err: InterfaceError) -> Self {
        Self::Interface(err)
    }
}

impl From<DLPackError> for PyErr {
    fn from(err: DLPackError) -> Self {
        err.into_pyerr()
    }
}

impl DLPackError {
    /// The kind of Python exception this error becomes, and its message,
    /// for the exchange API's `SetError` callback (the error dropped here:
    /// see the module's documentation).
    #[cfg(feature = "exchange-api")]
    #[inline(never)]
    pub(crate) fn into_report(self) -> (PythonKind, String) {
        (self.python_kind(), self.into_message())
    }

    /// This error's message (its `Display`), the error dropped here (see
    /// the module's documentation).
    #[cfg(any(feature = "exchange-api", feature = "pickle"))]
    #[inline(never)]
    pub(crate) fn into_message(self) -> String {
        format!("{self}")
    }

    /// Drops this error here (see the module's documentation), for code
    /// that only needs to know that something failed:
    /// `result.map_err(DLPackError::discard).ok()`.
    #[cfg(feature = "pickle")]
    #[inline(never)]
    pub(crate) fn discard(self) {}

    /// The Python exception this error becomes (see the type's table).
    ///
    /// Out of line in this module, where the error is dropped (see the
    /// module's documentation): the `From` impl above is compiled beside
    /// PyO3's own code for `PyErr`, away from this module.
    #[inline(never)]
    fn into_pyerr(self) -> PyErr {
        if let Self::User(err) = &self {
            return err.to_pyerr();
        }
        // Lazy, needing no interpreter until Python looks at it: a user
        // may convert on a thread that is not attached.
        self.python_kind().new_err(format!("{self}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::Python;

    /// Every variant's name, by an exhaustive `match`: a new variant fails to
    /// compile here until it is named, and then until the guide's errors
    /// chapter lists it (its doc test checks the exception it becomes).
    fn variant_name(err: &DLPackError) -> &'static str {
        match err {
            DLPackError::Dtype { .. } => "Dtype",
            DLPackError::MissingDtype => "MissingDtype",
            DLPackError::Ndim { .. } => "Ndim",
            DLPackError::Device { .. } => "Device",
            DLPackError::DeviceType { .. } => "DeviceType",
            DLPackError::Layout(_) => "Layout",
            DLPackError::OutOfMemory { .. } => "OutOfMemory",
            DLPackError::ReadOnly => "ReadOnly",
            DLPackError::WritabilityUnknown => "WritabilityUnknown",
            DLPackError::Immutable { .. } => "Immutable",
            DLPackError::SizeOverflow(_) => "SizeOverflow",
            DLPackError::InvalidDtype(_) => "InvalidDtype",
            DLPackError::UnsupportedVersion { .. } => "UnsupportedVersion",
            DLPackError::AlreadyConsumed => "AlreadyConsumed",
            DLPackError::InvalidCapsule(_) => "InvalidCapsule",
            DLPackError::Export(_) => "Export",
            DLPackError::InvalidArgument(_) => "InvalidArgument",
            DLPackError::NotDLPack { .. } => "NotDLPack",
            DLPackError::NotATensor { .. } => "NotATensor",
            DLPackError::Interface(_) => "Interface",
            DLPackError::NotACapsule { .. } => "NotACapsule",
            DLPackError::NotADLPackTensor { .. } => "NotADLPackTensor",
            DLPackError::User(_) => "User",
            DLPackError::Adapter(_) => "Adapter",
            DLPackError::Contradicts { .. } => "Contradicts",
        }
    }

    #[test]
    fn the_errors_chapter_lists_every_variant() {
        let chapter = include_str!("../../guide/errors.md");
        let named = [
            DLPackError::Dtype {
                expected: DataType::F32,
                found: DataType::I64,
            },
            DLPackError::MissingDtype,
            DLPackError::Ndim {
                expected: 1,
                found: 2,
            },
            DLPackError::Device {
                expected: Device::cpu(),
                found: Device::cuda(0),
            },
            DLPackError::DeviceType {
                expected: DeviceType::CUDA,
                found: Device::cpu(),
            },
            DLPackError::Layout(LayoutError::Shared),
            DLPackError::OutOfMemory { bytes: 1 },
            DLPackError::ReadOnly,
            DLPackError::WritabilityUnknown,
            DLPackError::Immutable {
                producer: "jax.Array",
                framework: "JAX",
            },
            DLPackError::SizeOverflow(SizeOverflow::Bytes { bytes: 3 }),
            DLPackError::InvalidDtype(DtypeError::Lanes {
                dtype: DataType::F32,
            }),
            DLPackError::UnsupportedVersion { major: 2, minor: 0 },
            DLPackError::AlreadyConsumed,
            DLPackError::InvalidCapsule(CapsuleError::NullPointer),
            DLPackError::Export(ExportError::ReadOnlyLegacy),
            DLPackError::InvalidArgument(ArgumentError::NotInteger {
                name: "stream",
                found: String::new(),
            }),
            DLPackError::NotDLPack {
                type_name: String::new(),
            },
            DLPackError::NotATensor {
                type_name: String::new(),
                accepted: String::new(),
            },
            DLPackError::Interface(InterfaceError::BufferUnavailable),
            DLPackError::NotACapsule {
                producer: String::new(),
                found: String::new(),
            },
            DLPackError::NotADLPackTensor {
                found: String::new(),
            },
            DLPackError::user(std::io::Error::other("x")),
            DLPackError::Adapter(AdapterError::TensorNotFound {
                name: String::new(),
                available: Vec::new(),
            }),
            DLPackError::Contradicts {
                field: None,
                what: Contradiction::ByteOffset {
                    memory: 0,
                    given: 1,
                },
            },
        ];
        let mut names: Vec<_> = named.iter().map(variant_name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), named.len(), "one value of each variant");
        for name in names {
            // A variant built in the chapter's doc test, or by its constructor
            // (`DLPackError::user(…)` makes `User`).
            let listed = chapter.contains(&format!("DLPackError::{name}"))
                || chapter.contains(&format!("DLPackError::{}(", name.to_lowercase()));
            assert!(listed, "guide/errors.md does not list DLPackError::{name}");
        }
    }

    #[test]
    fn messages_name_expected_and_found() {
        let cases = [
            (
                DLPackError::Ndim {
                    expected: 2,
                    found: 3,
                },
                "expected a 2-dimensional tensor, got 3 dimensions",
            ),
            (
                DLPackError::Ndim {
                    expected: 2,
                    found: 1,
                },
                "expected a 2-dimensional tensor, got 1 dimension",
            ),
            (
                DLPackError::Device {
                    expected: Device::cpu(),
                    found: Device::cuda(1),
                },
                "expected a tensor on cpu:0, got one on cuda:1",
            ),
            (
                DLPackError::Ndim {
                    expected: 8,
                    found: 1,
                },
                "expected an 8-dimensional tensor, got 1 dimension",
            ),
            (
                DLPackError::Dtype {
                    expected: DataType::I64,
                    found: DataType::U8,
                },
                "expected an int64 tensor, got uint8",
            ),
            (
                DLPackError::Dtype {
                    expected: DataType::U8,
                    found: DataType::I64,
                },
                "expected a uint8 tensor, got int64",
            ),
            (
                DLPackError::DeviceType {
                    expected: DeviceType::CUDA,
                    found: Device::cpu(),
                },
                "expected a tensor on cuda, got one on cpu:0",
            ),
            (
                DLPackError::Layout(LayoutError::NegativeEntries {
                    kind: DimsKind::Strides,
                    entries: vec![3, -1],
                }),
                "the strides [3, -1] have negative entries, which a usize field cannot hold",
            ),
            (
                DLPackError::UnsupportedVersion { major: 2, minor: 0 },
                "unsupported DLPack version 2.0: expected major version 1",
            ),
            (
                DLPackError::NotDLPack {
                    type_name: "list".into(),
                },
                "expected an object with __dlpack__ or a DLPack capsule, got list",
            ),
        ];
        for (err, message) in cases {
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn each_kind_raises_its_named_exception_with_the_message() {
        use pyo3::types::PyAnyMethods;
        let kinds = [
            PythonKind::Buffer,
            PythonKind::Type,
            PythonKind::Value,
            PythonKind::Overflow,
            PythonKind::Memory,
            PythonKind::Attribute,
            PythonKind::Import,
            PythonKind::Recursion,
            PythonKind::Runtime,
        ];
        Python::attach(|py| {
            let builtins = py.import("builtins").unwrap();
            for kind in kinds {
                let name = kind.name().to_str().unwrap();
                let err = kind.new_err(format!("from {name}"));
                // The exact builtin type the exchange API names, not a subclass.
                assert!(
                    err.get_type(py).is(builtins.getattr(name).unwrap()),
                    "{name}"
                );
                assert_eq!(err.value(py).to_string(), format!("from {name}"));
            }
        });
    }

    /// A user's `?` may convert on a thread that is not attached while
    /// another thread holds the interpreter (and waits for it): the
    /// conversion must not need the interpreter. Made eagerly (attaching),
    /// it waited for this test's thread, which holds it until it gives up.
    #[test]
    fn a_conversion_needs_no_interpreter() {
        Python::attach(|_py| {
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let err = PyErr::from(DLPackError::ReadOnly);
                drop(err);
                done.send(()).expect("the test waits");
            });
            let waited = finished.recv_timeout(std::time::Duration::from_secs(10));
            assert!(waited.is_ok(), "the conversion waited for the interpreter");
        });
    }

    #[test]
    fn python_exception_types() {
        Python::attach(|py| {
            let buffer: PyErr = DLPackError::Export(ExportError::ReadOnlyLegacy).into();
            assert!(buffer.is_instance_of::<PyBufferError>(py));
            let version: PyErr = DLPackError::UnsupportedVersion { major: 2, minor: 0 }.into();
            assert!(version.is_instance_of::<PyBufferError>(py));
            let type_error: PyErr = DLPackError::NotDLPack {
                type_name: "int".into(),
            }
            .into();
            assert!(type_error.is_instance_of::<PyTypeError>(py));
            let unfit: PyErr = DLPackError::ReadOnly.into();
            assert!(unfit.is_instance_of::<PyTypeError>(py));
            assert_eq!(
                unfit.value(py).to_string(),
                "expected a writable tensor, got a read-only one"
            );
            let shared: PyErr = DLPackError::Layout(LayoutError::Shared).into();
            assert!(shared.is_instance_of::<PyTypeError>(py));
            let value: PyErr = DLPackError::Layout(LayoutError::Borrowed).into();
            assert!(value.is_instance_of::<PyValueError>(py));
        });
    }
}
