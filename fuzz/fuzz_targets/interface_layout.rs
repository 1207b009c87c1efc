//! Arbitrary bytes → a layout as `__array_interface__`,
//! `__cuda_array_interface__` or the buffer protocol describe one (shape,
//! byte strides, dtype, the memory's region) → the protocols' import, which
//! must accept only what stays inside the region. libFuzzer reports any
//! panic (the containment is asserted) or AddressSanitizer finding.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = pyo3_dlpack::fuzz::interface_layout(data);
});
