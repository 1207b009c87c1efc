//! The per-tensor checks torch's C exchange path skips and its `__dlpack__`
//! makes: `requires_grad`, the lazy conjugate bit and the negative bit.
//!
//! They are torch's own C functions behind `torch.Tensor.requires_grad` (a
//! getter) and `is_conj()`/`is_neg()` (methods without arguments). Outside
//! the limited API they are found once per type, in the descriptors CPython
//! makes of them, and called directly, as CPython itself would call them
//! after its attribute lookup (measured: that lookup and the method call's
//! dispatch were a third of the checks' cost; `is_neg()` itself releases
//! and retakes the GIL inside torch). Where a descriptor is not of the
//! expected kind (another torch, another layout), and in limited-API builds,
//! they are read through Python as before. Only `torch.Tensor` itself takes
//! the exchange path that asks these (by identity, see `exchange::consumer`),
//! and each direct call is made only after the object passes the check
//! CPython's descriptor makes (`PyObject_TypeCheck` against the class that
//! owns the descriptor): an object of any other type is asked through Python.

use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::error::ExportError;
use crate::{DLPackError, DataType, DataTypeCode};

/// How the checks are made for one tensor type (found once, kept forever
/// with the type in the exchange-table cache).
pub(crate) struct TorchChecks {
    #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
    direct: Option<direct::Functions>,
}

/// The checks of `torch.Tensor`, of which a process has one.
static TORCH_TENSOR: crate::once::Cell<TorchChecks> = crate::once::Cell::new();

impl TorchChecks {
    /// The checks for `ty` (`torch.Tensor`), found once per process.
    pub(crate) fn of_torch_tensor(ty: &Bound<'_, PyType>) -> PyResult<&'static Self> {
        TORCH_TENSOR.get_or_try_init(ty.py(), || Self::of(ty))
    }

    /// The checks for `ty` (`torch.Tensor`).
    fn of(ty: &Bound<'_, PyType>) -> PyResult<Self> {
        #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
        return Ok(Self {
            direct: direct::Functions::of(ty)?,
        });
        #[cfg(any(Py_LIMITED_API, PyPy, GraalPy))]
        {
            let _ = ty;
            Ok(Self {})
        }
    }

    /// Refuses what torch's `__dlpack__` refuses and its C path exports
    /// anyway, with the same `BufferError`:
    ///
    /// - tensors that require gradient (torch: "Can't export tensors that
    ///   require gradient, use tensor.detach()"): written through a Rust
    ///   view, autograd would silently compute wrong gradients;
    /// - the lazy conjugate bit, and the negative bit too (torch's
    ///   `__dlpack__` misses that one): the memory holds unresolved values.
    ///
    /// Only the dtypes these can apply to are checked: floating-point and
    /// complex tensors for gradients, complex ones for the conjugate bit, and
    /// the negative bit where torch's public operations can set it (views
    /// such as `x.conj().imag`: complex, float and bfloat16 tensors). torch's
    /// private `torch._neg_view` and `Tensor._set_neg` can set it on any
    /// dtype; those are not guarded against. Integer and bool tensors cost
    /// nothing: this dtype test is inlined into the import, the questions
    /// are not.
    #[inline]
    pub(crate) fn check(&self, obj: &Bound<'_, PyAny>, dtype: DataType) -> PyResult<()> {
        let code = dtype.code;
        let complex = code == DataTypeCode::COMPLEX || code == DataTypeCode::BCOMPLEX;
        let floating = complex || code == DataTypeCode::FLOAT || code == DataTypeCode::BFLOAT;
        // float8, float6 and float4 are floating point to autograd too.
        let low_precision = code.code() >= DataTypeCode::FLOAT8_E3M4.code();
        if !floating && !low_precision {
            return Ok(());
        }
        self.ask_all(obj, complex, floating)
    }

    /// The questions of [`check`](Self::check) for a floating-point tensor
    /// (`floating`: one whose negative bit is asked, see there).
    #[inline(never)]
    fn ask_all(&self, obj: &Bound<'_, PyAny>, complex: bool, floating: bool) -> PyResult<()> {
        if self.ask(obj, Question::RequiresGrad)? {
            return Err(DLPackError::from(ExportError::RequiresGrad).into());
        }
        if complex && self.ask(obj, Question::IsConj)? {
            return Err(lazy_bit("conjugate", "resolve_conj"));
        }
        if floating && self.ask(obj, Question::IsNeg)? {
            return Err(lazy_bit("negative", "resolve_neg"));
        }
        Ok(())
    }

    /// torch's answer for `obj`, directly where the function was found.
    #[inline(always)]
    fn ask(&self, obj: &Bound<'_, PyAny>, question: Question) -> PyResult<bool> {
        #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
        if let Some(functions) = &self.direct {
            return functions.ask(obj, question);
        }
        question.through_python(obj)
    }
}

fn lazy_bit(bit: &'static str, resolve: &'static str) -> PyErr {
    DLPackError::from(ExportError::LazyBit { bit, resolve }).into()
}

/// What is asked of a tensor.
#[derive(Clone, Copy)]
enum Question {
    RequiresGrad,
    IsConj,
    IsNeg,
}

impl Question {
    /// Through Python's attribute lookup and call: `obj.requires_grad`,
    /// `obj.is_conj()`, `obj.is_neg()` (one look-up, then a call for the
    /// methods).
    fn through_python(self, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = obj.py();
        let name = match self {
            Self::RequiresGrad => pyo3::intern!(py, "requires_grad"),
            Self::IsConj => pyo3::intern!(py, "is_conj"),
            Self::IsNeg => pyo3::intern!(py, "is_neg"),
        };
        let mut answer = obj.getattr(name)?;
        if !matches!(self, Self::RequiresGrad) {
            answer = answer.call0()?;
        }
        answer.is_truthy()
    }
}

#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
mod direct {
    use std::ffi::c_void;

    use pyo3::ffi;
    use pyo3::prelude::*;
    use pyo3::types::{PyBool, PyType};

    use super::Question;

    /// torch's C functions behind the three questions, each with the class
    /// that owns its descriptor (the type its function expects `self` of).
    pub(super) struct Functions {
        /// The type the functions were found on: each owning class is one
        /// of its bases (checked by `descriptor_of`), so an object of
        /// exactly this type needs no further check.
        found_on: *mut ffi::PyTypeObject,
        requires_grad: (ffi::getter, *mut c_void, *mut ffi::PyTypeObject),
        is_conj: (ffi::PyCFunction, *mut ffi::PyTypeObject),
        is_neg: (ffi::PyCFunction, *mut ffi::PyTypeObject),
    }

    // SAFETY: function pointers into torch's library (never unloaded), the
    // getter's closure, an opaque constant torch passes back to itself, the
    // type the checks were found on, which the exchange-table cache keeps
    // alive forever, and the owning classes, which stay alive with it (each
    // is in its MRO); all only used attached.
    unsafe impl Send for Functions {}
    // SAFETY: as above; nothing here is ever written after `of`.
    unsafe impl Sync for Functions {}

    impl Functions {
        /// The functions of `ty`'s descriptors, if each is of the kind
        /// expected (a C getter, a C method taking no arguments) and belongs
        /// to a class `ty` derives from.
        pub(super) fn of(ty: &Bound<'_, PyType>) -> PyResult<Option<Self>> {
            let py = ty.py();
            let requires_grad = ty.getattr(pyo3::intern!(py, "requires_grad"))?;
            let is_conj = ty.getattr(pyo3::intern!(py, "is_conj"))?;
            let is_neg = ty.getattr(pyo3::intern!(py, "is_neg"))?;
            Ok((|| {
                Some(Self {
                    found_on: ty.as_type_ptr(),
                    requires_grad: getter_of(&requires_grad, ty)?,
                    is_conj: method_of(&is_conj, ty)?,
                    is_neg: method_of(&is_neg, ty)?,
                })
            })())
        }

        /// torch's answer, through its C function when `obj` is an instance
        /// of the class that owns the function's descriptor (else through
        /// Python, which raises what the descriptor raises).
        // Inlined into `ask_all`'s three questions, each its own constant
        // (one owner, one function, no dispatch on the question).
        #[inline(always)]
        pub(super) fn ask(&self, obj: &Bound<'_, PyAny>, question: Question) -> PyResult<bool> {
            let owner = match question {
                Question::RequiresGrad => self.requires_grad.2,
                Question::IsConj => self.is_conj.1,
                Question::IsNeg => self.is_neg.1,
            };
            // An object of exactly the type the functions were found on is an
            // instance of every owner (the import's object is: only that type
            // takes this path); the subtype walk is for any other.
            let of_found_type = obj.get_type_ptr() == self.found_on;
            // SAFETY: attached; `obj` and `owner` (a static type of torch,
            // see `Send` above) are live.
            if !of_found_type && unsafe { ffi::PyObject_TypeCheck(obj.as_ptr(), owner) } == 0 {
                return question.through_python(obj);
            }
            let answer = match question {
                Question::RequiresGrad => {
                    let (get, closure, _) = self.requires_grad;
                    // SAFETY: torch's getter of `requires_grad`, called as
                    // CPython's descriptor calls it: attached, with an
                    // instance of its owning class (checked just above) and
                    // the closure of its definition.
                    unsafe { get(obj.as_ptr(), closure) }
                }
                // SAFETY: torch's `is_conj`, a METH_NOARGS function, called
                // as CPython calls one: attached, an instance of its owning
                // class (checked above), NULL for the arguments.
                Question::IsConj => unsafe { (self.is_conj.0)(obj.as_ptr(), std::ptr::null_mut()) },
                // SAFETY: as for `is_conj`.
                Question::IsNeg => unsafe { (self.is_neg.0)(obj.as_ptr(), std::ptr::null_mut()) },
            };
            // SAFETY: a new reference, or NULL with torch's exception set.
            let answer = unsafe { Bound::from_owned_ptr_or_err(obj.py(), answer) }?;
            // torch answers with the bool singletons, known by address.
            let py = obj.py();
            if answer.as_ptr() == PyBool::new(py, false).as_ptr() {
                return Ok(false);
            }
            if answer.as_ptr() == PyBool::new(py, true).as_ptr() {
                return Ok(true);
            }
            answer.is_truthy()
        }
    }

    /// `descriptor` as `D`, the C struct of objects of the type `kind`, if
    /// it is one and belongs to a class `ty` derives from, so that `ty`'s
    /// instances are what its function expects (the check CPython's
    /// descriptor makes on every call, which a direct call skips).
    ///
    /// # Safety
    ///
    /// Attached; `D` is the struct of every object of type `kind`, and
    /// begins with a `PyDescrObject`.
    unsafe fn descriptor_of<'a, D>(
        descriptor: &'a Bound<'_, PyAny>,
        kind: *mut ffi::PyTypeObject,
        ty: &Bound<'_, PyType>,
    ) -> Option<(&'a D, *mut ffi::PyTypeObject)> {
        if descriptor.get_type_ptr() != kind {
            return None;
        }
        // SAFETY: an object of type `kind` begins with a `PyDescrObject`
        // (the caller's contract).
        let owner = unsafe { (*descriptor.as_ptr().cast::<ffi::PyDescrObject>()).d_type };
        // SAFETY: attached; both are live types (`owner` is held by the
        // descriptor, `ty` by the caller).
        if unsafe { ffi::PyType_IsSubtype(ty.as_type_ptr(), owner) } == 0 {
            return None;
        }
        // SAFETY: an object of type `kind` is a `D` (the caller's contract),
        // alive while `descriptor` is borrowed.
        Some((unsafe { &*descriptor.as_ptr().cast::<D>() }, owner))
    }

    /// The C getter of a getset descriptor of `ty`.
    fn getter_of(
        descriptor: &Bound<'_, PyAny>,
        ty: &Bound<'_, PyType>,
    ) -> Option<(ffi::getter, *mut c_void, *mut ffi::PyTypeObject)> {
        let kind = &raw mut ffi::PyGetSetDescr_Type;
        // SAFETY: attached; getset descriptors are `PyGetSetDescrObject`s.
        let (descriptor, owner) =
            unsafe { descriptor_of::<ffi::PyGetSetDescrObject>(descriptor, kind, ty) }?;
        // SAFETY: its definition lives as long as its class (torch's, static).
        let definition = unsafe { &*descriptor.d_getset };
        Some((definition.get?, definition.closure, owner))
    }

    /// The C function of a method descriptor of `ty` whose method takes no
    /// arguments.
    fn method_of(
        descriptor: &Bound<'_, PyAny>,
        ty: &Bound<'_, PyType>,
    ) -> Option<(ffi::PyCFunction, *mut ffi::PyTypeObject)> {
        let kind = &raw mut ffi::PyMethodDescr_Type;
        // SAFETY: attached; method descriptors are `PyMethodDescrObject`s.
        let (descriptor, owner) =
            unsafe { descriptor_of::<ffi::PyMethodDescrObject>(descriptor, kind, ty) }?;
        // SAFETY: its definition lives as long as its class (torch's, static).
        let definition = unsafe { &*descriptor.d_method };
        if definition.ml_flags != ffi::METH_NOARGS {
            return None;
        }
        // SAFETY: with METH_NOARGS the union holds a `PyCFunction`.
        Some((unsafe { definition.ml_meth.PyCFunction }, owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// torch's answers through the direct calls equal its answers through
    /// Python, for tensors where each is true and where it is false (with
    /// torch installed; the Makefile's test run has it).
    #[test]
    fn direct_answers_are_torchs_answers() {
        Python::attach(|py| {
            let Ok(torch) = py.import("torch") else {
                return;
            };
            let ty = torch
                .getattr("Tensor")
                .unwrap()
                .cast_into::<PyType>()
                .unwrap();
            let checks = TorchChecks::of(&ty).unwrap();
            #[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy)))]
            assert!(
                checks.direct.is_some(),
                "torch's descriptors not recognised"
            );
            let code = c"import torch
z = torch.zeros(3, dtype=torch.complex64)
tensors = [torch.zeros(3), torch.zeros(3, requires_grad=True), z, z.conj(), z.conj().imag]";
            let globals = pyo3::types::PyDict::new(py);
            py.run(code, Some(&globals), None).unwrap();
            let tensors = globals.get_item("tensors").unwrap().unwrap();
            let mut seen = [[false; 2]; 3];
            for tensor in tensors.try_iter().unwrap() {
                let tensor = tensor.unwrap();
                for (index, question) in [Question::RequiresGrad, Question::IsConj, Question::IsNeg]
                    .into_iter()
                    .enumerate()
                {
                    let direct = checks.ask(&tensor, question).unwrap();
                    assert_eq!(direct, question.through_python(&tensor).unwrap());
                    seen[index][usize::from(direct)] = true;
                }
            }
            assert_eq!(seen, [[true; 2]; 3], "each answer seen both ways");
        });
    }
}
