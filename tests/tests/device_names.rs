//! The derive's `#[dlpack(device = "…")]` names against the runtime's
//! `DeviceType` and `Device` parsing: the same names, with the same codes
//! and indices, in both directions.
//!
//! A proc-macro crate exports nothing but its macros, so the derive's table
//! (`pyo3-dlpack-derive/src/device.rs`, which has no dependencies) is
//! compiled into this test as a module.

#[path = "../../pyo3-dlpack-derive/src/device.rs"]
mod derive_device;

use derive_device::DeviceSpec;
use pyo3_dlpack::{Device, DeviceType};

/// Every (name, code) the runtime knows, by code. DLPack's device codes are
/// small integers (1 to 18 in DLPack 1.3; JAX uses 20), so this range holds
/// them all.
fn runtime_names() -> Vec<(&'static str, i32)> {
    (i32::from(i16::MIN)..=i32::from(i16::MAX))
        .filter_map(|code| DeviceType::from_code(code).name().map(|name| (name, code)))
        .collect()
}

#[test]
fn every_name_the_derive_accepts_means_the_same_device_at_run_time() {
    for &(name, code) in derive_device::DEVICES {
        assert_eq!(
            derive_device::parse(name),
            Ok(DeviceSpec { code, id: None })
        );
        let device_type: DeviceType = name
            .parse()
            .unwrap_or_else(|e| panic!("the derive accepts {name:?}, the runtime does not: {e}"));
        assert_eq!(device_type.code(), code, "{name}");
        assert_eq!(DeviceType::from_code(code).name(), Some(name));

        let with_index = format!("{name}:3");
        let device: Device = with_index.parse().unwrap();
        assert_eq!(
            derive_device::parse(&with_index),
            Ok(DeviceSpec {
                code: device.device_type.code(),
                id: Some(device.device_id)
            }),
            "{with_index}"
        );
    }
}

#[test]
fn every_runtime_name_is_accepted_by_the_derive_as_the_same_code() {
    let runtime = runtime_names();
    for &(name, code) in &runtime {
        let spec = derive_device::parse(name)
            .unwrap_or_else(|e| panic!("the runtime knows {name:?}, the derive does not: {e}"));
        assert_eq!(spec.code, code, "{name}");
    }
    let mut derive = derive_device::DEVICES.to_vec();
    derive.sort_by_key(|&(_, code)| code);
    assert_eq!(derive, runtime, "the two tables differ");
}

#[test]
fn both_refuse_the_same_malformed_names() {
    for bad in [
        "gpu", "", "CUDA", " cpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1:2",
    ] {
        assert!(
            derive_device::parse(bad).is_err(),
            "the derive accepts {bad:?}"
        );
        assert!(
            bad.parse::<Device>().is_err(),
            "the runtime accepts {bad:?}"
        );
    }
}
