"""DLPackTensor out through the buffer protocol and __cuda_array_interface__, and
`asdlpack`, which makes any producer a DLPackTensor."""

import array
import ctypes
import gc

import numpy as np
import pytest
import torch

import dlpack_testext as ext

from conftest import needs_buffer_protocol
class Py_buffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p),
    ]  # fmt: skip


ctypes.pythonapi.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
ctypes.pythonapi.PyBuffer_Release.argtypes = [ctypes.POINTER(Py_buffer)]
PyBUF_SIMPLE, PyBUF_WRITABLE = 0, 1


def get_buffer(obj, flags):
    """PyObject_GetBuffer with exactly these flags, as a C consumer asks; released at once."""
    view = Py_buffer()
    ctypes.pythonapi.PyObject_GetBuffer(obj, ctypes.byref(view), flags)
    info = (view.len, view.itemsize, view.readonly, view.format, view.shape, view.strides)
    ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))
    return info


FORMATS = {
    "bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
    "uint32": "I", "int64": "q", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d",
    "complex64": "Zf", "complex128": "Zd",
}  # fmt: skip


@needs_buffer_protocol
@pytest.mark.parametrize("dtype", sorted(FORMATS))
def test_memoryview_of_every_dtype_with_a_format(dtype):
    t = ext.arange(dtype, 6)
    m = memoryview(t)
    assert (m.format, m.itemsize, m.shape, m.ndim) == (FORMATS[dtype], np.dtype(dtype).itemsize, (6,), 1)
    assert not m.readonly
    a = np.asarray(t)
    assert a.dtype == np.dtype(dtype)
    assert a.__array_interface__["data"][0] == t.data_ptr
    np.testing.assert_array_equal(a, np.from_dlpack(t))
    assert bytes(t) == np.from_dlpack(t).tobytes()


def test_numpy_asarray_is_zero_copy_and_writes_reach_rust():
    t = ext.arange("float32", 4)
    a = np.asarray(t)
    a[0] = 42.0
    assert ext.to_list(t, "float32")[0] == 42.0
    assert ext.read_byte(t, 3) == np.float32(42.0).tobytes()[3]


@needs_buffer_protocol
def test_strided_and_negative_stride_exports_keep_their_layout():
    data = np.arange(12, dtype="<f4").tobytes()
    t = ext.from_bytes(data, "float32", [3, 2], strides=[1, 3])  # a transposed 2x3
    m = memoryview(t)
    assert (m.shape, m.strides) == ((3, 2), (4, 12))
    assert not m.c_contiguous
    np.testing.assert_array_equal(np.asarray(t), np.arange(6, dtype="f4").reshape(2, 3).T)
    r = ext.from_bytes(data, "float32", [4], strides=[-1], byte_offset=12)
    assert memoryview(r).strides == (-4,)
    assert np.asarray(r).tolist() == [3.0, 2.0, 1.0, 0.0]
    assert bytes(t) == np.asarray(t).tobytes()  # bytes() copies through the strides
    # Consumers that cannot take strides are refused for non-contiguous tensors.
    with pytest.raises(
        BufferError,
        match=r"^expected a C-contiguous tensor for a strides-free buffer request, got shape \[3, 2\] "
        r"with strides \[1, 3\] \(in elements\)$",
    ):
        get_buffer(t, PyBUF_SIMPLE)
    # A simple request on a contiguous tensor: bytes, no shape, strides or format.
    assert get_buffer(ext.arange("float64", 3), PyBUF_SIMPLE) == (24, 8, 0, None, None, None)


@needs_buffer_protocol
def test_a_read_only_export_gives_a_read_only_buffer():
    t = ext.arange("int16", 3, storage="arc")  # Arc<[T]> exports read-only
    m = memoryview(t)
    assert m.readonly
    assert not np.asarray(t).flags.writeable
    with pytest.raises(BufferError, match="^expected a writable buffer request on a writable tensor, got one on a read-only tensor"):
        get_buffer(t, PyBUF_WRITABLE)
    assert get_buffer(ext.arange("int16", 3), PyBUF_WRITABLE)[2] == 0
    with pytest.raises(TypeError, match="underlying buffer is not writable"):
        (ctypes.c_int16 * 3).from_buffer(t)


@needs_buffer_protocol
def test_array_and_pil_read_the_buffer():
    t = ext.arange("float64", 3)
    assert array.array("d", memoryview(t)).tolist() == [0.0, 1.0, 2.0]
    a = array.array("d")
    a.frombytes(memoryview(t).cast("B"))  # frombytes takes 1-byte items, as for NumPy's
    assert a.tolist() == [0.0, 1.0, 2.0]
    pil = pytest.importorskip("PIL.Image")
    img = ext.from_bytes(bytes(range(12)), "uint8", [3, 4])
    image = pil.frombuffer("L", (4, 3), img, "raw", "L", 0, 1)
    assert image.tobytes() == bytes(range(12))
    assert image.getpixel((1, 2)) == 9


@needs_buffer_protocol
def test_dtypes_without_a_format_and_device_memory_are_refused():
    with pytest.raises(
        BufferError,
        match="^a bfloat16 tensor has no buffer-protocol format: expected bool, int8 to int64, uint8 to uint64, "
        "float16, float32, float64, complex64 or complex128",
    ):
        memoryview(ext.arange("bfloat16", 2))
    with pytest.raises(BufferError, match="^expected a tensor in host memory for the buffer protocol, got one on cuda:1"):
        memoryview(ext.on_device(4, 2, 1))


@needs_buffer_protocol
def test_the_value_lives_while_a_view_does_and_drops_once(drops):
    t = ext.arange("uint8", 5, storage="vec")
    m = memoryview(t)
    del t
    gc.collect()
    assert drops.dropped == 0
    assert m.tolist() == [0, 1, 2, 3, 4]
    m.release()
    assert drops.dropped == 1
    assert drops.live == 0


def test_cuda_array_interface_of_a_cuda_export_only():
    t = ext.on_device(4, 2, 1)  # host memory declared as cuda:1: described, never read
    cai = t.__cuda_array_interface__
    assert cai == {
        "shape": (4,), "typestr": "<f4", "data": (t.data_ptr, False), "version": 3,
        "strides": None, "descr": [("", "<f4")], "stream": 1,
    }  # fmt: skip
    assert not hasattr(ext.arange("float32", 2), "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="^a DLPackTensor on cpu:0 has no __cuda_array_interface__"):
        ext.arange("float32", 2).__cuda_array_interface__


# The stride of an axis of one element, and every stride of an empty tensor,
# is never used and may be any int64; in bytes it may not fit (stride 2^62 of
# float32). `__dlpack__` exported such layouts; the buffer protocol, the CUDA
# array interface and NumPy's native arrays overflowed (a panic from Python).
UNUSED_STRIDES = [
    ([1, 4], [2**62, 1], 4),
    ([4, 1], [1, -(2**62)], 4),
    ([0, 3], [2**62, 2**62], 0),
]


@needs_buffer_protocol
@pytest.mark.parametrize("shape, strides, numel", UNUSED_STRIDES)
def test_unused_strides_that_overflow_in_bytes_are_exported(shape, strides, numel):
    t = ext.from_bytes(bytes(range(4 * numel)), "float32", shape, strides=strides)
    view = memoryview(t)
    assert view.shape == tuple(shape)
    assert bytes(view) == bytes(range(4 * numel))
    expected = np.frombuffer(bytes(range(4 * numel)), np.float32).reshape(shape)
    np.testing.assert_array_equal(np.asarray(view), expected)
    x = torch.arange(4.0).as_strided((1, 4), (2**62, 1))
    assert memoryview(ext.asdlpack(x)).tolist() == [[0.0, 1.0, 2.0, 3.0]]


def test_unused_strides_in_the_cuda_array_interface():
    host = np.zeros(8, np.float32)  # described as CUDA memory, never read
    for shape, strides, expected in [([1, 2], [2**62, 2], 8), ([2, 1], [3, -(2**62)], 12)]:
        t = ext.over_memory(host.ctypes.data, host.nbytes, 2, 0, shape, strides=strides)
        cai = t.__cuda_array_interface__
        assert cai["shape"] == tuple(shape)
        used = [b for n, b in zip(shape, cai["strides"]) if n > 1]
        assert used == [expected]


@needs_buffer_protocol
def test_asdlpack_makes_any_producer_a_dlpack_tensor():
    b = bytearray(b"\x01\x02\x03\x04")
    t = ext.asdlpack(b)
    assert type(t) is ext.DLPackTensor
    back = torch.from_dlpack(t)
    assert back.tolist() == [1, 2, 3, 4]
    back[0] = 9
    assert b[0] == 9, "zero-copy and writable, as the bytearray is"
    with pytest.raises(BufferError):
        b.extend(b"x")  # held while exported
    ro = ext.asdlpack(b"abc")
    assert ro.read_only
    assert np.from_dlpack(ext.asdlpack(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="got int"):
        ext.asdlpack(3)


@needs_buffer_protocol
def test_memory_of_unknown_length_has_no_buffer():
    # Found by review: the buffer protocol exposed raw memory that reports no length.
    with pytest.raises(BufferError, match="length of its memory is unknown"):
        memoryview(ext.unmeasured(4))

