//! Exposes the interpreter-version cfgs (`Py_3_12`, …) to this crate, and
//! lets its unit and doc tests, which embed CPython, find the interpreter's
//! shared library at run time (pyenv installs it outside the system path).
fn main() {
    for minor in 7..=16 {
        println!("cargo::rustc-check-cfg=cfg(Py_3_{minor})");
    }
    for name in ["Py_LIMITED_API", "Py_GIL_DISABLED", "PyPy", "GraalPy"] {
        println!("cargo::rustc-check-cfg=cfg({name})");
    }
    pyo3_build_config::use_pyo3_cfgs();
    pyo3_build_config::add_libpython_rpath_link_args();
}
