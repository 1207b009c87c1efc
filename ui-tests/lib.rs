//! trybuild cases for `#[derive(IntoDLPack, FromDLPack)]` live in
//! `tests/ui/{fail,pass}`, one rule per file, and in `tests/ui/check`, the
//! errors `cargo check` alone must report (trybuild only checks, instead of
//! building, a set without pass cases); `tests/compiletest.rs` runs them.
//! Regenerate the expected errors with `TRYBUILD=overwrite` on the stable
//! toolchain (Rust 1.95: compiler messages change between releases). This library is empty.
