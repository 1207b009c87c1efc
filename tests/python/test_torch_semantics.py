"""What torch users see of an import, kept on the fast path: torch's C exchange table is
used for exact `torch.Tensor`s, except where Python code asked for its own `__dlpack__` to
run, as `np.from_dlpack` honours it: an active `TorchFunctionMode` (it sees
`Tensor.__dlpack__`), or a `__dlpack__` set on the tensor itself."""

import numpy as np
import pytest

import dlpack_testext as ext

torch = pytest.importorskip("torch")
from torch.overrides import TorchFunctionMode  # noqa: E402


class Recording(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_an_active_torch_function_mode_sees_the_import_as_numpy_would_make_it_see():
    t = torch.arange(4.0)
    with Recording() as numpy_mode:
        np.from_dlpack(t)
    with Recording() as our_mode:
        d = ext.describe(t)
    assert "__dlpack__" in numpy_mode.seen
    assert "__dlpack__" in our_mode.seen
    assert d["data_ptr"] == t.data_ptr()
    # Without a mode, the C table: no __dlpack__ call.
    assert ext.describe(t)["data_ptr"] == t.data_ptr()


def test_a_mode_that_changes_the_export_is_obeyed():
    class Doubling(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "__dlpack__":
                # The mode is not active while its handler runs.
                return (args[0] * 2).__dlpack__(**(kwargs or {}))
            return func(*args, **(kwargs or {}))

    t = torch.arange(3.0)
    with Doubling():
        values = ext.to_list(t, "float32")
    assert values == [0.0, 2.0, 4.0]
    assert ext.to_list(t, "float32") == [0.0, 1.0, 2.0]


def test_a_dlpack_of_the_tensors_own_is_called():
    t = torch.arange(3.0)
    calls = []

    def own(**kwargs):
        calls.append(kwargs)
        return torch.Tensor.__dlpack__(t, **kwargs)

    t.__dlpack__ = own
    assert ext.describe(t)["data_ptr"] == t.data_ptr()
    assert len(calls) == 1
    del t.__dlpack__
    ext.describe(t)
    assert len(calls) == 1, "the C table again once the attribute is gone"


def test_a_failing_dlpack_of_the_tensors_own_fails_the_import_with_its_error():
    t = torch.arange(2.0)

    def broken(**kwargs):
        raise ZeroDivisionError("the tensor's own __dlpack__")

    t.__dlpack__ = broken
    with pytest.raises(ZeroDivisionError, match="the tensor's own __dlpack__"):
        ext.describe(t)
    with pytest.raises(ZeroDivisionError):
        np.from_dlpack(t)


def test_other_attributes_of_the_tensor_keep_the_c_table(monkeypatch):
    # The type's __dlpack__ (patched to count) is never called on the C path, however the
    # tensor's own attributes are stored: none, some, or its own __dlpack__ bound to itself.
    calls = []
    original = torch.Tensor.__dlpack__

    def counting(self, **kwargs):
        calls.append(kwargs)
        return original(self, **kwargs)

    monkeypatch.setattr(torch.Tensor, "__dlpack__", counting)
    plain, labelled, rebound = torch.arange(3.0), torch.arange(3.0), torch.arange(3.0)
    labelled.label, labelled.scale = "x", 2.0
    rebound.__dlpack__ = rebound.__dlpack__  # the type's function, bound to the tensor
    for t in (plain, labelled, rebound):
        assert ext.describe(t)["data_ptr"] == t.data_ptr()
    assert calls == []
    labelled.__dlpack__ = lambda **kwargs: original(labelled, **kwargs)
    assert ext.describe(labelled)["data_ptr"] == labelled.data_ptr()
    np.from_dlpack(plain)
    assert len(calls) == 1, "NumPy calls the type's __dlpack__; the lambda is not counted"


def test_numpy_scalars_are_numpys():
    for scalar in [np.float64(1.5), np.int8(3), np.bool_(True), np.complex64(1j)]:
        assert ext.framework_of(scalar) == "NumPy", type(scalar)
    assert ext.framework_of(1.5) is None
