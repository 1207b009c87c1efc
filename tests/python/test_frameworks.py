"""Real frameworks import our exports zero-copy, with the right values."""

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import numpy_arange, version_of

import torch

ALL_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


# --- NumPy -------------------------------------------------------------------


def test_numpy_imports_zero_copy_and_writable():
    x = ext.arange("float32", 8)
    a = np.from_dlpack(x)
    assert a.ctypes.data == x.data_ptr
    assert a.flags.writeable, "NumPy >= 2.3 asks for a versioned capsule and gets a writable one"
    a[3] = 42.0
    assert np.from_dlpack(x)[3] == 42.0
    assert ext.read_byte(x, 12 + 3) == np.float32(42.0).tobytes()[3]


def test_numpy_legacy_capsule_is_read_only():
    class LegacyOnly:
        """A consumer-side shim that asks for the legacy capsule."""

        def __init__(self, inner):
            self.inner = inner

        def __dlpack__(self, **kwargs):
            return self.inner.__dlpack__()

        def __dlpack_device__(self):
            return self.inner.__dlpack_device__()

    x = ext.arange("int32", 4)
    a = np.from_dlpack(LegacyOnly(x))
    assert a.ctypes.data == x.data_ptr
    assert not a.flags.writeable


def test_numpy_read_only_export_gives_a_read_only_array():
    x = ext.from_bytes(np.arange(4, dtype="f8").tobytes(), "float64", [4], read_only=True)
    a = np.from_dlpack(x)
    assert not a.flags.writeable
    np.testing.assert_array_equal(a, np.arange(4.0))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("storage", ["vec", "aligned", "box"])
def test_numpy_every_dtype_round_trips(dtype, storage):
    x = ext.arange(dtype, 11, storage=storage)
    a = np.from_dlpack(x)
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, numpy_arange(dtype, 11))
    assert a.ctypes.data == x.data_ptr


@pytest.mark.parametrize(
    "shape",
    [(), (0,), (3, 0, 2), (7,), (2, 3, 4, 5)],
    ids=["0-d", "zero-size", "zero-size-3d", "1-d", "4-d"],
)
def test_numpy_shapes(shape):
    source = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    x = ext.from_bytes(source.tobytes(), "int32", list(shape))
    a = np.from_dlpack(x)
    assert a.shape == shape
    np.testing.assert_array_equal(a, source)


def test_numpy_strided_transposed_export():
    source = np.arange(12, dtype="f4").reshape(3, 4)
    x = ext.from_bytes(source.tobytes(), "float32", [4, 3], strides=[1, 4])
    a = np.from_dlpack(x)
    assert a.strides == (4, 16)
    np.testing.assert_array_equal(a, source.T)
    assert a.ctypes.data == x.data_ptr


def test_numpy_negative_strides_export():
    source = np.arange(5, dtype="i8")
    x = ext.from_bytes(source.tobytes(), "int64", [5], strides=[-1], byte_offset=32)
    np.testing.assert_array_equal(np.from_dlpack(x), source[::-1])


def test_numpy_copy_true_is_a_private_copy():
    x = ext.arange("float32", 4)
    a = np.from_dlpack(x, copy=True)
    assert a.ctypes.data != x.data_ptr
    a[0] = 99
    assert np.from_dlpack(x)[0] == 0
    assert a.flags.writeable


def test_numpy_device_cpu():
    x = ext.arange("uint8", 3)
    assert np.from_dlpack(x, device="cpu").ctypes.data == x.data_ptr


# --- PyTorch -----------------------------------------------------------------

TORCH_DTYPES = ALL_DTYPES + ["bfloat16"]


def torch_arange(dtype, n):
    if dtype == "bfloat16":
        return torch.arange(n, dtype=torch.float32).to(torch.bfloat16)
    return torch.from_numpy(numpy_arange(dtype, n))


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_every_dtype_round_trips(dtype):
    x = ext.arange(dtype, 9)
    t = torch.from_dlpack(x)
    assert t.dtype == getattr(torch, dtype)
    assert torch.equal(t, torch_arange(dtype, 9))
    assert t.data_ptr() == x.data_ptr


def test_torch_and_numpy_share_memory_writes_are_seen():
    x = ext.arange("float32", 6)
    t = torch.from_dlpack(x)
    a = np.from_dlpack(x)
    assert t.data_ptr() == a.ctypes.data == x.data_ptr
    t[2] = -7.0
    assert a[2] == -7.0
    a[5] = 8.5
    assert t[5].item() == 8.5


@pytest.mark.parametrize("shape", [(), (0,), (4, 0), (5,), (2, 3, 1, 4)])
def test_torch_shapes(shape):
    source = torch.arange(int(np.prod(shape)), dtype=torch.int16).reshape(shape)
    x = ext.from_bytes(source.numpy().tobytes(), "int16", list(shape))
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == shape
    assert torch.equal(t, source)


def test_torch_transposed_export():
    source = torch.arange(20, dtype=torch.float64).reshape(4, 5)
    x = ext.from_bytes(source.numpy().tobytes(), "float64", [5, 4], strides=[1, 5])
    t = torch.from_dlpack(x)
    assert t.stride() == (1, 5)
    assert torch.equal(t, source.T)
    assert t.data_ptr() == x.data_ptr


def test_torch_takes_bare_capsules_of_both_formats():
    for versioned in (False, True):
        capsule = ext.capsule(5, versioned)
        if versioned and version_of(torch)[:2] < (2, 9):
            # torch reads versioned capsules from 2.9.
            with pytest.raises(RuntimeError, match="invalid capsule"):
                torch.utils.dlpack.from_dlpack(capsule)
            continue
        t = torch.utils.dlpack.from_dlpack(capsule)
        assert torch.equal(t, torch.arange(5, dtype=torch.float32))
        with pytest.raises(Exception, match="consumed"):
            torch.utils.dlpack.from_dlpack(capsule)


def test_torch_capsule_of_an_exporter_shares_its_memory():
    x = ext.arange("int64", 3)
    # torch reads versioned capsules from 2.9.
    t = torch.utils.dlpack.from_dlpack(ext.capsule_of(x, version_of(torch)[:2] >= (2, 9)))
    assert t.data_ptr() == x.data_ptr


# --- JAX ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")

    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", False)


def jax_pointer(array):
    return array.addressable_data(0).unsafe_buffer_pointer()


def test_jax_imports_an_aligned_buffer_without_copying(jax):
    x = ext.arange("float32", 16, storage="aligned")
    assert x.data_ptr % 64 == 0
    y = jax.numpy.from_dlpack(x)
    assert jax_pointer(y) == x.data_ptr
    np.testing.assert_array_equal(np.asarray(y), np.arange(16, dtype="f4"))


@pytest.mark.parametrize("dtype", ALL_DTYPES + ["bfloat16"])
def test_jax_every_dtype_round_trips(jax, dtype):
    x = ext.arange(dtype, 7)
    y = jax.numpy.from_dlpack(x)
    assert str(y.dtype) == dtype
    assert jax_pointer(y) == x.data_ptr, "aligned buffers are imported without a copy"
    if dtype == "bfloat16":
        np.testing.assert_array_equal(np.asarray(y.astype("float32")), np.arange(7, dtype="f4"))
    else:
        np.testing.assert_array_equal(np.asarray(y), numpy_arange(dtype, 7))


def test_jax_shapes_and_transposed(jax):
    for shape in [(), (0,), (2, 3, 4, 5)]:
        source = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
        y = jax.numpy.from_dlpack(ext.from_bytes(source.tobytes(), "int32", list(shape)))
        np.testing.assert_array_equal(np.asarray(y), source)
    source = np.arange(6, dtype="f4").reshape(2, 3)
    y = jax.numpy.from_dlpack(ext.from_bytes(source.tobytes(), "float32", [3, 2], strides=[1, 3]))
    np.testing.assert_array_equal(np.asarray(y), source.T)


# --- array-api-strict and TensorFlow ----------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int16", "uint64", "float32", "complex128"])
def test_array_api_strict_imports_zero_copy(dtype):
    xp = pytest.importorskip("array_api_strict")

    x = ext.arange(dtype, 5)
    y = xp.from_dlpack(x)
    assert y.dtype == getattr(xp, dtype)
    np.testing.assert_array_equal(np.from_dlpack(y), numpy_arange(dtype, 5))
    assert np.from_dlpack(y).ctypes.data == x.data_ptr


def test_tensorflow_imports_a_legacy_capsule():
    tf = pytest.importorskip("tensorflow")
    x = ext.arange("float32", 4)
    t = tf.experimental.dlpack.from_dlpack(x.__dlpack__())
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype="f4"))
