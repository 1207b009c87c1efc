//! Integration tests of `pyo3-dlpack` against real Python frameworks, in an
//! embedded interpreter. The tests live in `tests/*.rs`; this library is empty.
