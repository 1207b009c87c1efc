"""Exact `numpy.ndarray`s are imported by reading the array (no `__dlpack__`
call, issue 13's lean import). What that path gives must be what NumPy's own
`__dlpack__` gives, which `import_with(a, copy=False)` still takes (any
non-default option keeps the `__dlpack__` path); what NumPy refuses is still
refused by NumPy; the array stays alive exactly as long as the import."""

import gc
import sys
import weakref

import numpy as np
import pytest

import dlpack_testext as ext


def _arrays():
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    read_only = np.arange(6, dtype=np.int32)
    read_only.flags.writeable = False
    unaligned = np.frombuffer(bytearray(8 * 4 + 1), dtype=np.uint8)[1:].view(np.float64)
    yield "0-d", np.array(3.5, dtype=np.float32)
    yield "empty", np.zeros((0, 3), dtype=np.int16)
    yield "contiguous 3-d", base
    yield "transposed", base.transpose(2, 0, 1)
    yield "negative strides", base[::-1, :, ::-2]
    yield "broadcast (zero strides)", np.broadcast_to(np.arange(3, dtype=np.uint64), (4, 3))
    yield "read-only", read_only
    yield "unaligned", unaligned
    yield "five dimensions", np.ones((1, 2, 1, 2, 3), dtype=np.complex64)
    yield "nine dimensions", np.ones((1,) * 9, dtype=np.uint16)
    for dtype in ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "e", "f", "d", "F", "D",
                  np.intc, np.uintc, np.int_, np.uint, np.longlong, np.ulonglong, "=f4", "<f4"]:
        yield f"dtype {np.dtype(dtype).str} ({np.dtype(dtype).name})", np.zeros(3, dtype=dtype)


ARRAYS = list(_arrays())

# NumPy before 2.1 exports legacy capsules only and takes no `copy=`: the
# direct read is not used there (see `import/numpy.rs`).
VERSIONED_NUMPY = tuple(int(p) for p in np.__version__.split(".")[:2]) >= (2, 1)


@pytest.mark.skipif(not VERSIONED_NUMPY, reason="NumPy < 2.1: no direct read, no copy=")
@pytest.mark.parametrize("name, a", ARRAYS, ids=[name for name, _ in ARRAYS])
def test_the_direct_read_describes_what_dlpack_describes(name, a):
    assert type(a) is np.ndarray
    direct = ext.describe(a)
    through_dlpack = ext.import_with(a, copy=False)
    assert direct == through_dlpack
    assert direct["data_ptr"] == a.__array_interface__["data"][0]
    assert direct["read_only"] == (not a.flags.writeable)


def test_the_array_is_held_while_imported_and_released_after():
    a = np.arange(5, dtype=np.float32)
    alive = weakref.ref(a)
    refs = sys.getrefcount(a)
    held = ext.reexport(a)  # a DLPackTensor owning the import
    assert sys.getrefcount(a) == refs + 1
    with pytest.raises(ValueError, match="referenced"):
        a.resize(10)  # NumPy's own refcheck: the import holds a reference
    del a
    gc.collect()
    assert alive() is not None
    back = np.from_dlpack(held)
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del held, back
    gc.collect()
    assert alive() is None


def test_a_mutable_view_writes_the_array_in_place():
    a = np.zeros(4)
    ext.fill(a, 7.0, "float64", False)
    assert a.tolist() == [7.0] * 4


def test_read_only_arrays_refuse_mutable_views():
    a = np.zeros(4)
    a.flags.writeable = False
    # NumPy before 2.1 refuses to export read-only arrays at all.
    expected = (TypeError, "read-only") if VERSIONED_NUMPY else (BufferError, "readonly")
    with pytest.raises(expected[0], match=expected[1]):
        ext.fill(a, 1.0, "float64", False)


@pytest.mark.parametrize("a, message", [
    (np.ones(3, dtype=">f4"), "native byte order"),
    (np.zeros(2, dtype=[("a", "f4"), ("b", "u1")])["a"], "multiple of itemsize"),
    (np.ones(2, dtype=np.longdouble), "IEEE floating point"),
])  # dtypes DLPack has no code for (strings, datetimes): test_typed_arguments.py
def test_what_numpy_refuses_is_refused_by_numpy(a, message):
    with pytest.raises(BufferError, match=message):
        ext.describe(a)


def test_subclasses_keep_their_own_dlpack():
    calls = []

    class Logged(np.ndarray):
        def __dlpack__(self, **kwargs):
            calls.append(kwargs)
            return np.asarray(self).__dlpack__(**kwargs)

    a = np.arange(3, dtype=np.float32).view(Logged)
    assert ext.describe(a)["shape"] == (3,)
    assert calls[0] == {"max_version": (1, 3)}  # then `{}` for NumPy < 2.1
    m = np.asmatrix(np.eye(2))
    assert ext.describe(m)["shape"] == (2, 2)


def test_the_same_array_twice_is_still_refused_a_mutable_view():
    a = np.zeros(4)
    with pytest.raises(TypeError, match="share"):
        ext.add_into(a, a)
