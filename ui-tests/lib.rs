//! trybuild cases for `#[derive(IntoDLPack, FromDLPack)]` live in
//! `tests/ui/{fail,pass}`, one rule per file; `tests/compiletest.rs` runs
//! them. Regenerate the expected errors with `TRYBUILD=overwrite` on the
//! pinned toolchain (see the README). This library is empty.
