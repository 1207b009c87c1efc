"""The trust boundary: nothing a pure-Python program does may crash the process or get a
wrong answer from a fast path. Objects that claim a framework's name, buffer requests of
every flag, buffers without strides."""

import ctypes
import re

import numpy as np
import pytest

import dlpack_testext as ext

from conftest import needs_buffer_protocol
from conftest import run_fresh as conftest_run_fresh


def run_fresh(code):
    """`code` in a new interpreter, which must print nothing to stderr."""
    return conftest_run_fresh(code, silent=True)


# A bytes subclass that calls itself NumPy's array, with a `__dlpack__` of its own: read as
# a NumPy array, its bytes would be taken for NumPy's struct (a descriptor pointer made of
# caller-controlled bytes).
FAKE_NDARRAY = """
    import numpy as np
    import dlpack_testext as ext

    real = np.arange(6, dtype=np.float32)
    calls = []

    class Fake(bytes):
        def __dlpack__(self, **kwargs):
            calls.append(sorted(kwargs))
            return real.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (1, 0)

    Fake.__name__ = Fake.__qualname__ = {name!r}
    Fake.__module__ = {module!r}
    fake = Fake(b"\\xff" * 256)
"""


@pytest.mark.parametrize(
    "name, module", [("numpy.ndarray", "builtins"), ("ndarray", "numpy")], ids=["c-name", "module"]
)
def test_a_class_named_numpy_ndarray_is_asked_through_its_own_dlpack(name, module):
    out = run_fresh(
        FAKE_NDARRAY.format(name=name, module=module)
        + """
    # Before any real array was seen, and after.
    first = ext.describe(fake)
    assert len(calls) == 1, calls
    assert ext.describe(real)["data_ptr"] == real.ctypes.data
    second = ext.describe(fake)
    assert len(calls) == 2, calls
    for d in (first, second):
        assert d["shape"] == (6,) and d["dtype"] == "float32", d
        assert d["data_ptr"] == real.ctypes.data
    assert ext.to_list(fake, "float32") == list(range(6))
    print("ok")
    """
    )
    assert out == "ok\n"


def test_a_class_named_numpy_ndarray_is_no_framework_array():
    out = run_fresh(
        FAKE_NDARRAY.format(name="ndarray", module="numpy")
        + """
    assert ext.framework_of(real) == "NumPy"
    assert ext.framework_of(fake) is None
    assert ext.framework_of(np.ma.masked_array([1.0])) == "NumPy", "subclasses are arrays"
    print("ok")
    """
    )
    assert out == "ok\n"


# A DLPackTensor subclass that calls itself torch.Tensor and has torch's per-tensor state:
# after a real torch tensor was imported, torch's C getters would be called on it.
FAKE_TORCH = """
    import torch
    import dlpack_testext as ext

    assert ext.describe(torch.ones(3))["shape"] == (3,)  # torch's checks found
    t = ext.arange("float32", 4)

    class Tensor(type(t)):
        __slots__ = ()  # the layout of its base, so that `__class__` can be assigned
        requires_grad = False

        def is_conj(self):
            return False

        def is_neg(self):
            return False

    Tensor.__module__ = "torch"
    Tensor.__qualname__ = "Tensor"
"""


def test_a_class_named_torch_tensor_gets_no_call_of_torchs_c_functions():
    out = run_fresh(
        FAKE_TORCH
        + """
    t.__class__ = Tensor
    d = ext.describe(t)
    assert d["shape"] == (4,) and d["dtype"] == "float32", d
    assert ext.to_list(t, "float32") == [0.0, 1.0, 2.0, 3.0]
    assert ext.framework_of(t) is None
    assert ext.framework_of(torch.ones(1)) == "Torch"
    print("ok")
    """
    )
    assert out == "ok\n"


class Py_buffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)), ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]  # fmt: skip


# Function objects of this module's own (`ctypes.pythonapi`'s are shared with other test
# modules, which set their own argument types).
GetBuffer = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int)(
    ("PyObject_GetBuffer", ctypes.pythonapi)
)
Release = ctypes.PYFUNCTYPE(None, ctypes.POINTER(Py_buffer))(("PyBuffer_Release", ctypes.pythonapi))


def answer(obj, flags):
    """What a C consumer gets for `PyObject_GetBuffer(obj, flags)`: the exception type, or
    (buf, len, itemsize, readonly, ndim, format, shape, strides), released at once."""
    view = Py_buffer()
    try:
        GetBuffer(obj, ctypes.byref(view), flags)
    except Exception as err:  # noqa: BLE001 - the type is the answer
        return type(err)
    try:
        ndim = view.ndim
        # A 0-d view's shape and strides hold nothing, NULL or not.
        shape = None if not view.shape or ndim == 0 else tuple(view.shape[i] for i in range(ndim))
        strides = None if not view.strides or ndim == 0 else tuple(view.strides[i] for i in range(ndim))
        return (view.buf, view.len, view.itemsize, view.readonly, ndim, view.format, shape, strides)
    finally:
        Release(ctypes.byref(view))


def layouts():
    """Arrays over one base allocation, in the layouts a buffer consumer can be handed."""
    base = np.arange(2 * 3 * 4, dtype=np.float32)
    cube = base.reshape(2, 3, 4)
    yield "row-major", base, cube
    yield "column-major", base, np.asfortranarray(cube)
    yield "transposed", base, cube.T
    yield "reversed", base, base[::-1]
    yield "every other", base, base[::2]
    yield "reversed rows", base, cube[:, ::-1, :]
    yield "one column", base, cube[:, :, 1]
    yield "broadcast", base, np.broadcast_to(base[:1], (5,))
    yield "row vector", base, cube[:1, :1, :]
    yield "0-d", base, base[3:4].reshape(())
    yield "read-only", base, np.frombuffer(base.tobytes(), dtype=np.float32).reshape(4, 6)


# Every combination of the request bits of PEP 3118 (PyBUF_WRITABLE 0x1 to PyBUF_INDIRECT 0x100).
FLAG_BITS = [0x1, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100]
ALL_FLAGS = sorted({sum(b for i, b in enumerate(FLAG_BITS) if mask >> i & 1) for mask in range(256)})


def unit_strides_cleared(answer):
    shape, strides = answer[6], answer[7]
    if shape is None or strides is None:
        return answer
    return answer[:7] + (tuple(0 if n == 1 else s for n, s in zip(shape, strides)),)


def reach(buf, length, itemsize, shape, strides):
    """The byte range [lo, hi) a consumer reads, walking `shape` with `strides` (or `len`
    bytes from `buf` without them)."""
    if strides is None:
        return buf, buf + length
    if any(n == 0 for n in shape or ()):
        return buf, buf
    lo = buf + sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    hi = buf + sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0) + itemsize
    return lo, hi


@needs_buffer_protocol
@pytest.mark.parametrize("name, base, array", list(layouts()), ids=[l[0] for l in layouts()])
def test_every_buffer_request_is_answered_as_memoryview_answers_it(name, base, array):
    """The oracle is CPython's own exporter: a memoryview of the same layout. Where a view
    is granted, what a consumer reads stays inside the memory the value owns."""
    mine = ext.asdlpack(array)
    owner = base if np.shares_memory(array, base) else array
    start, end = owner.ctypes.data, owner.ctypes.data + owner.nbytes
    for flags in ALL_FLAGS:
        expected = answer(memoryview(array), flags)
        got = answer(mine, flags)
        if isinstance(expected, tuple):
            assert isinstance(got, tuple), (flags, got)
            # Strides of extents of 1 are never walked: the export may rewrite them.
            assert unit_strides_cleared(got) == unit_strides_cleared(expected), (hex(flags), got, expected)
            assert got[0] == expected[0]
            lo, hi = reach(got[0], got[1], got[2], got[6], got[7])
            assert start <= lo <= hi <= end, (hex(flags), got)
        else:
            assert got is BufferError, (hex(flags), got, expected)


@needs_buffer_protocol
def test_the_out_of_bounds_requests_of_the_report_are_refused():
    """Reported: negative strides with `len` 32 handed to a C-contiguous request (24 bytes
    read past the allocation); zero strides; row-major 2x3 for a Fortran request."""
    PyBUF_C, PyBUF_F, PyBUF_ANY = 0x38, 0x58, 0x98
    reversed_ = ext.asdlpack(np.arange(8, dtype=np.float32)[::-1])
    zero = ext.asdlpack(np.broadcast_to(np.float32(1), (4,)))
    rows = ext.asdlpack(np.zeros((2, 3), np.float32))
    for t in (reversed_, zero):
        for flags in (PyBUF_C, PyBUF_F, PyBUF_ANY, 0):
            with pytest.raises(BufferError, match="expected a (C-|Fortran-|C- or Fortran-)contiguous"):
                answer_or_raise(t, flags)
    with pytest.raises(BufferError, match="got shape \\[2, 3\\] with strides \\[3, 1\\]"):
        answer_or_raise(rows, PyBUF_F)
    assert answer(rows, PyBUF_C)[1] == 24
    assert answer(rows, PyBUF_ANY)[1] == 24


def answer_or_raise(obj, flags):
    view = Py_buffer()
    GetBuffer(obj, ctypes.byref(view), flags)
    Release(ctypes.byref(view))


@needs_buffer_protocol
def test_ctypes_arrays_are_c_contiguous_without_strides():
    ints = (ctypes.c_int32 * 3)(7, 8, 9)
    d = ext.describe(ints)
    assert (d["shape"], d["strides"], d["dtype"]) == ((3,), (1,), "int32")
    assert d["data_ptr"] == ctypes.addressof(ints)
    assert ext.to_list(ints, "int32") == [7, 8, 9]
    grid = ((ctypes.c_double * 3) * 2)((1, 2, 3), (4, 5, 6))
    d = ext.describe(grid)
    assert (d["shape"], d["strides"], d["dtype"]) == ((2, 3), (3, 1), "float64")
    assert ext.to_list(grid, "float64") == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_python_error_of_user_code_reaches_python_as_itself():
    t = ext.fails_to_synchronize("python")
    with pytest.raises(RuntimeError, match="^the camera has not delivered the frame$"):
        t.__dlpack__(stream=1, max_version=(1, 3))


def test_a_rust_error_of_user_code_is_a_value_error_with_its_message():
    t = ext.fails_to_synchronize("rust")
    with pytest.raises(ValueError, match="^the weights file is truncated$"):
        t.__dlpack__(stream=1, max_version=(1, 3))


def test_a_panic_of_user_code_is_pyo3s_panic_exception_with_its_message():
    t = ext.fails_to_synchronize("boom")
    for _ in range(2):  # the object survives its panic: a later export fails the same way
        with pytest.raises(BaseException, match="^synchronize panicked: boom$") as caught:
            t.__dlpack__(stream=1, max_version=(1, 3))
        assert type(caught.value).__name__ == "PanicException"
        assert not isinstance(caught.value, Exception), "PyO3's: a BaseException"


@pytest.mark.parametrize("max_version", [b"\x01\x03", range(1, 4, 2), [1, 3]], ids=["bytes", "range", "list"])
def test_max_version_is_a_tuple_as_numpy_requires(max_version):
    t = ext.arange("float32", 2)
    with pytest.raises(ValueError, match="^max_version must be a \\(major, minor\\)"):
        t.__dlpack__(max_version=max_version)
    with pytest.raises(TypeError):  # NumPy's own refusal, for comparison
        np.arange(2.0).__dlpack__(max_version=max_version)


class ArrayInterface:
    def __init__(self, array, data=None, shape=None):
        self.array = array
        self.__array_interface__ = dict(array.__array_interface__)
        if data is not None:
            self.__array_interface__["data"] = data
        if shape is not None:
            self.__array_interface__["shape"] = shape


def test_the_array_interfaces_read_only_flag_is_read_by_truth_value():
    a = np.arange(3.0)
    address = a.__array_interface__["data"][0]
    assert ext.describe(ArrayInterface(a, data=(address, 1)))["writability"] == "ReadOnly"
    assert ext.describe(ArrayInterface(a, data=(address, 0)))["writability"] == "Writable"
    assert ext.describe(ArrayInterface(a, data=(address, [])))["writability"] == "Writable"


def test_a_read_only_flag_whose_truth_raises_raises_that_error():
    class Refuses:
        def __bool__(self):
            raise RuntimeError("no truth here")

    a = np.arange(3.0)
    address = a.__array_interface__["data"][0]
    # Was the generic "data must be an (int, bool) tuple" ValueError.
    with pytest.raises(RuntimeError, match="^no truth here"):
        ext.describe(ArrayInterface(a, data=(address, Refuses())))


@pytest.mark.parametrize("returned", [None, "ab", {}, (1.0, 0), (1, 0, 0), [1]])
def test_a_dlpack_device_of_the_wrong_type_is_a_type_error(returned):
    a = np.arange(3.0)

    class Lies:
        def __dlpack__(self, **kwargs):
            return a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return returned

    message = rf"^Lies.__dlpack_device__\(\) returned {re.escape(repr(returned))}, expected a \(device_type, device_id\) tuple"
    with pytest.raises(TypeError, match=message):
        ext.describe(Lies())


class ImportsItself:
    """A producer whose `__dlpack__` imports itself, unboundedly."""

    calls = 0

    def __dlpack__(self, **kwargs):
        ImportsItself.calls += 1
        return ext.describe(self)


class Wraps:
    """A producer whose `__dlpack__` imports the producer it wraps."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, **kwargs):
        return ext.asdlpack(self.inner).__dlpack__(**kwargs)


def imports_itself_until_refused():
    ImportsItself.calls = 0
    with pytest.raises(RecursionError, match="while importing a tensor"):
        ext.describe(ImportsItself())
    return ImportsItself.calls


def test_a_dlpack_that_imports_itself_ends_in_recursion_error_not_a_crash():
    # Unbounded, it overflowed the C stack (SIGSEGV) before Python's limit:
    # the Rust frames of each level are not Python frames.
    assert imports_itself_until_refused() == 32
    # Every level was left: the next import starts from none.
    assert imports_itself_until_refused() == 32
    a = np.arange(3.0)
    producer = a
    for _ in range(31):
        producer = Wraps(producer)
    assert ext.describe(producer)["shape"] == (3,)


def test_recursion_levels_are_counted_per_thread():
    # A thread with a small stack (512 KiB) still ends in RecursionError.
    import threading

    results = []
    previous = threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=lambda: results.append(imports_itself_until_refused()))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert results == [32]


def test_an_extent_beyond_int64_is_out_of_range_not_a_wrong_type():
    a = np.arange(3.0)
    with pytest.raises(OverflowError, match="^an entry of the shape of __array_interface__ must be an integer in range"):
        ext.describe(ArrayInterface(a, shape=(2**63,)))
    with pytest.raises(ValueError, match="shape.*a tuple of ints"):
        ext.describe(ArrayInterface(a, shape=(3.0,)))


def test_a_python_error_of_a_copy_exports_description_reaches_python_as_itself():
    t = ext.described_once(4)
    with pytest.raises(RuntimeError, match="^the frame was recycled$"):
        t.__dlpack__(max_version=(1, 3), copy=True)


def test_a_fake_torch_module_does_not_decide_what_torch_tensor_is():
    out = run_fresh(
        """
    import sys, types
    fake = types.ModuleType("torch")

    class Tensor:
        requires_grad = False

    fake.Tensor = Tensor
    sys.modules["torch"] = fake
    import dlpack_testext as ext

    assert ext.framework_of(Tensor()) is None
    del sys.modules["torch"]
    import torch

    assert ext.framework_of(torch.ones(1)) == "Torch"
    assert ext.describe(torch.ones(3))["shape"] == (3,)
    print("ok")
    """
    )
    assert out == "ok\n"


def test_a_fake_numpy_api_table_is_refused_before_any_slot_is_called():
    out = run_fresh(
        """
    import sys, types
    import numpy as np
    import numpy._core._multiarray_umath as umath
    import dlpack_testext as ext

    real = sys.modules["numpy._core.multiarray"]
    fake = types.ModuleType("numpy._core.multiarray")
    fake._ARRAY_API = umath._UFUNC_API  # another capsule without a name
    fake.ndarray = np.ndarray
    sys.modules["numpy._core.multiarray"] = fake
    try:
        ext.native_arange("numpy", "float32", 3)
    except ImportError as err:
        assert "does not name numpy's ndarray" in str(err), err
    else:
        raise AssertionError("the fake table was used")
    a = np.arange(3.0)
    assert ext.describe(a)["data_ptr"] == a.ctypes.data  # through NumPy's __dlpack__
    sys.modules["numpy._core.multiarray"] = real
    assert isinstance(ext.native_arange("numpy", "float32", 3), np.ndarray)
    print("ok")
    """
    )
    assert out == "ok\n"


def test_framework_of_reads_the_type_not_a_class_attribute():
    import torch
    from unittest import mock

    assert ext.framework_of(mock.Mock(spec=torch.Tensor)) is None
    assert ext.framework_of(torch.nn.Parameter(torch.ones(1))) == "Torch"


def test_one_aliasing_registry_serves_every_extension_module_in_the_process():
    """A view held by this test extension excludes a mutable view of the same memory taken
    by another extension module built on pyo3-dlpack (the matrix-ops example), and the
    other way round; both publish and use the one registry in `sys`."""
    matrix_ops = pytest.importorskip("matrix_ops")
    a = np.ones((2, 2), dtype=np.float32)
    held = ext.hold_view(a)  # a shared view, alive
    with pytest.raises(TypeError, match="^another imported tensor shares this memory"):
        matrix_ops.scale_(a, 3.0)
    del held
    matrix_ops.scale_(a, 3.0)  # alone now
    assert a.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    writer = ext.hold_view(a, mutable=True)
    with pytest.raises(TypeError, match="^another imported tensor shares this memory"):
        matrix_ops.trace(a)
    del writer
    assert matrix_ops.trace(a) == 6.0
    import sys

    assert type(getattr(sys, "_pyo3_dlpack_aliasing_registry_v1")).__name__ == "PyCapsule"


def test_an_unknown_keyword_is_named_without_its_own_str_and_nothing_reaches_stderr():
    out = run_fresh(
        """
    import dlpack_testext as ext

    class Evil(str):
        def __str__(self):
            raise RuntimeError("no str for you")

    t = ext.arange("float32", 2)
    try:
        t.__dlpack__(**{Evil("bogus"): 1})
    except TypeError as err:
        assert str(err) == "DLPackTensor.__dlpack__() got an unexpected keyword argument 'bogus'", err
    print("ok")
    """
    )
    assert out == "ok\n"


def test_a_failed_exchange_export_is_followed_by_one_dlpack_call_not_two():
    producer = ext.FailingExchange(3)
    d = ext.describe(producer)
    assert (d["shape"], d["dtype"]) == ((3,), "float32")
    assert producer.calls == 1
    assert ext.to_list(producer, "float32") == [0.0, 0.0, 0.0]
    assert producer.calls == 2


def test_framework_of_is_total_and_allocate_like_takes_ndarray_subclasses():
    class NoModule:
        pass

    NoModule.__module__ = None
    assert ext.framework_of(NoModule()) is None
    NoModule.__module__ = 42
    assert ext.framework_of(NoModule()) is None

    class Sub(np.ndarray):
        pass

    like = np.zeros(3, dtype=np.float32).view(Sub)
    assert ext.framework_of(like) == "NumPy"
    out = ext.allocate_filled(like, [2], "float32")
    assert type(out) is np.ndarray and out.tolist() == [0.0, 1.0]
