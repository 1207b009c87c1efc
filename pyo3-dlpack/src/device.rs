//! Devices: where a tensor's memory lives (`DLDevice` in the C header).

use std::fmt;
use std::str::FromStr;

/// The kind of device a tensor lives on: `DLDeviceType` in the DLPack header.
///
/// This is an integer newtype, not a Rust `enum`: producers emit codes a
/// header does not know yet (JAX emitted `20` for TPU host memory before the
/// header named it), and a foreign value that a Rust `enum` cannot hold would
/// be undefined behaviour. Every code of DLPack 1.3 has an associated
/// constant, and so do the TPU codes added after it (dmlc/dlpack#188).
///
/// ```
/// use pyo3_dlpack::DeviceType;
///
/// assert_eq!(DeviceType::CUDA.code(), 2);
/// assert_eq!(DeviceType::TPU_HOST.code(), 20);
/// assert_eq!(DeviceType::from_code(99).name(), None); // representable, just unnamed
/// assert_eq!(DeviceType::ROCM.to_string(), "rocm");
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceType(i32);

/// Every named code, in header order: (code, short name used by `Display`/`FromStr`).
const DEVICE_NAMES: &[(DeviceType, &str)] = &[
    (DeviceType::CPU, "cpu"),
    (DeviceType::CUDA, "cuda"),
    (DeviceType::CUDA_HOST, "cuda_host"),
    (DeviceType::OPENCL, "opencl"),
    (DeviceType::VULKAN, "vulkan"),
    (DeviceType::METAL, "metal"),
    (DeviceType::VPI, "vpi"),
    (DeviceType::ROCM, "rocm"),
    (DeviceType::ROCM_HOST, "rocm_host"),
    (DeviceType::EXT_DEV, "ext_dev"),
    (DeviceType::CUDA_MANAGED, "cuda_managed"),
    (DeviceType::ONEAPI, "oneapi"),
    (DeviceType::WEBGPU, "webgpu"),
    (DeviceType::HEXAGON, "hexagon"),
    (DeviceType::MAIA, "maia"),
    (DeviceType::TRN, "trn"),
    (DeviceType::TPU, "tpu"),
    (DeviceType::TPU_HOST, "tpu_host"),
];

impl DeviceType {
    /// `kDLCPU`: host memory.
    pub const CPU: Self = Self(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: Self = Self(2);
    /// `kDLCUDAHost`: pinned host memory from `cudaMallocHost`.
    pub const CUDA_HOST: Self = Self(3);
    /// `kDLOpenCL`.
    pub const OPENCL: Self = Self(4);
    /// `kDLVulkan`.
    pub const VULKAN: Self = Self(7);
    /// `kDLMetal`.
    pub const METAL: Self = Self(8);
    /// `kDLVPI`: Verilog simulator buffer.
    pub const VPI: Self = Self(9);
    /// `kDLROCM`: ROCm/HIP device memory.
    pub const ROCM: Self = Self(10);
    /// `kDLROCMHost`: pinned host memory from `hipMallocHost`.
    pub const ROCM_HOST: Self = Self(11);
    /// `kDLExtDev`: reserved extension device.
    pub const EXT_DEV: Self = Self(12);
    /// `kDLCUDAManaged`: CUDA managed (unified) memory.
    pub const CUDA_MANAGED: Self = Self(13);
    /// `kDLOneAPI`: oneAPI unified shared memory.
    pub const ONEAPI: Self = Self(14);
    /// `kDLWebGPU`.
    pub const WEBGPU: Self = Self(15);
    /// `kDLHexagon`: Qualcomm Hexagon DSP.
    pub const HEXAGON: Self = Self(16);
    /// `kDLMAIA`: Microsoft MAIA.
    pub const MAIA: Self = Self(17);
    /// `kDLTrn`: AWS Trainium.
    pub const TRN: Self = Self(18);
    /// `kDLTPU`: TPU device memory (added after DLPack 1.3, dmlc/dlpack#188).
    pub const TPU: Self = Self(19);
    /// `kDLTPUHost`: pinned host memory of a TPU runtime, as `CUDA_HOST` is
    /// CUDA's (added after DLPack 1.3, dmlc/dlpack#188). JAX exports its
    /// TPU arrays in `pinned_host` memory with this code and the TPU's
    /// hardware id as `device_id`; it used the value before the header had it.
    pub const TPU_HOST: Self = Self(20);

    /// Wraps any code, named or not.
    pub const fn from_code(code: i32) -> Self {
        Self(code)
    }

    /// The raw `DLDeviceType` value.
    pub const fn code(self) -> i32 {
        self.0
    }

    /// The short name (`"cpu"`, `"cuda"`, …), or `None` for a code this
    /// crate does not know (outside DLPack 1.3 and the TPU codes after it).
    pub fn name(self) -> Option<&'static str> {
        DEVICE_NAMES
            .iter()
            .find(|(device_type, _)| *device_type == self)
            .map(|(_, name)| *name)
    }

    /// Whether the CPU can read and write this memory directly: plain host
    /// memory, pinned host memory (CUDA, ROCm and TPU) and CUDA managed memory.
    ///
    /// TPU pinned host memory (`tpu_host`) is host RAM that the TPU runtime
    /// registered for fast transfers, the mirror of `cuda_host` (the header's
    /// comment, dmlc/dlpack#188); JAX exports such an array only once it is
    /// ready when no stream is asked for, as DLPack's CPU rule wants. It names
    /// no stream this crate could wait on: it is read at once, as ROCm's.
    ///
    /// Never host memory: device memory of every kind, and Metal above all,
    /// whose `data` is an `id<MTLBuffer>` handle, not an address (the header
    /// since dmlc/dlpack#186): no import reads it, copies it to the host or
    /// offers it as a buffer.
    ///
    /// ```
    /// use pyo3_dlpack::DeviceType;
    /// assert!(DeviceType::CUDA_HOST.is_host_accessible());
    /// assert!(DeviceType::TPU_HOST.is_host_accessible());
    /// assert!(!DeviceType::CUDA.is_host_accessible());
    /// assert!(!DeviceType::TPU.is_host_accessible());
    /// assert!(!DeviceType::METAL.is_host_accessible());
    /// ```
    pub const fn is_host_accessible(self) -> bool {
        matches!(self.0, 1 | 3 | 11 | 13 | 20)
    }

    /// Whether a tensor's `data` on this device is a handle to a buffer
    /// object rather than an address: OpenCL (`cl_mem`), Vulkan, Metal
    /// (`id<MTLBuffer>`, DLPack after 1.3, with the offset in
    /// `byte_offset`) and WebGPU. No arithmetic may be done on such a
    /// `data`: the offset stays in `byte_offset`.
    pub(crate) const fn holds_handles(self) -> bool {
        matches!(self.0, 4 | 7 | 8 | 15)
    }

    /// Whether `__dlpack__`'s `stream` argument means something for this
    /// device: CUDA and ROCm (per the DLPack Python specification), and CUDA
    /// managed memory, which CUDA consumers such as CuPy import with a stream.
    pub const fn uses_streams(self) -> bool {
        matches!(self.0, 2 | 10 | 13)
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "device_type({})", self.0),
        }
    }
}

impl fmt::Debug for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "DeviceType::{}", name.to_ascii_uppercase()),
            None => write!(f, "DeviceType({})", self.0),
        }
    }
}

/// A device: its type and its index (`DLDevice` in the C header).
///
/// `Display` gives the PyTorch-like form `cpu:0`, `cuda:1`; `FromStr` accepts
/// that form and a bare type name (`"cuda"` means `cuda:0`).
///
/// ```
/// use pyo3_dlpack::Device;
///
/// assert_eq!(Device::cuda(1).to_string(), "cuda:1");
/// assert_eq!("cuda:1".parse::<Device>().unwrap(), Device::cuda(1));
/// assert_eq!("cpu".parse::<Device>().unwrap(), Device::cpu());
/// assert!(Device::cpu().is_host_accessible());
/// ```
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// The kind of device.
    pub device_type: DeviceType,
    /// The device index; 0 for plain CPU, pinned and managed memory.
    pub device_id: i32,
}

impl Device {
    /// A device of any type and index.
    pub const fn new(device_type: DeviceType, device_id: i32) -> Self {
        Self {
            device_type,
            device_id,
        }
    }

    /// Host memory, `cpu:0`.
    pub const fn cpu() -> Self {
        Self::new(DeviceType::CPU, 0)
    }

    /// CUDA device memory on GPU `id`.
    pub const fn cuda(id: i32) -> Self {
        Self::new(DeviceType::CUDA, id)
    }

    /// Pinned host memory allocated through CUDA (`cuda_host:0`).
    pub const fn cuda_host() -> Self {
        Self::new(DeviceType::CUDA_HOST, 0)
    }

    /// CUDA managed memory, associated with GPU `id`.
    pub const fn cuda_managed(id: i32) -> Self {
        Self::new(DeviceType::CUDA_MANAGED, id)
    }

    /// ROCm/HIP device memory on GPU `id`.
    pub const fn rocm(id: i32) -> Self {
        Self::new(DeviceType::ROCM, id)
    }

    /// Pinned host memory allocated through ROCm (`rocm_host:0`).
    pub const fn rocm_host() -> Self {
        Self::new(DeviceType::ROCM_HOST, 0)
    }

    /// Apple Metal memory on device `id`.
    pub const fn metal(id: i32) -> Self {
        Self::new(DeviceType::METAL, id)
    }

    /// TPU device memory on TPU `id`.
    pub const fn tpu(id: i32) -> Self {
        Self::new(DeviceType::TPU, id)
    }

    /// TPU pinned host memory of TPU `id` (`tpu_host:0`; JAX names the TPU
    /// whose runtime pinned it, where CUDA's pinned memory says 0).
    ///
    /// ```
    /// use pyo3_dlpack::Device;
    ///
    /// assert_eq!(Device::tpu_host(1).to_string(), "tpu_host:1");
    /// assert_eq!("tpu_host:1".parse::<Device>().unwrap(), Device::tpu_host(1));
    /// assert!(Device::tpu_host(1).is_host_accessible());
    /// assert!(!Device::tpu(0).is_host_accessible());
    /// ```
    pub const fn tpu_host(id: i32) -> Self {
        Self::new(DeviceType::TPU_HOST, id)
    }

    /// oneAPI unified shared memory on device `id`.
    pub const fn oneapi(id: i32) -> Self {
        Self::new(DeviceType::ONEAPI, id)
    }

    /// Vulkan memory on device `id`.
    pub const fn vulkan(id: i32) -> Self {
        Self::new(DeviceType::VULKAN, id)
    }

    /// OpenCL memory on device `id`.
    pub const fn opencl(id: i32) -> Self {
        Self::new(DeviceType::OPENCL, id)
    }

    /// See [`DeviceType::is_host_accessible`].
    pub const fn is_host_accessible(self) -> bool {
        self.device_type.is_host_accessible()
    }
}

impl Default for Device {
    /// `cpu:0`.
    fn default() -> Self {
        Self::cpu()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.device_type, self.device_id)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({self})")
    }
}

/// The error of `"…".parse::<Device>()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDeviceError {
    input: String,
}

impl fmt::Display for ParseDeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown device {:?}: expected `TYPE` or `TYPE:INDEX` with TYPE one of ",
            self.input,
        )?;
        // Written one by one, not collected and joined.
        for (i, (_, name)) in DEVICE_NAMES.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseDeviceError {}

impl FromStr for DeviceType {
    type Err = ParseDeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DEVICE_NAMES
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(device_type, _)| *device_type)
            .ok_or_else(|| ParseDeviceError { input: s.into() })
    }
}

impl FromStr for Device {
    type Err = ParseDeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = || ParseDeviceError { input: s.into() };
        let (type_name, id) = match s.split_once(':') {
            Some((type_name, id)) => (type_name, id.parse::<i32>().map_err(|_| error())?),
            None => (s, 0),
        };
        if id < 0 {
            return Err(error());
        }
        let device_type = type_name.parse::<DeviceType>().map_err(|_| error())?;
        Ok(Self::new(device_type, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_code_has_a_name_that_round_trips() {
        let codes: Vec<i32> = DEVICE_NAMES.iter().map(|(t, _)| t.code()).collect();
        assert_eq!(
            codes,
            [
                1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20
            ]
        );
        for (device_type, name) in DEVICE_NAMES {
            assert_eq!(device_type.to_string(), *name);
            assert_eq!(name.parse::<DeviceType>().unwrap(), *device_type);
        }
    }

    #[test]
    fn unknown_codes_are_values_not_errors() {
        // 21 is kDLAscend in the header after 1.3, not named here yet.
        for code in [5, 6, 21, 99, -1] {
            let unknown = DeviceType::from_code(code);
            assert_eq!(unknown.code(), code);
            assert_eq!(unknown.name(), None);
            assert_eq!(
                Device::new(unknown, 0).to_string(),
                format!("device_type({code}):0")
            );
            assert_eq!(format!("{unknown:?}"), format!("DeviceType({code})"));
            assert!(!unknown.is_host_accessible());
            assert!(!unknown.uses_streams());
        }
    }

    #[test]
    fn tpu_codes_after_1_3_are_named() {
        assert_eq!(DeviceType::from_code(19), DeviceType::TPU);
        assert_eq!(DeviceType::from_code(20), DeviceType::TPU_HOST);
        assert_eq!(Device::tpu(2).to_string(), "tpu:2");
        assert_eq!(Device::tpu_host(0).to_string(), "tpu_host:0");
        assert_eq!(
            format!("{:?}", DeviceType::TPU_HOST),
            "DeviceType::TPU_HOST"
        );
        assert_eq!("tpu:3".parse::<Device>().unwrap(), Device::tpu(3));
        assert_eq!("tpu_host".parse::<Device>().unwrap(), Device::tpu_host(0));
        assert!(!DeviceType::TPU.uses_streams());
        assert!(!DeviceType::TPU_HOST.uses_streams());
    }

    #[test]
    fn display_and_parse() {
        assert_eq!(Device::cpu().to_string(), "cpu:0");
        assert_eq!(Device::cuda(3).to_string(), "cuda:3");
        assert_eq!(format!("{:?}", Device::rocm(1)), "Device(rocm:1)");
        assert_eq!("rocm:2".parse::<Device>().unwrap(), Device::rocm(2));
        assert_eq!(
            "trn".parse::<Device>().unwrap().device_type,
            DeviceType::TRN
        );
        for bad in ["gpu", "cuda:", "cuda:-1", "cuda:x", ""] {
            let err = bad.parse::<Device>().unwrap_err();
            assert!(err.to_string().contains("expected `TYPE`"), "{err}");
        }
    }

    #[test]
    fn host_accessibility_and_streams() {
        let host: Vec<DeviceType> = DEVICE_NAMES
            .iter()
            .map(|(t, _)| *t)
            .filter(|t| t.is_host_accessible())
            .collect();
        assert_eq!(
            host,
            [
                DeviceType::CPU,
                DeviceType::CUDA_HOST,
                DeviceType::ROCM_HOST,
                DeviceType::CUDA_MANAGED,
                DeviceType::TPU_HOST
            ]
        );
        assert!(DeviceType::CUDA.uses_streams());
        assert!(DeviceType::ROCM.uses_streams());
        assert!(!DeviceType::CPU.uses_streams());
        assert!(DeviceType::CUDA_MANAGED.uses_streams());
        assert!(!DeviceType::CUDA_HOST.uses_streams());
    }
}
