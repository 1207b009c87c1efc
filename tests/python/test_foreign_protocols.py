"""Producers that speak no DLPack: the buffer protocol, __array_interface__ and
__cuda_array_interface__, imported as PyTensor (after __dlpack__ and capsules, in the order
CUDA array interface, array interface, buffer protocol)."""

import array
import ctypes
import gc
import mmap
import sys
import weakref

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import needs_buffer_protocol

LITTLE = sys.byteorder == "little"
FOREIGN = ">" if LITTLE else "<"


def address_of(buffer_like):
    return np.frombuffer(buffer_like, dtype="u1").__array_interface__["data"][0]


# ----------------------------------------------------------------- buffer protocol


ARRAY_CODES = {
    "b": "int8", "B": "uint8", "h": "int16", "H": "uint16", "i": "int32", "I": "uint32",
    "l": "int64", "L": "uint64", "q": "int64", "Q": "uint64", "f": "float32", "d": "float64",
}  # fmt: skip


@needs_buffer_protocol
@pytest.mark.parametrize("code", sorted(ARRAY_CODES))
def test_array_array_of_every_typecode_is_imported_in_place(code):
    a = array.array(code, [0, 1, 2, 3, 5])
    d = ext.describe(a)
    assert d["dtype"] == ARRAY_CODES[code]
    assert (d["shape"], d["strides"]) == ((5,), (1,))
    assert d["data_ptr"] == a.buffer_info()[0]
    assert d["writability"] == "Writable"
    assert ext.to_list(a, ARRAY_CODES[code]) == [0, 1, 2, 3, 5]


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "float64",
              "complex64", "complex128"],
)  # fmt: skip
@needs_buffer_protocol
def test_numpy_buffers_of_every_struct_format(dtype):
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    view = memoryview(a)
    d = ext.describe(view)
    assert d["dtype"] == dtype
    assert d["shape"] == (2, 3)
    assert d["data_ptr"] == a.__array_interface__["data"][0]
    if dtype != "bool":
        expected = a.ravel().tolist()
        if a.dtype.kind == "c":
            expected = [(z.real, z.imag) for z in expected]
        assert ext.to_list(view, dtype) == expected


@needs_buffer_protocol
def test_strided_and_negative_strides_arrive_as_the_buffer_has_them():
    base = np.arange(24.0).reshape(4, 6)
    for a in (base.T, base[::-1], base[:, ::-2], base[1:3, 2:5], base[::2, ::3]):
        view = memoryview(a)
        d = ext.describe(view)
        assert d["shape"] == a.shape
        assert d["strides"] == tuple(s // 8 for s in a.strides)
        assert d["data_ptr"] == a.__array_interface__["data"][0]
        assert ext.to_list(view, "float64") == a.ravel().tolist()


@needs_buffer_protocol
def test_a_zero_dimensional_buffer_is_a_scalar():
    x = ctypes.c_double(3.5)
    d = ext.describe(x)
    assert (d["shape"], d["dtype"], d["data_ptr"]) == ((), "float64", ctypes.addressof(x))
    assert ext.to_list(x, "float64") == [3.5]


@needs_buffer_protocol
def test_writability_comes_from_the_buffer():
    assert ext.describe(b"abc")["writability"] == "ReadOnly"
    with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one"):
        ext.fill(b"abc", 1.0, as_type="uint8")
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    assert ext.describe(memoryview(frozen))["writability"] == "ReadOnly"
    b = bytearray(4)
    ext.fill(b, 7.0, as_type="uint8")
    assert b == bytearray([7, 7, 7, 7])
    a = array.array("d", [0.0, 0.0])
    ext.fill(a, 1.5)
    assert a.tolist() == [1.5, 1.5]


@needs_buffer_protocol
def test_a_bytearray_cannot_be_resized_while_imported_and_is_released_once():
    b = bytearray(b"abcdef")
    first = ext.reexport(b)  # a DLPackTensor holding the import, so the view
    second = ext.reexport(b)
    with pytest.raises(BufferError, match="Existing exports of data: object cannot be re-sized"):
        b.extend(b"x")
    assert np.from_dlpack(first).tobytes() == b"abcdef"
    del first
    gc.collect()
    # The second import still holds its view: one release per import, not more.
    with pytest.raises(BufferError):
        b.extend(b"x")
    del second
    gc.collect()
    b.extend(b"x")
    assert b == bytearray(b"abcdefx")


@needs_buffer_protocol
def test_an_mmap_stays_open_while_imported(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(16)))
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), 16)
    held = ext.reexport(mm)
    with pytest.raises(BufferError, match="cannot close exported pointers exist"):
        mm.close()
    assert np.from_dlpack(held).tolist() == list(range(16))
    del held
    gc.collect()
    mm.close()


@needs_buffer_protocol
def test_foreign_byte_order_and_formats_without_a_dtype_are_refused():
    big = np.arange(3, dtype=FOREIGN + "f4")
    with pytest.raises(
        BufferError,
        match=r"^the buffer protocol describes elements of format '>f' in non-native byte "
        r"order: expected native \(little-endian\) order; swap the bytes first",
    ) if LITTLE else pytest.raises(BufferError):
        ext.describe(memoryview(big))
    # One byte has no byte order.
    assert ext.describe(memoryview(np.arange(3, dtype=FOREIGN + "i1")))["dtype"] == "int8"
    for unsupported, fmt in [
        (memoryview(bytearray(16)).cast("P"), "P"),
        (memoryview(np.zeros(2, dtype="U2")), "2w"),
        (memoryview(np.zeros(2, dtype=[("a", "i4"), ("b", "f4")])), None),
    ]:
        with pytest.raises(BufferError, match="has no DLPack dtype: expected a bool, integer, float"):
            ext.describe(unsupported)
        if fmt:
            with pytest.raises(BufferError, match=f"format '{fmt}'"):
                ext.describe(unsupported)


@needs_buffer_protocol
def test_the_buffer_protocol_can_be_turned_off():
    assert ext.import_with(b"ab", protocols=["buffer"])["dtype"] == "uint8"
    with pytest.raises(
        TypeError, match="^expected an object with __dlpack__ or __array_interface__, or a DLPack capsule, got bytes"
    ):
        ext.import_with(b"ab", protocols=["array_interface"])
    with pytest.raises(TypeError, match="^expected an object with __dlpack__, or a DLPack capsule, got bytes"):
        ext.import_with(b"ab", protocols=[])


# ----------------------------------------------------------------- __array_interface__


class ArrayInterface:
    """A producer that speaks only __array_interface__, describing `owner`'s memory."""

    def __init__(self, owner, **changes):
        self.owner = owner
        self.__array_interface__ = dict(owner.__array_interface__, **changes)


def test_an_array_interface_pointer_is_imported_in_place_and_its_producer_kept():
    a = np.arange(12, dtype="int32").reshape(3, 4)[::-1, 1:]
    p = ArrayInterface(a)
    alive = weakref.ref(p)
    held = ext.reexport(p)
    del p
    gc.collect()
    assert alive() is not None, "the producer lives as long as the import"
    back = np.from_dlpack(held)
    assert back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert back.tolist() == a.tolist()  # (np.testing keeps its arguments alive)
    del held, back
    gc.collect()
    assert alive() is None


class TemporaryInterface:
    """Describes memory only its interface dict keeps alive (NumPy's `__ref`
    convention), as a NumPy scalar's `__array_interface__` does."""

    def __init__(self, values):
        self.values = values

    @property
    def __array_interface__(self):
        temporary = np.array(self.values)
        return dict(temporary.__array_interface__, __ref=temporary)


def test_the_interface_dict_lives_as_long_as_the_import():
    # The memory of a NumPy scalar's interface is a temporary array that only
    # the dict keeps: the import dropped the dict, then read freed memory.
    for producer, expected in [
        (np.float64(1.5), [1.5]),
        (np.int16(-7), [-7]),
        (TemporaryInterface([2.5, 3.5, 4.5]), [2.5, 3.5, 4.5]),
    ]:
        held = ext.reexport(producer)
        clutter = [np.full(np.size(expected), 42.0) for _ in range(100)]  # reuses freed memory
        assert np.from_dlpack(held).ravel().tolist() == expected
        del clutter
    # Two scalars are two tensors, not one array passed twice.
    a, b = np.float64(1.0), np.float64(2.0)
    first, second = ext.reexport(a), ext.reexport(b)
    assert ext.describe(first)["data_ptr"] != ext.describe(second)["data_ptr"]


def test_array_interface_read_only_and_strides_are_honoured():
    a = np.arange(6.0)
    d = ext.describe(ArrayInterface(a, data=(a.__array_interface__["data"][0], True)))
    assert d["writability"] == "ReadOnly"
    t = np.arange(12.0).reshape(3, 4).T
    d = ext.describe(ArrayInterface(t))
    assert (d["shape"], d["strides"]) == ((4, 3), (1, 4))


@needs_buffer_protocol
def test_array_interface_data_may_be_a_buffer_with_an_offset():
    raw = bytearray(np.arange(8, dtype="<u2").tobytes())
    p = ArrayInterface(np.zeros(0), data=raw, offset=4, shape=(3,), typestr="<u2", strides=None)
    d = ext.describe(p)
    assert d["data_ptr"] == address_of(raw) + 4
    assert ext.to_list(p, "uint16") == [2, 3, 4]
    # The layout is checked against the buffer's length.
    with pytest.raises(ValueError, match=r"needs 18 bytes, but the buffer holds 16 bytes"):
        ext.describe(ArrayInterface(np.zeros(0), data=raw, offset=4, shape=(7,), typestr="<u2", strides=None))
    # An offset near 2^64: what it needs does not fit 64 bits (it was cut
    # to them: "needs 3 bytes, but the buffer holds 16 bytes").
    with pytest.raises(ValueError, match=r"needs 2\^64 - 1 bytes or more, but the buffer holds 16 bytes"):
        ext.describe(ArrayInterface(np.zeros(0), data=raw, offset=2**64 - 1, shape=(3,), typestr="<u2", strides=None))


def test_array_interface_refusals_name_what_was_expected():
    a = np.arange(4.0)
    cases = [
        (dict(mask=np.zeros(4, bool)), BufferError, r"^__array_interface__ describes a masked array"),
        (dict(typestr=FOREIGN + "f8"), BufferError, "non-native byte order"),
        (dict(typestr="|O8"), BufferError, r"format '\|O8', which has no DLPack dtype"),
        (dict(strides=(12,)), BufferError, "^__array_interface__ gives a stride of 12 bytes: expected a multiple of the element size, 8 bytes"),
        (dict(version=2), ValueError, "^__array_interface__: expected version 3, got 2"),
        (dict(shape=[4]), ValueError, r"^__array_interface__: shape must be a tuple of ints, got \[4\]"),
        (dict(offset=8), ValueError, r"^__array_interface__: offset must be 0 when data is an \(address, read_only\) tuple, got 8"),
    ]  # fmt: skip
    for changes, kind, message in cases:
        with pytest.raises(kind, match=message):
            ext.describe(ArrayInterface(a, **changes))


# ----------------------------------------------------------------- __cuda_array_interface__


class CudaArrayInterface:
    """A producer that speaks only __cuda_array_interface__, with a fake device pointer that
    must never be dereferenced."""

    def __init__(self, **fields):
        self.__cuda_array_interface__ = dict(
            shape=(2, 3), typestr="<f4", data=(0xDEAD0000, False), version=3, strides=None, stream=None
        )
        self.__cuda_array_interface__.update(fields)


def test_an_empty_cuda_array_needs_no_driver_and_is_a_cuda_tensor():
    d = ext.describe(CudaArrayInterface(shape=(0, 3), data=(0, False)))
    assert d["device"] == (2, 0)
    assert d["shape"] == (0, 3)


def test_a_cuda_array_needs_the_driver_for_its_device_and_stream():
    with pytest.raises(BufferError) as raised:
        ext.describe(CudaArrayInterface())
    message = str(raised.value)
    # No driver here; on a GPU machine the fake pointer is refused by the driver instead.
    assert message.startswith(
        "__cuda_array_interface__ (to find the pointer's device and order the producer's "
        "stream) needs the CUDA driver, which could not be loaded: libcuda.so.1: "
    ) or message.startswith("the CUDA driver's cuPointerGetAttribute failed with CUresult ")


def test_cuda_array_interface_is_validated_before_the_driver_is_asked():
    cases = [
        (dict(mask=object()), BufferError, r"^__cuda_array_interface__ describes a masked array"),
        (dict(version=1), ValueError, "^__cuda_array_interface__: expected version 2 or 3, got 1"),
        (dict(stream=0), ValueError, r"^__cuda_array_interface__: stream must be None or a positive int \(0 is disallowed\), got 0"),
        (dict(typestr="<U4"), BufferError, "has no DLPack dtype"),
        (dict(data=(0, False)), ValueError, "^__cuda_array_interface__: data must be a non-NULL address for a non-empty array"),
        (dict(data=0xDEAD0000), ValueError, r"^__cuda_array_interface__: data must be an \(int, bool\) tuple, got 3735879680"),
        (dict(strides=(4,)), ValueError, "strides must be None or a tuple of ints, one per dimension"),
    ]  # fmt: skip
    for changes, kind, message in cases:
        with pytest.raises(kind, match=message):
            ext.describe(CudaArrayInterface(**changes))


def test_the_cuda_array_interface_comes_before_the_array_interface():
    class Both(CudaArrayInterface):
        __array_interface__ = np.arange(3.0).__array_interface__

    both = Both(shape=(0,), data=(0, False))
    assert ext.describe(both)["device"] == (2, 0)
    assert ext.import_with(both, protocols=["array_interface"])["device"] == (1, 0)


def test_dlpack_comes_first():
    class Everything(np.ndarray):
        @property
        def __cuda_array_interface__(self):
            raise AssertionError("a DLPack producer is imported through __dlpack__")

    a = np.arange(3.0).view(Everything)
    assert ext.describe(a)["version"] == (1, 0)


@needs_buffer_protocol
def test_locate_gives_a_host_view_or_a_device_description_in_one_match():
    assert ext.locate(np.ones(3, "f4")) == ("host", 3.0, None)
    assert ext.locate(array.array("f", [1.0, 2.0])) == ("host", 3.0, None)
    # Device memory is described, never read: a host buffer declared as cuda:1, which the
    # producer was asked for on CUDA's legacy default stream.
    assert ext.locate(ext.on_device(4, 2, 1)) == ("cuda:1", None, 1)
    assert ext.locate(CudaArrayInterface(shape=(0, 3), data=(0, False))) == ("cuda:0", None, None)
    with pytest.raises(TypeError, match="^expected a float32 tensor, got float64"):
        ext.locate(np.ones(3))


INTERFACE_DTYPES = ["bool", "int8", "uint8", "int16", "uint32", "int64", "float16", "float32",
                    "float64", "complex64", "complex128"]  # fmt: skip


@pytest.mark.parametrize("dtype", INTERFACE_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "negative"])
def test_array_interface_of_every_dtype_and_layout(dtype, layout):
    base = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    a = {"contiguous": base, "strided": base[:, ::2], "negative": base[::-1, ::-1]}[layout]
    d = ext.describe(ArrayInterface(a))
    assert d["dtype"] == dtype
    assert d["shape"] == a.shape
    assert d["strides"] == tuple(s // a.itemsize for s in a.strides)
    assert d["data_ptr"] == a.__array_interface__["data"][0]
    assert np.from_dlpack(ext.reexport(ArrayInterface(a))).tolist() == a.tolist()


@pytest.mark.parametrize("dtype", INTERFACE_DTYPES)
def test_cuda_array_interface_typestrs_of_every_dtype(dtype):
    typestr = np.dtype(dtype).str
    d = ext.describe(CudaArrayInterface(shape=(0, 2), data=(0, True), typestr=typestr))
    assert (d["dtype"], d["device"], d["writability"]) == (dtype, (2, 0), "ReadOnly")
