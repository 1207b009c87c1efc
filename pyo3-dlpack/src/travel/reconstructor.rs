//! How a pickle finds the code that rebuilds a tensor, in any process.
//!
//! A `DLPackTensor` class lives in each extension built on this crate (each
//! links its own copy), and without `DLPackTensor::add_to_module` it is in
//! no module at all. So a pickle names the extension module (pickle imports
//! it by name, as it imports any class's module) and a C function of this
//! crate inside its library, [`pyo3_dlpack_install`], which puts the
//! reconstructor, a [`Restore`], on the module as [`ATTRIBUTE`]. Unpickling
//! evaluates, with standard-library calls only:
//!
//! ```python
//! m = importlib.import_module(MODULE)
//! install = getattr(getattr(importlib.import_module("ctypes").pydll, m.__file__), SYMBOL)
//! restore = getattr(m, ATTRIBUTE, install(MODULE_AS_BYTES))   # the install runs first
//! tensor = restore(state)
//! ```
//!
//! (Where the `DLPackTensor` class is in its module, `add_to_module`, a
//! pickle names its class method [`CLASS_ATTRIBUTE`] instead, as it names
//! any class's: `getattr(MODULE.DLPackTensor, CLASS_ATTRIBUTE)(state)`.)
//!
//! `ctypes.pydll` keeps each library it opened, and each library the
//! functions looked up, so after the first load of a process this costs a
//! few attribute lookups and one C call. Each extension's library resolves
//! to its own copy of the crate, so two extensions built on it coexist.
//!
//! Which module holds this copy of the crate is learned from the objects:
//! the module whose `__file__` is the library the dynamic loader says this
//! code is in (`dladdr`; elsewhere, the library whose [`SYMBOL`] is at our
//! address). The install function checks the same of the module it is
//! named, so a stray call cannot point pickles at another module.

use std::ffi::{CStr, c_char, c_int};

use crate::error::PythonKind;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// The symbol pickles name: this crate's 0.4 series and payload format 1.
/// (`export_name` takes a literal; a test keeps it in step with the version.)
const SYMBOL: &str = "pyo3_dlpack_0_4_install_v1";

/// The class method of `DLPackTensor` that pickles name where the class is
/// in its module (its `#[pyo3(name)]` spells it too).
pub(crate) const CLASS_ATTRIBUTE: &str = "_pyo3_dlpack_0_4_restore_v1";

/// The module attribute the reconstructor is installed as.
const ATTRIBUTE: &str = "__pyo3_dlpack_0_4_restore_v1__";

/// Installs the reconstructor on the extension module named `module` (a
/// NUL-terminated UTF-8 name, as `sys.modules` holds it): the function
/// pickles made by this crate call through `ctypes` (see the module's
/// documentation). Returns 0, or -1 with an exception set. Not for calling
/// from Rust.
///
/// # Safety
///
/// Called with the GIL held (ctypes' `PyDLL` functions hold it) and
/// `module` NULL or a valid NUL-terminated string.
#[doc(hidden)]
#[unsafe(export_name = "pyo3_dlpack_0_4_install_v1")]
pub unsafe extern "C" fn pyo3_dlpack_install(module: *const c_char) -> c_int {
    Python::attach(|py| {
        let body = || {
            if module.is_null() {
                return Err(PythonKind::Type.new_err("expected a module name, got NULL".into()));
            }
            // SAFETY: the caller's promise: a NUL-terminated string, read now.
            let name = unsafe { CStr::from_ptr(module) }
                .to_str()
                .map_err(|_| PythonKind::Type.new_err("expected a UTF-8 module name".into()))?;
            install(py, name)
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(Ok(())) => 0,
            Ok(Err(err)) => {
                err.restore(py);
                -1
            }
            Err(payload) => {
                crate::error::panic_error(payload).restore(py);
                -1
            }
        }
    })
}

/// Puts the reconstructor on module `name` (imported), unless it is there.
/// A module that does not hold this copy of the crate (a stray call naming
/// another) is refused, on every call, and nothing is installed; a call
/// naming the module already installed on (each later unpickling calls
/// this again) costs one comparison of names.
fn install(py: Python<'_>, name: &str) -> PyResult<()> {
    static INSTALLED: crate::once::Cell<String> = crate::once::Cell::new();
    if INSTALLED.get(py).is_some_and(|installed| installed == name) {
        return Ok(());
    }
    let module = py.import(name)?;
    if !holds_this_crate(py, &module)? {
        return Err(PythonKind::Import.new_err(format!(
            "module {name} does not hold the pyo3-dlpack code this pickle names"
        )));
    }
    if !module.hasattr(ATTRIBUTE)? {
        module.setattr(ATTRIBUTE, restorer_for(py, name)?)?;
    }
    INSTALLED.get_or_set(py, name.to_owned());
    Ok(())
}

/// The reconstructor, and the calls its pickle makes when loaded: one
/// class for both (PyO3 makes a type's code once per class).
#[pyclass(frozen, module = "pyo3_dlpack", name = "_Restore")]
pub(crate) struct Restore {
    role: Role,
}

enum Role {
    /// The reconstructor: called, it restores a state tuple; pickled, it is
    /// the lookup the module's documentation shows.
    Restorer {
        /// The extension module it is installed on. A process has one
        /// restorer ([`restorer_for`]'s), so one module.
        module: String,
    },
    /// A call that pickle makes when it loads: `func(*args)`. Called, it
    /// calls what that call returns (pickle checks that a reducer's
    /// function is callable; loading calls the result).
    Call { func: Py<PyAny>, args: Py<PyTuple> },
}

#[pymethods]
impl Restore {
    fn __call__(&self, py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match &self.role {
            Role::Restorer { .. } => super::restore_pickled(py, state),
            Role::Call { func, args } => {
                let made = func.bind(py).call1(args.bind(py))?;
                Ok(made.call1((state,))?.unbind())
            }
        }
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match &self.role {
            Role::Restorer { module } => {
                // What this returns, made once: every pickle names the same,
                // and a process has one restorer to pickle (`restorer_for`'s).
                static REDUCED: crate::once::Cell<Py<PyTuple>> = crate::once::Cell::new();
                let reduced =
                    REDUCED.get_or_try_init(py, || Ok::<_, PyErr>(lookup(py, module)?.unbind()))?;
                Ok(reduced.bind(py).clone())
            }
            Role::Call { func, args } => (func.bind(py), args.bind(py)).into_pyobject(py),
        }
    }
}

/// The lookup the module's documentation shows, for extension module
/// `module`, as a reducer's `(getattr, (module, ATTRIBUTE, installed))`.
fn lookup<'py>(py: Python<'py>, module: &str) -> PyResult<Bound<'py, PyTuple>> {
    let getattr = py.import("builtins")?.getattr("getattr")?;
    let import_module = py.import("importlib")?.getattr("import_module")?;
    let call = |func: &Bound<'py, PyAny>, args: Bound<'py, PyTuple>| {
        let role = Role::Call {
            func: func.clone().unbind(),
            args: args.unbind(),
        };
        Bound::new(py, Restore { role })
    };
    let name = pyo3::types::PyBytes::new(py, module.as_bytes());
    let module = call(&import_module, (module,).into_pyobject(py)?)?;
    let ctypes = call(&import_module, ("ctypes",).into_pyobject(py)?)?;
    let loader = call(&getattr, (ctypes, "pydll").into_pyobject(py)?)?;
    let file = call(&getattr, (module.clone(), "__file__").into_pyobject(py)?)?;
    let library = call(&getattr, (loader, file).into_pyobject(py)?)?;
    let install = call(&getattr, (library, SYMBOL).into_pyobject(py)?)?;
    let installed = call(install.as_any(), (name,).into_pyobject(py)?)?;
    (getattr, (module, ATTRIBUTE, installed)).into_pyobject(py)
}

/// The reconstructor to name in a pickle: one object per process (a pickle
/// of many tensors names it once). Where pickle finds the `DLPackTensor`
/// class by its name (`DLPackTensor::add_to_module`), its class method
/// [`CLASS_ATTRIBUTE`], which pickles as `getattr(DLPackTensor, name)`:
/// loading it costs a global and one `getattr`, with no `importlib` or
/// `ctypes` call (about 17,000 instructions less). Otherwise a [`Restore`],
/// installed on the extension module, which pickles as the lookup the
/// module's documentation shows. Chosen at the first pickling.
pub(crate) fn restorer(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static NAMED: crate::once::Cell<Py<PyAny>> = crate::once::Cell::new();
    let restore = NAMED.get_or_try_init(py, || {
        if let Some(method) = class_restorer(py)? {
            return Ok(method.unbind());
        }
        let name = extension_module(py)?;
        install(py, &name)?;
        Ok::<_, PyErr>(restorer_for(py, &name)?.clone().unbind())
    })?;
    Ok(restore.bind(py))
}

/// The class method `DLPackTensor.<CLASS_ATTRIBUTE>`, bound to the class,
/// when pickle would find the class as it finds any class: `__module__`
/// names an imported module whose `__qualname__` entry is the class itself.
/// (Read through the module's `__dict__`: no attribute hook runs.)
fn class_restorer(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let class = py.get_type::<crate::export::DLPackTensor>();
    let module = class.getattr(pyo3::intern!(py, "__module__"))?;
    let qualname = class.getattr(pyo3::intern!(py, "__qualname__"))?;
    // Each a `str` of valid UTF-8, looked up as a plain `str` of its text.
    let text = |name: &Bound<'_, PyAny>| {
        let text = crate::python::ok(name.cast::<PyString>().ok()?.to_cow())?;
        Some(PyString::new(py, &text))
    };
    let (Some(module), Some(qualname)) = (text(&module), text(&qualname)) else {
        return Ok(None);
    };
    let modules = py.import("sys")?.getattr("modules")?;
    let Some(module) = modules.cast::<pyo3::types::PyDict>()?.get_item(module)? else {
        return Ok(None);
    };
    let Ok(module) = module.cast_into::<PyModule>() else {
        return Ok(None);
    };
    match module.dict().get_item(qualname)? {
        Some(found) if found.is(&class) => Ok(Some(class.getattr(CLASS_ATTRIBUTE)?)),
        _ => Ok(None),
    }
}

/// The module reconstructor, a [`Restore`] (one per process; kept as any
/// object: its users need no more).
fn restorer_for<'py>(py: Python<'py>, module: &str) -> PyResult<&'py Bound<'py, PyAny>> {
    static RESTORE: crate::once::Cell<Py<PyAny>> = crate::once::Cell::new();
    let restore = RESTORE.get_or_try_init(py, || {
        let role = Role::Restorer {
            module: module.to_owned(),
        };
        Ok::<_, PyErr>(Py::new(py, Restore { role })?.into_any())
    })?;
    Ok(restore.bind(py))
}

/// The name of the extension module this copy of the crate is linked into:
/// the module in `sys.modules` whose file is this library. Modules are read
/// through their `__dict__` (no attribute hook runs: a lazy module stays
/// unloaded) and no library is opened.
fn extension_module(py: Python<'_>) -> PyResult<String> {
    static FOUND: crate::once::Cell<String> = crate::once::Cell::new();
    if let Some(name) = FOUND.get(py) {
        return Ok(name.clone());
    }
    // A snapshot (`list(sys.modules.items())`): imports may run meanwhile.
    let items = py
        .import("sys")?
        .getattr("modules")?
        .call_method0("items")?;
    let modules = py.get_type::<PyList>().call1((&items,))?;
    for item in modules.try_iter()? {
        let (name, module): (String, Bound<'_, PyAny>) = item?.extract()?;
        if holds_this_crate(py, &module)? {
            FOUND.get_or_set(py, name.clone());
            return Ok(name);
        }
    }
    Err(PythonKind::Type.new_err(
        "cannot pickle 'DLPackTensor' object: no imported extension module holds the \
         pyo3-dlpack code that made it (a pickle names the extension module, which \
         the unpickling process imports)"
            .into(),
    ))
}

/// Whether `module` is a module whose file is the library this code is in.
fn holds_this_crate(py: Python<'_>, module: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(module) = module.cast::<PyModule>() else {
        return Ok(false);
    };
    let Some(file) = module.dict().get_item("__file__")? else {
        return Ok(false);
    };
    let Some(file) = crate::python::ok(file.extract::<String>()) else {
        return Ok(false);
    };
    same_library(py, &file)
}

/// Whether the file at `path` is the library this code is in (its path as
/// the dynamic loader reports it, both resolved).
#[cfg(unix)]
fn same_library(py: Python<'_>, path: &str) -> PyResult<bool> {
    static OURS: crate::once::Cell<Option<String>> = crate::once::Cell::new();
    let ours = match OURS.get(py) {
        Some(ours) => ours,
        None => OURS.get_or_set(py, library_path()),
    };
    let Some(ours) = ours else {
        return Ok(false);
    };
    if file_name(path) != file_name(ours) {
        return Ok(false);
    }
    let realpath = py.import("os.path")?.getattr("realpath")?;
    realpath
        .call1((path,))?
        .eq(realpath.call1((ours.as_str(),))?)
}

/// A path's file name: what follows its last '/'.
#[cfg(unix)]
fn file_name(path: &str) -> &str {
    path.rfind('/').map_or(path, |slash| &path[slash + 1..])
}

/// The path of the library holding this function, from the dynamic loader.
#[cfg(unix)]
fn library_path() -> Option<String> {
    use std::ffi::c_void;

    #[repr(C)]
    struct DlInfo {
        dli_fname: *const c_char,
        dli_fbase: *mut c_void,
        dli_sname: *const c_char,
        dli_saddr: *mut c_void,
    }
    unsafe extern "C" {
        fn dladdr(address: *const c_void, info: *mut DlInfo) -> c_int;
    }
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `dladdr` reads the address only (a function of this library)
    // and fills the live `info`; glibc's and macOS's `Dl_info` have this layout.
    let found = unsafe { dladdr(pyo3_dlpack_install as *const c_void, &raw mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path owned by the loader, valid while the
    // library is loaded (it is: this code runs from it); copied at once.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Whether the library at `path` has this function at this address (no
/// `dladdr`: opened through `ctypes`, as unpickling opens it).
#[cfg(not(unix))]
fn same_library(py: Python<'_>, path: &str) -> PyResult<bool> {
    let ctypes = py.import("ctypes")?;
    let ours = pyo3_dlpack_install as *const () as usize;
    Ok(symbol_address(&ctypes, path) == Some(ours))
}

/// The address of `SYMBOL` in the library at `file`, if it has one.
#[cfg(not(unix))]
fn symbol_address(ctypes: &Bound<'_, PyModule>, file: &str) -> Option<usize> {
    let library = ctypes.getattr("PyDLL").ok()?.call1((file,)).ok()?;
    let function = library.get_item(SYMBOL).ok()?;
    let pointer = ctypes
        .getattr("cast")
        .ok()?
        .call1((function, ctypes.getattr("c_void_p").ok()?))
        .ok()?;
    pointer.getattr("value").ok()?.extract().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_symbol_names_this_release_series() {
        let version = env!("CARGO_PKG_VERSION");
        let series: Vec<&str> = version.split('.').take(2).collect();
        assert_eq!(
            SYMBOL,
            format!("pyo3_dlpack_{}_{}_install_v1", series[0], series[1])
        );
        assert_eq!(
            CLASS_ATTRIBUTE,
            format!("_pyo3_dlpack_{}_{}_restore_v1", series[0], series[1])
        );
    }
}
