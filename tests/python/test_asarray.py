"""`np.asarray`, `np.array`, `torch.as_tensor` and `jnp.asarray` on a DLPackTensor: the
frameworks' conversion functions (not their `from_dlpack`) either share the memory or raise
a clear error, never a 0-d object array.

NumPy asks the buffer protocol first and `__array__` after it (bfloat16, device memory,
abi3 builds without the buffer protocol); torch's `as_tensor` calls `__dlpack__`; JAX calls
`__jax_array__` (it cannot read the `dtype` attribute, a name)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import dlpack_testext as ext
from conftest import version_of

CUDA, CUDA_HOST = 2, 3


def jax_pointer(array):
    return array.addressable_data(0).unsafe_buffer_pointer()


def test_numpy_asarray_shares_host_memory():
    t = ext.arange("float32", 4, "aligned")
    a = np.asarray(t)
    assert a.ctypes.data == t.data_ptr and a.flags.writeable
    a[1] = 7.0
    assert np.from_dlpack(t).tolist() == [0.0, 7.0, 2.0, 3.0]
    copied = np.array(t)
    assert copied.ctypes.data != t.data_ptr and copied.tolist() == [0.0, 7.0, 2.0, 3.0]


def test_numpy_asarray_of_pinned_host_memory_shares_it():
    t = ext.on_device(3, CUDA_HOST, 0, None)
    a = np.asarray(t)
    assert a.ctypes.data == t.data_ptr and a.tolist() == [0.0, 0.0, 0.0]


def test_numpy_asarray_refuses_device_memory_with_a_buffer_error():
    t = ext.on_device(4, CUDA, 0, None)
    message = (
        "cannot make a NumPy array of a tensor on cuda:0: NumPy reads host memory only; "
        "import it with a framework for that device, such as torch.from_dlpack(t) or "
        "cupy.from_dlpack(t)"
    )
    for convert in (np.asarray, np.array):
        with pytest.raises(BufferError) as info:
            convert(t)  # was a 0-d object array holding the tensor
        assert str(info.value) == message


def test_numpy_asarray_refuses_dtypes_numpy_lacks_with_a_buffer_error():
    t = ext.arange("bfloat16", 4, "aligned")
    with pytest.raises(BufferError) as info:
        np.asarray(t)  # was a 0-d object array holding the tensor
    assert str(info.value) == (
        "cannot make a NumPy array of a bfloat16 tensor: NumPy has no such dtype; "
        "import it with torch.from_dlpack(t) or jax.numpy.from_dlpack(t)"
    )


def test_dunder_array_follows_numpy_2s_dtype_and_copy_rules():
    t = ext.arange("float32", 3, "aligned")
    shared = t.__array__()
    assert type(shared) is np.ndarray and shared.ctypes.data == t.data_ptr
    assert t.__array__(np.float32, copy=False).ctypes.data == t.data_ptr
    copied = t.__array__(copy=True)
    assert copied.ctypes.data != t.data_ptr and copied.tolist() == [0.0, 1.0, 2.0]
    cast = t.__array__("float64")
    assert cast.dtype == np.float64 and cast.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError) as info:
        t.__array__(np.float64, copy=False)
    assert str(info.value) == "Unable to avoid copy while creating an array as requested."


def test_dunder_array_of_a_read_only_tensor_is_read_only():
    t = ext.from_bytes(np.arange(3, dtype="f4").tobytes(), "float32", [3], None, 0, True)
    a = t.__array__()
    assert not a.flags.writeable and a.ctypes.data == t.data_ptr and a.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_torch_as_tensor_shares_the_memory_through_dlpack(dtype, drops):
    t = ext.arange(dtype, 5, "aligned")
    if version_of(torch)[:2] < (2, 9):
        # torch 2.5's as_tensor does not call __dlpack__ (2.9's does).
        with pytest.raises(RuntimeError, match="Could not infer dtype of pyo3_dlpack.DLPackTensor"):
            torch.as_tensor(t)
        return
    x = torch.as_tensor(t)
    assert x.data_ptr() == t.data_ptr
    assert x.dtype == getattr(torch, dtype) and x.tolist() == [0, 1, 2, 3, 4]
    del t
    assert drops.dropped_now == 0  # the torch tensor keeps the value alive
    del x
    assert (drops.created, drops.dropped_now) == (1, 1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the stand-in device memory is host memory")
def test_torch_as_tensor_of_device_memory_is_torchs_cuda_import():
    with pytest.raises(RuntimeError, match="^Found no NVIDIA driver on your system"):
        torch.as_tensor(ext.on_device(4, CUDA, 0, None))


@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
def test_jax_asarray_shares_aligned_memory(dtype, drops):
    t = ext.arange(dtype, 4, "aligned")
    j = jnp.asarray(t)  # failed before: JAX read `t.dtype`, a name, as a NumPy dtype
    assert isinstance(j, jax.Array) and j.dtype == jnp.dtype(dtype)
    assert jax_pointer(j) == t.data_ptr and j.tolist() == [0, 1, 2, 3]
    del t
    assert drops.dropped_now == 0
    del j
    assert (drops.created, drops.dropped_now) == (1, 1)


def test_jax_asarray_takes_read_only_tensors_and_jnp_array_copies():
    t = ext.from_bytes(np.arange(3, dtype="f4").tobytes(), "float32", [3], None, 0, True)
    j = jnp.asarray(t)  # JAX arrays are immutable: a read-only tensor is no obstacle
    assert jax_pointer(j) == t.data_ptr and j.tolist() == [0.0, 1.0, 2.0]
    copied = jnp.array(t)
    assert jax_pointer(copied) != t.data_ptr and copied.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="JAX has a GPU backend here")
def test_jax_asarray_of_device_memory_without_a_jax_gpu_backend_is_jaxs_error():
    with pytest.raises(RuntimeError) as info:
        jnp.asarray(ext.on_device(4, CUDA, 0, None))
    assert str(info.value) == "Unknown backend cuda. Available backends are ['cpu']"
