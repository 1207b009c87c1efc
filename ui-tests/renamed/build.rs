//! The integration tests embed CPython: link them with an rpath to the
//! interpreter's shared library (pyenv installs it outside the system path).
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
