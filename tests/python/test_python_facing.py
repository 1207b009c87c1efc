"""What Python users of an extension see of DLPackTensor: its docstring, its module, and
a type stub (DLPackTensor::PYI) that matches the class."""

import ast
import importlib
import inspect
import pathlib
import sys

import dlpack_testext as ext
from conftest import BUFFER_PROTOCOL

STUB = pathlib.Path(__file__).parents[2] / "pyo3-dlpack" / "src" / "export" / "tensor.pyi"


def stub_class():
    # `Any` (what `__array__` and `__jax_array__` return, so the stub needs no NumPy or JAX)
    # and `SupportsIndex` (pickle's protocol), the capsule type (typeshed's name for it on every
    # Python), `Self` (what copies return) and `disjoint_base` (PEP 800: a class with a C layout
    # of its own, as stubtest checks), then the class.
    (any_, capsule, cls) = ast.parse(STUB.read_text()).body
    assert ast.unparse(any_) == "from typing import Any, SupportsIndex"
    assert ast.unparse(capsule) == "from typing_extensions import CapsuleType, Self, disjoint_base"
    assert isinstance(cls, ast.ClassDef) and cls.name == "DLPackTensor"
    return cls


def test_the_docstring_speaks_python_and_carries_no_rust():
    doc = ext.DLPackTensor.__doc__
    assert doc.startswith("A tensor exported from Rust, shared with NumPy, PyTorch, JAX")
    assert "torch.from_dlpack" in doc and "__dlpack__(*, stream=None" in doc
    for rust in ("```", "pyfunction", "PyResult", "Python::attach", "use pyo3", "# "):
        assert rust not in doc, rust


def test_the_class_belongs_to_the_module_that_added_it():
    # maturin's layout: the extension is dlpack_testext/dlpack_testext.*.so.
    module = ext.DLPackTensor.__module__
    assert module == ext.dlpack_testext.__name__ == "dlpack_testext.dlpack_testext"
    assert importlib.import_module(module).DLPackTensor is ext.DLPackTensor
    assert repr(ext.DLPackTensor) == f"<class '{module}.DLPackTensor'>"
    assert type(ext.arange("float32", 2)) is ext.DLPackTensor


def test_the_stub_lists_exactly_the_public_members():
    declared = set()
    for node in stub_class().body:
        if isinstance(node, ast.FunctionDef):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    # Everything `object` has (`__repr__` included), and the class's own bookkeeping.
    inherited = set(dir(object)) | {"__module__", "__dict__", "__weakref__"}
    # Private: the class method pickles name (`_pyo3_dlpack_<series>_restore_v<format>`).
    private = {name for name in dir(ext.DLPackTensor) if name.startswith("_pyo3_dlpack_")}
    assert private == {"_pyo3_dlpack_0_4_restore_v1"}
    public = {name for name in dir(ext.DLPackTensor) if name not in inherited | private}
    # What the class overrides of `object`'s and its users call: pickling.
    public |= {"__reduce__", "__reduce_ex__"} & set(vars(ext.DLPackTensor))
    assert {"__reduce__", "__reduce_ex__"} <= public
    # `__buffer__` is the buffer protocol as Python 3.12+ shows it (PEP 688).
    assert declared - {"__buffer__"} == public - {"__buffer__"}
    assert "__buffer__" in declared


def test_stub_properties_are_properties_and_methods_match_their_signatures():
    for node in stub_class().body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name == "__buffer__" and (sys.version_info < (3, 12) or not BUFFER_PROTOCOL):
            continue  # the slot only (PEP 688 shows it as a method from 3.12); none in abi3-py39
        runtime = inspect.getattr_static(ext.DLPackTensor, node.name)
        is_property = any(getattr(d, "id", None) == "property" for d in node.decorator_list)
        assert is_property == inspect.isdatadescriptor(runtime), node.name
        if not is_property:
            args = node.args
            stub_params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            runtime_params = list(inspect.signature(runtime).parameters)
            assert stub_params == runtime_params, node.name
            kinds = [p.kind for p in inspect.signature(runtime).parameters.values()]
            assert kinds.count(inspect.Parameter.KEYWORD_ONLY) == len(node.args.kwonlyargs)
