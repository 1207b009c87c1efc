//! What a consumer asks of `__dlpack__`, and what we will do about it.
//!
//! Argument values that make no sense raise `ValueError` and exports that
//! cannot be done raise `BufferError`; neither is ever a `TypeError`, which
//! NumPy and torch read as "old producer" and silently retry without the
//! keywords (hiding the real problem).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PySequence, PyTuple};

#[cfg(test)]
use crate::export::info::TensorInfo;
use crate::export::template::Description;
use crate::ffi::{DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_READ_ONLY};
use crate::{DLPackError, Device, DeviceType};

/// Which managed struct a capsule carries.
///
/// ```
/// use pyo3_dlpack::CapsuleFormat;
/// assert_eq!(CapsuleFormat::for_max_version(None), CapsuleFormat::Legacy);
/// assert_eq!(CapsuleFormat::for_max_version(Some((0, 8))), CapsuleFormat::Legacy);
/// assert_eq!(CapsuleFormat::for_max_version(Some((1, 0))), CapsuleFormat::Versioned);
/// assert_eq!(CapsuleFormat::for_max_version(Some((2, 0))), CapsuleFormat::Versioned);
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
    pub fn for_max_version(max_version: Option<(u32, u32)>) -> Self {
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
        let mut flags = 0;
        if self.read_only {
            flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
        }
        if self.copy {
            flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
        }
        flags
    }
}

impl ExportRequest {
    /// Parses the keyword values of `__dlpack__`.
    pub(crate) fn from_python(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> Result<Self, DLPackError> {
        Ok(Self {
            max_version: not_none(max_version)
                .map(|v| {
                    let (major, minor) = int_pair(v, "max_version", "(major, minor)")?;
                    let major = u32::try_from(major).unwrap_or(if major < 0 { 0 } else { u32::MAX });
                    let minor = u32::try_from(minor).unwrap_or(if minor < 0 { 0 } else { u32::MAX });
                    Ok((major, minor))
                })
                .transpose()?,
            stream: not_none(stream).map(|v| int(v, "stream")).transpose()?,
            dl_device: not_none(dl_device)
                .map(|v| {
                    let (device_type, id) = int_pair(v, "dl_device", "(device_type, device_id)")?;
                    let out_of_range = || {
                        DLPackError::InvalidArgument(format!(
                            "dl_device must be a (device_type, device_id) pair of int32s, got ({device_type}, {id})"
                        ))
                    };
                    let device_type = i32::try_from(device_type).map_err(|_| out_of_range())?;
                    let id = i32::try_from(id).map_err(|_| out_of_range())?;
                    Ok(Device::new(DeviceType::from_code(device_type), id))
                })
                .transpose()?,
            copy: not_none(copy).map(boolean).transpose()?,
        })
    }

    /// Decides how to export `info` for this request, or why it cannot be done.
    pub(crate) fn plan(&self, info: &impl Description) -> Result<ExportPlan, DLPackError> {
        let format = CapsuleFormat::for_max_version(self.max_version);
        let source = info.device();
        let device = self.target_device(source)?;
        let sync_stream = stream_to_sync(self.stream, device)?;
        let copy = self.copy == Some(true);
        if copy {
            check_copyable(info, self.dl_device)?;
        }
        // A copy is ordinary (pageable) host memory, whatever the source was.
        let device = if copy { Device::cpu() } else { device };
        let read_only = info.is_read_only() && !copy;
        if read_only && format == CapsuleFormat::Legacy {
            return Err(DLPackError::Export(
                "the tensor is read-only and the legacy (unversioned) DLPack capsule cannot say so; \
                 call __dlpack__ with max_version=(1, 0) or later, or copy=True"
                    .into(),
            ));
        }
        Ok(ExportPlan {
            format,
            copy,
            device,
            sync_stream,
            read_only,
        })
    }

    /// `dl_device` must be the tensor's device, or the CPU for memory the CPU
    /// can reach (pinned and managed memory) — never a copy across devices.
    fn target_device(&self, source: Device) -> Result<Device, DLPackError> {
        match self.dl_device {
            None => Ok(source),
            Some(target) if target == source => Ok(target),
            Some(target) if target == Device::cpu() && source.is_host_accessible() => Ok(target),
            Some(target) => Err(DLPackError::Export(format!(
                "cannot export a tensor on {source} to {target}: \
                 pyo3-dlpack exports in place and does not copy across devices"
            ))),
        }
    }
}

/// `copy=True` reads the elements on the host into a new CPU buffer: the
/// source must be host memory of checked extent, and the target the CPU.
fn check_copyable(info: &impl Description, dl_device: Option<Device>) -> Result<(), DLPackError> {
    let source = info.device();
    if !source.is_host_accessible() {
        return Err(DLPackError::Export(format!(
            "copy=True needs host memory, but the tensor is on {source}; \
             export it without copy and copy it in the consumer"
        )));
    }
    if let Some(target) = dl_device.filter(|&d| d != Device::cpu()) {
        return Err(DLPackError::Export(format!(
            "copy=True makes a cpu:0 copy, but dl_device asks for {target}"
        )));
    }
    if !info.is_bounds_checked() {
        return Err(DLPackError::Export(
            "copy=True needs a buffer of known length (its TensorData reports none)".into(),
        ));
    }
    Ok(())
}

/// The stream rules of the DLPack Python specification for the device the
/// capsule reports. Returns the consumer stream to synchronise with, if any.
fn stream_to_sync(stream: Option<i64>, device: Device) -> Result<Option<i64>, DLPackError> {
    let refuse = |why: &str| {
        Err(DLPackError::Export(format!(
            "stream={} is not valid for a tensor on {device}: {why}",
            stream.map_or("None".into(), |s| s.to_string())
        )))
    };
    match (device.device_type, stream) {
        (_, Some(s)) if s < -1 => refuse("a stream must be -1, None or a non-negative integer"),
        (_, Some(-1)) => Ok(None),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, None) => Ok(Some(1)),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, Some(0)) => refuse(
            "0 is ambiguous on CUDA; use 1 for the legacy default stream or 2 for per-thread",
        ),
        (DeviceType::CUDA | DeviceType::CUDA_MANAGED, Some(s)) => Ok(Some(s)),
        (DeviceType::ROCM, None) => Ok(Some(0)),
        (DeviceType::ROCM, Some(1 | 2)) => {
            refuse("ROCm has no stream 1 or 2; use 0 for the default stream")
        }
        (DeviceType::ROCM, Some(s)) => Ok(Some(s)),
        (_, None) => Ok(None),
        (_, Some(_)) => refuse("only None (or -1) is accepted on devices without streams"),
    }
}

fn not_none<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.filter(|v| !v.is_none())
}

/// Any `int` (or subclass, such as torch's and JAX's `IntEnum` device types).
fn int(value: &Bound<'_, PyAny>, name: &str) -> Result<i64, DLPackError> {
    let found = || {
        DLPackError::InvalidArgument(format!(
            "{name} must be an integer or None, got {}",
            describe(value)
        ))
    };
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(found());
    }
    value.extract::<i64>().map_err(|_| found())
}

fn int_pair(value: &Bound<'_, PyAny>, name: &str, form: &str) -> Result<(i64, i64), DLPackError> {
    // Fast path: the exact 2-tuple of exact ints every consumer sends.
    if let Ok(tuple) = value.cast_exact::<PyTuple>() {
        if tuple.len() == 2 {
            let first = tuple.get_borrowed_item(0).ok().and_then(|i| exact_int(&i));
            let second = tuple.get_borrowed_item(1).ok().and_then(|i| exact_int(&i));
            if let (Some(first), Some(second)) = (first, second) {
                return Ok((first, second));
            }
        }
    }
    let wrong = || {
        DLPackError::InvalidArgument(format!(
            "{name} must be a {form} tuple of integers, got {}",
            describe(value)
        ))
    };
    let sequence = value.cast::<PySequence>().map_err(|_| wrong())?;
    if sequence.len().map_err(|_| wrong())? != 2 {
        return Err(wrong());
    }
    let item = |i| sequence.get_item(i).map_err(|_| wrong());
    let first = int(&item(0)?, name).map_err(|_| wrong())?;
    let second = int(&item(1)?, name).map_err(|_| wrong())?;
    Ok((first, second))
}

/// An exact `int` (not a subclass) that fits an `i64`.
fn exact_int(value: &Bound<'_, PyAny>) -> Option<i64> {
    value.cast_exact::<PyInt>().ok()?.extract::<i64>().ok()
}

fn boolean(value: &Bound<'_, PyAny>) -> Result<bool, DLPackError> {
    match value.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(DLPackError::InvalidArgument(format!(
            "copy must be True, False or None, got {}",
            describe(value)
        ))),
    }
}

fn describe(value: &Bound<'_, PyAny>) -> String {
    let repr = value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into());
    let type_name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{repr} ({type_name})")
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
            "cannot export a tensor on cpu:0 to cuda:0: pyo3-dlpack exports in place and does not copy across devices"
        );
        assert!(to(Some(Device::cpu()), Device::cuda(0)).is_err());
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
        assert_eq!(p.flags(), DLPACK_FLAG_BITMASK_IS_COPIED);
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
            DLPACK_FLAG_BITMASK_READ_ONLY
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

    #[test]
    fn python_values_parse_or_raise_value_errors() {
        Python::attach(|py| {
            let eval = |code: &str| {
                py.eval(&std::ffi::CString::new(code).unwrap(), None, None)
                    .unwrap()
            };
            let req = ExportRequest::from_python(
                Some(&eval("-1")),
                Some(&eval("(1, 3)")),
                Some(&eval("(2, 1)")),
                Some(&eval("False")),
            )
            .unwrap();
            assert_eq!(req.stream, Some(-1));
            assert_eq!(req.max_version, Some((1, 3)));
            assert_eq!(req.dl_device, Some(Device::cuda(1)));
            assert_eq!(req.copy, Some(false));
            let none = eval("None");
            let req =
                ExportRequest::from_python(Some(&none), Some(&none), Some(&none), Some(&none))
                    .unwrap();
            assert_eq!(
                (req.stream, req.max_version, req.dl_device, req.copy),
                (None, None, None, None)
            );
            let bad = |stream: &str, max_version: &str, dl_device: &str, copy: &str| {
                ExportRequest::from_python(
                    Some(&eval(stream)),
                    Some(&eval(max_version)),
                    Some(&eval(dl_device)),
                    Some(&eval(copy)),
                )
                .unwrap_err()
                .to_string()
            };
            assert_eq!(
                bad("'x'", "None", "None", "None"),
                "stream must be an integer or None, got 'x' (str)"
            );
            assert_eq!(
                bad("None", "(1,)", "None", "None"),
                "max_version must be a (major, minor) tuple of integers, got (1,) (tuple)"
            );
            assert_eq!(
                bad("None", "None", "'cpu'", "None"),
                "dl_device must be a (device_type, device_id) tuple of integers, got 'cpu' (str)"
            );
            assert_eq!(
                bad("None", "None", "None", "1"),
                "copy must be True, False or None, got 1 (int)"
            );
        });
    }
}
