//! What a consumer asks of an export, and what the export will do: the
//! pure plan, apart from the parsing of Python arguments (`method.rs`).
//!
//! Exports that cannot be done are [`ExportError`]s (`BufferError`), never
//! a `TypeError`, which NumPy and torch read as "old producer" and silently
//! retry without the keywords (hiding the real problem).

use crate::error::ExportError;
use crate::export::info::TensorInfo;
use crate::protocol;
use crate::{DLPackError, Device, DeviceType, Writability};

/// Which managed struct a capsule carries.
///
/// `__dlpack__` picks it from the consumer's `max_version` (a major of at
/// least 1: versioned); a bare capsule is made in the one asked for:
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{CapsuleFormat, IntoDLPack};
///
/// /// Python: `torch.utils.dlpack.from_dlpack(ones(3))`, which takes capsules.
/// #[pyfunction]
/// fn ones(py: Python<'_>, n: usize) -> PyResult<Bound<'_, pyo3::types::PyCapsule>> {
///     vec![1.0f32; n].into_capsule(py, CapsuleFormat::Versioned)
/// }
/// # Python::attach(|py| assert!(ones(py, 3).is_ok()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CapsuleFormat {
    /// `DLManagedTensor` in a `"dltensor"` capsule: what consumers that send no
    /// `max_version` (NumPy < 2.1, JAX ≤ 0.11, TensorFlow) read. It cannot
    /// carry flags, so NumPy makes such imports read-only.
    Legacy,
    /// `DLManagedTensorVersioned` (version 1.3) in a `"dltensor_versioned"`
    /// capsule, with the read-only and copied flags.
    Versioned,
}

impl CapsuleFormat {
    /// The format for a consumer's `max_version`: versioned when its major is
    /// at least 1 (we then export 1.3, the newest 1.x, which every 1.x reader
    /// accepts), legacy otherwise.
    pub(crate) fn for_max_version(max_version: Option<(u32, u32)>) -> Self {
        match max_version {
            Some((major, _)) if major >= 1 => Self::Versioned,
            _ => Self::Legacy,
        }
    }
}

/// The keywords of one `__dlpack__` call, parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExportRequest {
    pub(crate) max_version: Option<(u32, u32)>,
    pub(crate) stream: Option<i64>,
    pub(crate) dl_device: Option<Device>,
    pub(crate) copy: Option<bool>,
}

/// What an export will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportPlan {
    pub(crate) format: CapsuleFormat,
    /// Copy the elements into a fresh host buffer (`IS_COPIED`).
    pub(crate) copy: bool,
    /// The device the capsule reports.
    pub(crate) device: Device,
    /// Make the data safe to use on this consumer stream first (CUDA/ROCm).
    pub(crate) sync_stream: Option<i64>,
    /// Read-only in the capsule's flags.
    pub(crate) read_only: bool,
}

impl ExportPlan {
    /// The versioned struct's flags.
    pub(crate) fn flags(&self) -> u64 {
        protocol::flags(self.read_only, self.copy)
    }
}

impl ExportRequest {
    /// The request of a bare capsule of `format` (no stream, device or copy).
    pub(crate) fn of_format(format: CapsuleFormat) -> Self {
        Self {
            max_version: (format == CapsuleFormat::Versioned).then_some(protocol::MAX_VERSION),
            ..Self::default()
        }
    }

    /// Decides how to export `info` for this request, or why it cannot be done.
    #[inline(always)]
    pub(crate) fn plan(&self, info: &TensorInfo<'_>) -> Result<ExportPlan, DLPackError> {
        let format = CapsuleFormat::for_max_version(self.max_version);
        let source = info.device();
        let device = self.target_device(source)?;
        let sync_stream = crate::cuda::streams::stream_to_sync(self.stream, device)?;
        // CUDA device memory asked for on the CPU is copied there (unless
        // `copy=False`, refused by `target_device`).
        let to_host = device != source && !source.is_host_accessible();
        let copy = self.copy == Some(true) || to_host;
        if copy {
            check_copyable(info, self.dl_device)?;
        }
        // A copy is ordinary (pageable) host memory, whatever the source was.
        let device = if copy { Device::cpu() } else { device };
        // A copy is this export's own, writable memory.
        let writability = if copy {
            Writability::Writable
        } else {
            info.writability()
        };
        if format == CapsuleFormat::Legacy && !writability.allows_legacy_export() {
            return Err(ExportError::ReadOnlyLegacy.into());
        }
        // Versioned: an unknown writability is stated as read-only.
        let read_only = !writability.allows_writes();
        Ok(ExportPlan {
            format,
            copy,
            device,
            sync_stream,
            read_only,
        })
    }

    /// `dl_device` must be the tensor's device, or the CPU for memory the CPU
    /// can reach (pinned and managed memory, in place) or CUDA device memory
    /// (a host copy, unless `copy=False`): no other copy across devices.
    #[inline]
    fn target_device(&self, source: Device) -> Result<Device, DLPackError> {
        match self.dl_device {
            None => Ok(source),
            Some(target) if target == source => Ok(target),
            Some(target) if target == Device::cpu() && source.is_host_accessible() => Ok(target),
            Some(target)
                if target == Device::cpu()
                    && source.device_type == DeviceType::CUDA
                    && self.copy != Some(false) =>
            {
                Ok(target)
            }
            Some(target) => Err(ExportError::CrossDevice { source, target }.into()),
        }
    }
}

/// A copy reads the elements into a new CPU buffer: the source must be
/// memory of checked extent on the host, or on a CUDA device with the copy
/// asked for on the CPU (`dl_device=(kDLCPU, 0)`), and the target the CPU.
fn check_copyable(info: &TensorInfo<'_>, dl_device: Option<Device>) -> Result<(), DLPackError> {
    let source = info.device();
    let from_cuda = source.device_type == DeviceType::CUDA && dl_device == Some(Device::cpu());
    if !source.is_host_accessible() && !from_cuda {
        return Err(ExportError::CopyNeedsHost { source }.into());
    }
    if let Some(target) = dl_device.filter(|&d| d != Device::cpu()) {
        return Err(ExportError::CopyTarget { target }.into());
    }
    if !info.is_bounds_checked() {
        return Err(ExportError::CopyUnknownLength.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(
        request: ExportRequest,
        device: Device,
        read_only: bool,
    ) -> Result<ExportPlan, DLPackError> {
        let data = [0.0f32; 4];
        // SAFETY: `data` outlives the buffer; nothing writes it.
        let raw = unsafe { crate::RawBuffer::new(data.as_ptr().cast_mut().cast(), 16, device) };
        let info = TensorInfo::builder(&raw)
            .dtype(crate::DataType::F32)
            .read_only(read_only)
            .build()
            .unwrap();
        request.plan(&info)
    }

    fn versioned() -> ExportRequest {
        ExportRequest {
            max_version: Some((1, 3)),
            ..Default::default()
        }
    }

    #[test]
    fn a_copy_needs_memory_of_known_length() {
        struct Unmeasured(Vec<f32>);
        // SAFETY: the Vec's buffer, which does not move with the value, is
        // its memory; no length is reported, so none is promised.
        unsafe impl crate::TensorData for Unmeasured {
            fn data_ptr(&self) -> *mut std::ffi::c_void {
                self.0.as_ptr().cast_mut().cast()
            }
            fn byte_len(&self) -> Option<usize> {
                None
            }
        }
        let data = Unmeasured(vec![0.0; 4]);
        let info = TensorInfo::builder(&data)
            .dtype(crate::DataType::F32)
            .shape([4usize])
            .build()
            .unwrap();
        let request = ExportRequest {
            copy: Some(true),
            ..versioned()
        };
        assert_eq!(
            request.plan(&info).unwrap_err().to_string(),
            "copy=True cannot copy this tensor: the length of its memory is unknown \
             (raw memory exported without one); import it without copy=True"
        );
    }

    #[test]
    fn cpu_streams() {
        let ok = |stream| {
            plan(
                ExportRequest {
                    stream,
                    ..versioned()
                },
                Device::cpu(),
                false,
            )
        };
        assert_eq!(ok(None).unwrap().sync_stream, None);
        assert_eq!(ok(Some(-1)).unwrap().sync_stream, None);
        let err = ok(Some(1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "stream=1 is not valid for a tensor on cpu:0: only None (or -1) is accepted on devices without streams"
        );
        assert!(matches!(ok(Some(-2)), Err(DLPackError::Export(_))));
    }

    #[test]
    fn cuda_and_rocm_streams_follow_the_spec_table() {
        let cuda = |stream| {
            plan(
                ExportRequest {
                    stream,
                    ..versioned()
                },
                Device::cuda(0),
                false,
            )
        };
        assert_eq!(
            cuda(None).unwrap().sync_stream,
            Some(1),
            "None means the legacy default stream"
        );
        assert_eq!(cuda(Some(-1)).unwrap().sync_stream, None);
        assert!(
            cuda(Some(0))
                .unwrap_err()
                .to_string()
                .contains("0 is ambiguous on CUDA")
        );
        assert_eq!(cuda(Some(2)).unwrap().sync_stream, Some(2));
        assert_eq!(
            cuda(Some(0x7f00_1234)).unwrap().sync_stream,
            Some(0x7f00_1234)
        );
        let rocm = |stream| {
            plan(
                ExportRequest {
                    stream,
                    ..versioned()
                },
                Device::rocm(0),
                false,
            )
        };
        assert_eq!(rocm(None).unwrap().sync_stream, Some(0));
        assert_eq!(rocm(Some(0)).unwrap().sync_stream, Some(0));
        assert!(rocm(Some(1)).is_err());
        assert!(rocm(Some(2)).is_err());
        // Managed memory is a CUDA allocation: CuPy passes stream pointers for it.
        let managed = |stream| {
            plan(
                ExportRequest {
                    stream,
                    ..versioned()
                },
                Device::cuda_managed(0),
                false,
            )
        };
        assert_eq!(managed(Some(0x7f00)).unwrap().sync_stream, Some(0x7f00));
        assert!(managed(Some(0)).is_err());
    }

    #[test]
    fn devices() {
        let to = |dl_device, source| {
            plan(
                ExportRequest {
                    dl_device,
                    ..versioned()
                },
                source,
                false,
            )
        };
        assert_eq!(
            to(Some(Device::cpu()), Device::cpu()).unwrap().device,
            Device::cpu()
        );
        assert_eq!(to(None, Device::cuda(1)).unwrap().device, Device::cuda(1));
        assert_eq!(
            to(Some(Device::cuda(1)), Device::cuda(1)).unwrap().device,
            Device::cuda(1)
        );
        // Pinned memory is readable from the CPU: exported as cpu:0.
        assert_eq!(
            to(Some(Device::cpu()), Device::cuda_host()).unwrap().device,
            Device::cpu()
        );
        let err = to(Some(Device::cuda(0)), Device::cpu()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot export a tensor on cpu:0 to cuda:0: pyo3-dlpack copies across devices \
             only from CUDA device memory to the CPU, and not with copy=False"
        );
        // CUDA device memory asked for on the CPU: a host copy, copy=None or True.
        for copy in [None, Some(true)] {
            let request = ExportRequest {
                dl_device: Some(Device::cpu()),
                copy,
                ..versioned()
            };
            let planned = plan(request, Device::cuda(0), false).unwrap();
            assert!(planned.copy && planned.device == Device::cpu() && !planned.read_only);
        }
        let no_copy = ExportRequest {
            dl_device: Some(Device::cpu()),
            copy: Some(false),
            ..versioned()
        };
        assert!(plan(no_copy, Device::cuda(0), false).is_err());
        // ROCm and other devices have no host copy; nor does any device to another.
        assert!(to(Some(Device::cpu()), Device::new(DeviceType::ROCM, 0)).is_err());
        assert!(to(Some(Device::cuda(1)), Device::cuda(0)).is_err());
    }

    #[test]
    fn copy_and_read_only() {
        let copy = |copy, device, format: Option<(u32, u32)>, read_only| {
            plan(
                ExportRequest {
                    copy,
                    max_version: format,
                    ..Default::default()
                },
                device,
                read_only,
            )
        };
        let p = copy(Some(true), Device::cpu(), Some((1, 0)), false).unwrap();
        assert!(p.copy);
        // Copies are plain host memory: pinned sources are not copied into pinned memory.
        assert_eq!(
            copy(Some(true), Device::cuda_host(), Some((1, 0)), false)
                .unwrap()
                .device,
            Device::cpu()
        );
        assert_eq!(p.flags(), crate::ffi::DLPACK_FLAG_BITMASK_IS_COPIED);
        assert!(
            !copy(Some(false), Device::cpu(), Some((1, 0)), false)
                .unwrap()
                .copy
        );
        assert!(copy(Some(true), Device::cuda(0), Some((1, 0)), false).is_err());
        // Read-only: flagged when versioned, refused when legacy, lifted by a copy.
        assert_eq!(
            copy(None, Device::cpu(), Some((1, 0)), true)
                .unwrap()
                .flags(),
            crate::ffi::DLPACK_FLAG_BITMASK_READ_ONLY
        );
        let err = copy(None, Device::cpu(), None, true).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the tensor is read-only and the legacy"),
            "{err}"
        );
        let copied = copy(Some(true), Device::cpu(), None, true).unwrap();
        assert_eq!(
            (copied.format, copied.read_only),
            (CapsuleFormat::Legacy, false)
        );
    }

    /// Memory of unknown writability (imported from a legacy capsule).
    struct Unknown([f32; 4]);

    // SAFETY: an owned array, read through `&self` only; reported of unknown
    // writability, and read-only as `is_read_only` must then say.
    unsafe impl crate::TensorData for Unknown {
        fn data_ptr(&self) -> *mut std::ffi::c_void {
            self.0.as_ptr().cast_mut().cast()
        }
        fn byte_len(&self) -> Option<usize> {
            Some(16)
        }
        fn dtype(&self) -> Option<crate::DataType> {
            Some(crate::DataType::F32)
        }
        fn is_read_only(&self) -> bool {
            true
        }
        fn writability(&self) -> Writability {
            Writability::Unknown
        }
    }

    #[test]
    fn unknown_writability_is_handed_on() {
        let data = Unknown([0.0; 4]);
        let info = TensorInfo::builder(&data).build().unwrap();
        assert_eq!(info.writability(), Writability::Unknown);
        assert!(info.is_read_only());
        let request = |max_version, copy| ExportRequest {
            max_version,
            copy,
            ..Default::default()
        };
        // A legacy request gets a legacy capsule, a versioned one READ_ONLY.
        let legacy = request(None, None).plan(&info).unwrap();
        assert_eq!(
            (legacy.format, legacy.read_only),
            (CapsuleFormat::Legacy, true)
        );
        let versioned = request(Some((1, 3)), None).plan(&info).unwrap();
        assert_eq!(versioned.flags(), crate::ffi::DLPACK_FLAG_BITMASK_READ_ONLY);
        // A copy is writable.
        let copied = request(Some((1, 3)), Some(true)).plan(&info).unwrap();
        assert_eq!(copied.flags(), crate::ffi::DLPACK_FLAG_BITMASK_IS_COPIED);
        // Declared read-only by the exporter: NumPy's rule again.
        let declared = TensorInfo::builder(&data).read_only(true).build().unwrap();
        assert_eq!(declared.writability(), Writability::ReadOnly);
        assert!(matches!(
            request(None, None).plan(&declared),
            Err(DLPackError::Export(ExportError::ReadOnlyLegacy))
        ));
    }
}
