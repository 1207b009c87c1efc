//! Arbitrary bytes → a managed tensor's fields (version, flags, ndim, dtype,
//! shape, strides, NULL pointers, device, byte offset) → the import
//! validation. libFuzzer reports any panic or AddressSanitizer finding.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = pyo3_dlpack::fuzz::validate(data);
});
