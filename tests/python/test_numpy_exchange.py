"""Exchange with NumPy alone: the suite `make abi3-test` runs with the abi3 wheel on
CPython 3.9 (NumPy 2.0.2), 3.10 (NumPy 2.2.6) and 3.13 (the pinned NumPy), and
`make py-test` on the main interpreter. Python 3.9 syntax; NumPy only.

What differs with the NumPy version is asserted, not skipped:
- NumPy < 2.1 exports legacy capsules only (no `max_version`), of writable arrays only;
  a writable array is still writable from Rust (its `flags.writeable` is asked);
- NumPy < 2.2 makes every `from_dlpack` import read-only, ours included (2.2.6 on CPython 3.10
  already honours the flag: measured);
- `Native::numpy` (the NumPy C API, no DLPack on the way) is writable on every version.
"""

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import numpy_arange

NUMPY = np.lib.NumpyVersion(np.__version__)
VERSIONED = NUMPY >= "2.1.0"  # __dlpack__(max_version=...) and versioned capsules
WRITABLE_IMPORTS = NUMPY >= "2.2.0"  # from_dlpack honours READ_ONLY instead of forcing it

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_imports_our_export_without_a_copy(dtype):
    t = ext.arange(dtype, 7)
    a = np.from_dlpack(t)
    assert address(a) == t.data_ptr
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, numpy_arange(dtype, 7))
    assert a.flags.writeable == WRITABLE_IMPORTS


def test_the_value_lives_while_numpy_holds_it_and_drops_once(drops):
    t = ext.arange("float64", 5)
    a = np.from_dlpack(t)
    del t
    assert drops.dropped == 0
    np.testing.assert_array_equal(a, np.arange(5.0))
    del a
    assert drops.dropped == 1
    assert drops.live == 0


def test_our_export_negotiates_the_capsule_numpy_asks_for(capsule_view):
    calls = []

    class Recorder:
        def __init__(self, inner):
            self.inner = inner

        def __dlpack__(self, **kwargs):
            calls.append(sorted(kwargs))
            return self.inner.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.inner.__dlpack_device__()

    t = ext.arange("int32", 3)
    a = np.from_dlpack(Recorder(t))
    assert address(a) == t.data_ptr
    assert ("max_version" in calls[0]) == VERSIONED
    assert capsule_view(t.__dlpack__()).name == "dltensor"
    assert capsule_view(t.__dlpack__(max_version=(1, 0))).version == (1, 3)


def as_rust_list(a):
    """The elements as the test extension lists them (complex as (re, im) pairs)."""
    if a.dtype.kind == "c":
        return [(z.real, z.imag) for z in a.ravel().tolist()]
    return a.ravel().tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_rust_imports_numpy_arrays_of_every_dtype(dtype):
    a = numpy_arange(dtype, 6)
    d = ext.describe(a)
    assert d["dtype"] == dtype
    assert d["data_ptr"] == address(a)
    assert d["shape"] == (6,)
    assert d["version"] == ((1, 0) if VERSIONED else None)
    assert d["writability"] == "Writable"
    if dtype != "bool":  # no Rust view type: bool is not a PlainElement
        assert ext.to_list(a, dtype) == as_rust_list(a)


def test_strided_negative_and_empty_layouts_arrive_as_numpy_has_them():
    m = np.arange(12.0).reshape(3, 4)
    for view in (m, m.T, m[::-1], m[:, ::2], m[1:2, 3:], np.zeros((0, 3))):
        d = ext.describe(view)
        assert d["shape"] == view.shape
        if view.size:
            # A dimension of extent 1 may have any stride (NumPy 2.0 exports 1 there),
            # and an empty array any strides at all (NumPy 2.0's own are 0).
            expected = tuple(s // view.itemsize for s in view.strides)
            assert [s for s, n in zip(d["strides"], view.shape) if n > 1] == [
                s for s, n in zip(expected, view.shape) if n > 1
            ]
            assert d["data_ptr"] == address(view)
        assert ext.to_list(view, "float64") == as_rust_list(view)


def test_rust_writes_into_a_writable_numpy_array():
    # The guide's in-place example (arguments.md, `scale`): on NumPy 2.0 it needs the writeable
    # flag asked.
    a = np.zeros(4)
    ext.fill(a, 2.5)
    np.testing.assert_array_equal(a, [2.5] * 4)
    strided = np.zeros((3, 4))[:, ::2]
    ext.fill(strided, 1.0, through_ndarray=True)
    np.testing.assert_array_equal(strided, np.ones((3, 2)))


def test_a_read_only_numpy_array_is_not_written():
    a = np.arange(3.0)
    a.flags.writeable = False
    if VERSIONED:
        assert ext.describe(a)["writability"] == "ReadOnly"
        with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one$"):
            ext.fill(a, 1.0)
    else:
        # NumPy < 2.1 refuses to export it at all (no capsule can say read-only).
        with pytest.raises(BufferError, match="^Cannot export readonly array"):
            ext.fill(a, 1.0)
    np.testing.assert_array_equal(a, [0.0, 1.0, 2.0])


def test_a_numpy_array_goes_through_rust_and_back_without_a_copy():
    a = np.arange(6, dtype="int16").reshape(2, 3)
    out = ext.reexport(a)
    back = np.from_dlpack(out)
    assert address(back) == address(a)
    np.testing.assert_array_equal(back, a)
    assert back.flags.writeable == WRITABLE_IMPORTS


@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "complex64"])
def test_native_numpy_returns_are_writable_ndarrays_on_every_version(dtype):
    a = ext.native_arange("numpy", dtype, 5)
    assert type(a) is np.ndarray
    assert a.flags.writeable
    np.testing.assert_array_equal(a, numpy_arange(dtype, 5))


def test_bad_input_names_what_was_expected():
    with pytest.raises(
        TypeError,
        # abi3 builds for CPython < 3.11 have no buffer protocol (not in the limited API).
        match=r"^expected an object with __dlpack__, __cuda_array_interface__"
        r"(, __array_interface__ or the buffer protocol| or __array_interface__), "
        r"or a DLPack capsule, got list",
    ):
        ext.describe([1.0, 2.0])
    capsule = np.arange(2.0).__dlpack__()
    ext.describe(capsule)
    with pytest.raises(ValueError, match="^the DLPack capsule was already consumed"):
        ext.describe(capsule)

