//! How an import asks and what it accepts: [`ImportOptions`] (the keywords
//! of `__dlpack__`), [`StreamMode`] and [`Protocols`].

use std::fmt;
use std::ops::BitOr;

use crate::{Device, protocol};

/// How to ask a producer for its tensor: the keywords of `__dlpack__`.
///
/// The default asks for a versioned DLPack 1.3 capsule, on the tensor's own
/// device, with no copy preference and the default stream.
///
/// ```
/// use pyo3_dlpack::{Device, ImportOptions};
///
/// // Ask the producer for a copy in host memory (a CUDA tensor, say).
/// let options = ImportOptions::new().copy(true).dl_device(Device::cpu());
/// assert_ne!(options, ImportOptions::new());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    pub(super) max_version: (u32, u32),
    pub(super) stream: Option<i64>,
    pub(super) dl_device: Option<Device>,
    pub(super) copy: Option<bool>,
    protocols: Protocols,
    stream_mode: StreamMode,
}

/// How an import of memory on a device with streams (CUDA, ROCm) is ordered
/// after the producer's work ([`ImportOptions::stream_mode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamMode {
    /// The default, and the safe one: the data is ready on the consumer's
    /// stream when the import returns. `__dlpack__(stream=…)` makes the
    /// producer order it (CUDA's legacy default stream, 1, unless
    /// [`ImportOptions::stream`] names another); through a producer's C
    /// exchange table (torch), an event recorded on the producer's current
    /// stream makes that same consumer stream wait (through the CUDA driver,
    /// loaded at run time; without it, and on ROCm, `__dlpack__` is used).
    #[default]
    Synchronize,
    /// No synchronisation: the tensor carries the producer's current work
    /// stream ([`PyTensor::stream`](crate::PyTensor::stream)), on which the
    /// caller launches its work, which is then ordered after the producer's
    /// (tvm-ffi's model; nothing blocks, so it is safe under CUDA graph
    /// capture). Work on any other stream must wait for that one first.
    /// Applies to producers with a C exchange table (a consumer stream named
    /// with [`ImportOptions::stream`] is then not waited on); others are
    /// synchronised.
    StreamOrdered,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            max_version: protocol::MAX_VERSION,
            stream: None,
            dl_device: None,
            copy: None,
            protocols: Protocols::ALL,
            stream_mode: StreamMode::Synchronize,
        }
    }
}

impl ImportOptions {
    /// The defaults: `max_version=(1, 3)`, default stream, no device or copy request.
    pub fn new() -> Self {
        Self::default()
    }

    /// The highest DLPack version to ask for. A major below 1 asks for the
    /// legacy capsule, which carries no flags, so the import is read-only
    /// (see [`PyTensor::is_read_only`](crate::PyTensor::is_read_only)).
    pub fn with_max_version(mut self, major: u32, minor: u32) -> Self {
        self.max_version = (major, minor);
        self
    }

    /// The consumer stream passed to CUDA and ROCm producers (a `cudaStream_t`
    /// as an integer, or 1/2 for CUDA's legacy/per-thread default streams; -1
    /// for no synchronisation). Without it, CUDA producers (device memory or
    /// managed memory) get 1 and ROCm
    /// producers 0: the legacy default stream. CPU producers never get a stream.
    ///
    /// # Safety
    ///
    /// `stream` is -1, 0, 1 or 2, or the handle of a live stream of the
    /// tensor's device that outlives the import's use of it: the producer
    /// (torch, CuPy) and this crate's ordering hand it to the CUDA or ROCm
    /// driver, which cannot tell a made-up or destroyed handle and crashes
    /// on one.
    pub unsafe fn stream(mut self, stream: i64) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Asks the producer for the tensor on this device (for example `Device::cpu()`).
    pub fn dl_device(mut self, device: Device) -> Self {
        self.dl_device = Some(device);
        self
    }

    /// `true`: the producer must copy; `false`: it must not.
    pub fn copy(mut self, copy: bool) -> Self {
        self.copy = Some(copy);
        self
    }

    /// Which protocols besides DLPack are accepted, for objects without
    /// `__dlpack__` (all by default): `__cuda_array_interface__`,
    /// `__array_interface__`, the buffer protocol, tried in that order.
    /// They are feature `non-dlpack-import` (on by default): without it none
    /// is compiled in, and this only narrows what an error message lists.
    pub fn protocols(mut self, protocols: Protocols) -> Self {
        self.protocols = protocols;
        self
    }

    /// The protocols besides DLPack that are accepted.
    pub(crate) fn accepted_protocols(&self) -> Protocols {
        self.protocols
    }

    /// How imports of memory with streams are ordered (see [`StreamMode`]).
    pub fn stream_mode(mut self, mode: StreamMode) -> Self {
        self.stream_mode = mode;
        self
    }

    /// The stream mode imports use.
    #[cfg(feature = "exchange-api")]
    pub(crate) fn selected_stream_mode(&self) -> StreamMode {
        self.stream_mode
    }

    /// The consumer stream given with [`stream`](Self::stream), if any.
    #[cfg(any(feature = "exchange-api", feature = "non-dlpack-import"))]
    pub(crate) fn consumer_stream(&self) -> Option<i64> {
        self.stream
    }

    /// Whether these are the defaults in all that matters to a producer
    /// (a versioned capsule, no device, copy or stream request).
    #[cfg(feature = "fast-paths")]
    pub(crate) fn is_plain(&self) -> bool {
        self.max_version.0 >= 1
            && self.stream.is_none()
            && self.dl_device.is_none()
            && self.copy.is_none()
    }

    /// Whether a producer's C exchange table may serve this import: as
    /// [`is_plain`](Self::is_plain), but a consumer stream may be named (a
    /// stream handle, or 1 or 2 for CUDA's default streams), which the
    /// import waits on itself. `-1` and `0` go through `__dlpack__`, whose
    /// producer applies the specification's rule to them.
    #[cfg(feature = "exchange-api")]
    pub(crate) fn allows_exchange(&self) -> bool {
        self.max_version.0 >= 1
            && self.stream.is_none_or(|s| s > 0)
            && self.dl_device.is_none()
            && self.copy.is_none()
    }

    /// The stream `__dlpack__` gets for a tensor on `device`, if any.
    pub(crate) fn stream_for(&self, device: Option<Device>) -> Option<i64> {
        crate::cuda::streams::stream_to_request(self.stream, device)
    }
}

/// Which protocols besides DLPack an import accepts (DLPack producers and
/// capsules always are). The default accepts all three. The imports
/// themselves are feature `non-dlpack-import` (on by default); without it
/// only DLPack producers and capsules are imported, whatever this says.
///
/// ```
/// use pyo3_dlpack::{ImportOptions, Protocols};
///
/// // Host memory from NumPy-like objects and buffers, but not CUDA arrays:
/// let options = ImportOptions::new().protocols(Protocols::ARRAY_INTERFACE | Protocols::BUFFER);
/// // DLPack only:
/// let strict = ImportOptions::new().protocols(Protocols::NONE);
/// # let _ = (options, strict);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Protocols(u8);

impl Protocols {
    /// None besides DLPack.
    pub const NONE: Self = Self(0);
    /// `__cuda_array_interface__`, versions 2 and 3.
    pub const CUDA_ARRAY_INTERFACE: Self = Self(1);
    /// `__array_interface__`, version 3.
    pub const ARRAY_INTERFACE: Self = Self(2);
    /// The buffer protocol (not in the limited API before CPython 3.11:
    /// abi3 builds for older versions skip it).
    pub const BUFFER: Self = Self(4);
    /// All three.
    pub const ALL: Self = Self(7);

    /// Whether every protocol of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The protocols of both.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl BitOr for Protocols {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}

impl Default for Protocols {
    fn default() -> Self {
        Self::ALL
    }
}

impl fmt::Debug for Protocols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Self::CUDA_ARRAY_INTERFACE, "CUDA_ARRAY_INTERFACE"),
            (Self::ARRAY_INTERFACE, "ARRAY_INTERFACE"),
            (Self::BUFFER, "BUFFER"),
        ];
        let set = names
            .iter()
            .filter(|(p, _)| self.contains(*p) && *p != Self::NONE);
        // Written one by one, not collected and joined.
        let mut empty = true;
        for (_, name) in set {
            if !empty {
                f.write_str(" | ")?;
            }
            f.write_str(name)?;
            empty = false;
        }
        if empty { f.write_str("NONE") } else { Ok(()) }
    }
}

impl Protocols {
    /// The accepted ways in, for the error when an object speaks none:
    /// `"__dlpack__, __array_interface__ or the buffer protocol"`.
    pub(crate) fn names(self) -> String {
        let compiled = cfg!(feature = "non-dlpack-import");
        let others = [
            (
                compiled && self.contains(Self::CUDA_ARRAY_INTERFACE),
                "__cuda_array_interface__",
            ),
            (
                compiled && self.contains(Self::ARRAY_INTERFACE),
                "__array_interface__",
            ),
            (
                compiled && self.contains(Self::BUFFER) && cfg!(any(not(Py_LIMITED_API), Py_3_11)),
                "the buffer protocol",
            ),
        ];
        // "a", "a or b", "a, b or c": written into one string, not collected
        // and joined.
        let mut left = others.iter().filter(|(accepted, _)| *accepted).count();
        let mut text = String::from("__dlpack__");
        for (_, name) in others.iter().filter(|(accepted, _)| *accepted) {
            left -= 1;
            text.push_str(if left == 0 { " or " } else { ", " });
            text.push_str(name);
        }
        text
    }
}
