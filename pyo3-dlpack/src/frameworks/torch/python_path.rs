//! When an exact `torch.Tensor` is imported through its Python `__dlpack__`
//! rather than torch's C exchange table, as `np.from_dlpack` would: a
//! `TorchFunctionMode` is active (it sees `Tensor.__dlpack__`, and may
//! change what it returns), or the tensor has a `__dlpack__` of its own (an
//! instance attribute, which Python's lookup finds first).
//!
//! Both are asked on every torch import, so both are asked as CPython itself
//! would ask them, without the Python-level detours (measured with
//! callgrind: through `PyObject_CallNoArgs` and two attribute look-ups, one
//! making a bound method, they cost an import about 950 instructions, more
//! than everything else the crate does for it): torch's C function behind
//! `torch._C._is_torch_function_mode_enabled` is called directly, and the
//! instance's attributes are searched with CPython's method look-up, which
//! makes no bound method. Where either is not available (another kind of
//! function, the limited API, PyPy), the Python-level questions remain.

use pyo3::prelude::*;

/// Whether an import of `obj`, an exact `torch.Tensor`, must call its
/// `__dlpack__` rather than torch's C exchange table (see the module).
pub(crate) fn defers_to_python(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(mode_is_active(obj.py())? || has_own_dlpack(obj)?)
}

/// `torch._C._is_torch_function_mode_enabled()`.
fn mode_is_active(py: Python<'_>) -> PyResult<bool> {
    static QUESTION: crate::once::Cell<ModeQuestion> = crate::once::Cell::new();
    let question = QUESTION.get_or_try_init(py, || {
        let function = py
            .import("torch._C")?
            .getattr("_is_torch_function_mode_enabled")?;
        Ok::<_, PyErr>(ModeQuestion::of(function))
    })?;
    question.ask(py)
}

/// How torch is asked whether a `TorchFunctionMode` is active.
struct ModeQuestion {
    /// The Python function.
    function: Py<PyAny>,
    /// Its C function and `self` (its module), where it is a builtin
    /// function taking no arguments.
    #[cfg(not(any(PyPy, GraalPy)))]
    direct: Option<(pyo3::ffi::PyCFunction, *mut pyo3::ffi::PyObject)>,
}

// SAFETY: the C function is torch's (its library is never unloaded) and
// `self` is the module the builtin function holds, alive while `function`
// is (held here forever); both only used attached.
unsafe impl Send for ModeQuestion {}
// SAFETY: as above; nothing is written after `of`.
unsafe impl Sync for ModeQuestion {}

impl ModeQuestion {
    fn of(function: Bound<'_, PyAny>) -> Self {
        Self {
            #[cfg(not(any(PyPy, GraalPy)))]
            direct: direct_function(&function),
            function: function.unbind(),
        }
    }

    fn ask(&self, py: Python<'_>) -> PyResult<bool> {
        #[cfg(not(any(PyPy, GraalPy)))]
        if let Some((function, module)) = self.direct {
            // SAFETY: a METH_NOARGS builtin's C function, called as CPython
            // calls it (attached, its `self`, NULL for the arguments); `self`
            // is alive with `self.function`.
            let answer = unsafe { function(module, std::ptr::null_mut()) };
            // SAFETY: a new reference, or NULL with torch's exception set.
            let answer = unsafe { Bound::from_owned_ptr_or_err(py, answer) }?;
            // torch answers with the bool singletons, known by address.
            if answer.is(pyo3::types::PyBool::new(py, false)) {
                return Ok(false);
            }
            return answer.is_truthy();
        }
        self.function.call0(py)?.is_truthy(py)
    }
}

/// The C function and `self` of `function` if it is a builtin function
/// (exactly `builtin_function_or_method`) whose method takes no arguments.
#[cfg(not(any(PyPy, GraalPy)))]
fn direct_function(
    function: &Bound<'_, PyAny>,
) -> Option<(pyo3::ffi::PyCFunction, *mut pyo3::ffi::PyObject)> {
    use pyo3::ffi;
    let ptr = function.as_ptr();
    // SAFETY: attached; `function` is live.
    if unsafe { ffi::PyCFunction_CheckExact(ptr) } == 0 {
        return None;
    }
    // SAFETY: attached; a builtin function (checked above).
    if unsafe { ffi::PyCFunction_GetFlags(ptr) } != ffi::METH_NOARGS {
        return None;
    }
    // SAFETY: as above; the C function lives as long as torch's library.
    let meth = unsafe { ffi::PyCFunction_GetFunction(ptr) }?;
    // SAFETY: as above; `self` (borrowed) lives as long as `function`.
    let module = unsafe { ffi::PyCFunction_GetSelf(ptr) };
    Some((meth, module))
}

/// Whether `obj.__dlpack__` is anything but its type's `__dlpack__` bound
/// to it: an attribute of the tensor itself, which Python's lookup finds
/// first. (A method patched onto `torch.Tensor` is the type's: the C table
/// stands for the type's export, as before.)
fn has_own_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let name = pyo3::intern!(obj.py(), "__dlpack__");
    let found = match method_lookup::find(obj, name)? {
        method_lookup::Found::TypesFunction => return Ok(false),
        method_lookup::Found::Attribute(found) => found,
    };
    let of_type = obj.get_type().getattr(name)?;
    Ok(!is_method_of(&found, &of_type, obj)?)
}

/// Whether `found` is the function `function` bound to `owner`.
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
fn is_method_of(
    found: &Bound<'_, PyAny>,
    function: &Bound<'_, PyAny>,
    owner: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    /// CPython's `PyMethodObject` (`cpython/classobject.h`, this layout
    /// since 3.8), which pyo3's bindings do not declare.
    #[repr(C)]
    struct MethodObject {
        ob_base: pyo3::ffi::PyObject,
        im_func: *mut pyo3::ffi::PyObject,
        im_self: *mut pyo3::ffi::PyObject,
    }
    static METHOD_TYPE: crate::once::Cell<Py<pyo3::types::PyType>> = crate::once::Cell::new();
    let method_type = crate::once::import_type(&METHOD_TYPE, found.py(), "types", "MethodType")?;
    if !found.get_type().is(method_type) {
        return Ok(false);
    }
    // SAFETY: `found`'s type is exactly `types.MethodType` (CPython's
    // `PyMethod_Type`), whose objects have this layout; read while `found`
    // (which holds both references) is alive.
    let method = unsafe { &*found.as_ptr().cast::<MethodObject>() };
    Ok(method.im_func == function.as_ptr() && method.im_self == owner.as_ptr())
}

/// As above, through the method's attributes (no `PyMethodObject` layout
/// in the limited API).
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
fn is_method_of(
    found: &Bound<'_, PyAny>,
    function: &Bound<'_, PyAny>,
    owner: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let py = found.py();
    let (Ok(bound), Ok(to)) = (
        found.getattr(pyo3::intern!(py, "__func__")),
        found.getattr(pyo3::intern!(py, "__self__")),
    ) else {
        return Ok(false);
    };
    Ok(bound.is(function) && to.is(owner))
}

/// CPython's method look-up (`_PyObject_GetMethod`, what `obj.name(...)`
/// compiles to): the type's function when the instance does not shadow it,
/// found without making a bound method. Exported by CPython 3.9 to 3.13
/// (checked); elsewhere `getattr`.
mod method_lookup {
    use pyo3::prelude::*;
    use pyo3::types::PyString;

    pub(super) enum Found<'py> {
        /// The type's function, which the instance does not shadow.
        #[cfg_attr(
            any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED, Py_3_14),
            expect(dead_code, reason = "found by `_PyObject_GetMethod` only")
        )]
        TypesFunction,
        /// What `getattr(obj, name)` returns.
        Attribute(Bound<'py, PyAny>),
    }

    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED, Py_3_14)))]
    pub(super) fn find<'py>(
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Found<'py>> {
        unsafe extern "C" {
            /// `Objects/object.c`: 1 and a new reference to the type's
            /// attribute in `*method` where it is a method descriptor the
            /// instance does not shadow; else 0 and `getattr(obj, name)`'s
            /// new reference, or NULL with an exception set.
            fn _PyObject_GetMethod(
                obj: *mut pyo3::ffi::PyObject,
                name: *mut pyo3::ffi::PyObject,
                method: *mut *mut pyo3::ffi::PyObject,
            ) -> std::ffi::c_int;
        }
        let mut method = std::ptr::null_mut();
        // SAFETY: attached; `obj` and `name` (a str) are live; `method` is
        // NULL, as the function asserts.
        let unbound = unsafe { _PyObject_GetMethod(obj.as_ptr(), name.as_ptr(), &mut method) };
        // SAFETY: a new reference, or NULL with an exception set.
        let found = unsafe { Bound::from_owned_ptr_or_err(obj.py(), method) }?;
        Ok(if unbound == 1 {
            Found::TypesFunction
        } else {
            Found::Attribute(found)
        })
    }

    #[cfg(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED, Py_3_14))]
    pub(super) fn find<'py>(
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Found<'py>> {
        obj.getattr(name).map(Found::Attribute)
    }
}
