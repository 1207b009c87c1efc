//! Rust `bool`s are exported read-only: a consumer may write any byte, and a
//! `bool` other than 0 or 1 is undefined behaviour for Rust code that reads
//! it afterwards. Exporting them writable is a promise, made with `unsafe`.

use pyo3_dlpack::TensorInfo;

fn main() {
    let mask = vec![true, false];
    let _ = TensorInfo::builder(&mask).writable_bool();
}
