//! `#[dlpack(device = "…")]`: DLPack device names, checked at compile time.
//!
//! The same names as `pyo3_dlpack::DeviceType`'s `Display` and `FromStr`.
//! This crate cannot depend on the runtime crate, which depends on it, so
//! the list is repeated here, and `tests/tests/device_names.rs` (which
//! compiles this file into a test of the runtime crate) checks that both
//! agree, name by name, in both directions.

/// (name, DLPack device type code), DLPack 1.3 and the codes after it.
pub(crate) const DEVICES: &[(&str, i32)] = &[
    ("cpu", 1),
    ("cuda", 2),
    ("cuda_host", 3),
    ("opencl", 4),
    ("vulkan", 7),
    ("metal", 8),
    ("vpi", 9),
    ("rocm", 10),
    ("rocm_host", 11),
    ("ext_dev", 12),
    ("cuda_managed", 13),
    ("oneapi", 14),
    ("webgpu", 15),
    ("hexagon", 16),
    ("maia", 17),
    ("trn", 18),
    ("tpu", 19),
    ("tpu_host", 20),
];

/// A parsed `"type"` or `"type:index"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeviceSpec {
    pub(crate) code: i32,
    pub(crate) id: Option<i32>,
}

/// Parses a device string, or says what is expected.
pub(crate) fn parse(text: &str) -> Result<DeviceSpec, String> {
    let (name, id) = match text.split_once(':') {
        Some((name, id)) => (name, Some(id)),
        None => (text, None),
    };
    let expected = || {
        let names: Vec<&str> = DEVICES.iter().map(|(name, _)| *name).collect();
        format!(
            "unknown device {text:?}: expected \"TYPE\" or \"TYPE:INDEX\" with TYPE one of {}",
            names.join(", ")
        )
    };
    let code = DEVICES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, code)| *code)
        .ok_or_else(expected)?;
    let id = match id {
        None => None,
        Some(id) => Some(device_index(text, name, id)?),
    };
    Ok(DeviceSpec { code, id })
}

/// The index after `name:`: a non-negative `i32` (DLPack's `device_id`).
fn device_index(text: &str, name: &str, id: &str) -> Result<i32, String> {
    let digits = !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit());
    match id.parse::<i32>() {
        Ok(index) if index >= 0 => Ok(index),
        _ if digits => Err(format!(
            "the device index {id} in {text:?} is past DLPack's largest, {}: write \"{name}:0\"",
            i32::MAX
        )),
        _ => Err(format!(
            "the device index {id:?} in {text:?} is not a non-negative integer: write \"{name}:0\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_indices() {
        assert_eq!(parse("cpu"), Ok(DeviceSpec { code: 1, id: None }));
        assert_eq!(
            parse("cuda:1"),
            Ok(DeviceSpec {
                code: 2,
                id: Some(1)
            })
        );
        assert_eq!(parse("trn"), Ok(DeviceSpec { code: 18, id: None }));
        assert!(
            parse("gpu")
                .unwrap_err()
                .starts_with("unknown device \"gpu\"")
        );
        assert!(parse("cuda:-1").is_err());
        assert_eq!(
            parse("cuda:x").unwrap_err(),
            "the device index \"x\" in \"cuda:x\" is not a non-negative integer: write \"cuda:0\""
        );
        assert_eq!(
            parse("cuda:4294967296").unwrap_err(),
            "the device index 4294967296 in \"cuda:4294967296\" is past DLPack's largest, 2147483647: write \"cuda:0\""
        );
    }
}
