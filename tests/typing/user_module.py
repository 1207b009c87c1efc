"""A user's module over an extension that ships DLPackTensor::PYI (examples/image-buffer):
`make test` type-checks it with mypy and pyright, and runs it.

Every `assert_type` is checked by both type checkers; the asserts check the same facts at
run time."""

import copy
import pickle
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import torch
from typing_extensions import CapsuleType, assert_type

import image_buffer
from image_buffer import DLPackTensor


def describe(t: DLPackTensor) -> str:
    shape: tuple[int, ...] = t.shape
    strides: tuple[int, ...] = t.strides
    ndim: int = t.ndim
    dtype: str = t.dtype
    device: str = t.device
    read_only: bool = t.read_only
    address: int = t.data_ptr
    return f"{shape} {strides} {ndim} {dtype} {device} {read_only} {address:#x}"


def main() -> None:
    t = image_buffer.gradient(4, 6)
    assert_type(t, DLPackTensor)
    print(describe(t))

    # The consumers' from_dlpack functions accept it.
    a = np.from_dlpack(t)
    assert_type(a, npt.NDArray[np.number[Any] | np.bool])
    x = torch.from_dlpack(t)
    assert_type(x, torch.Tensor)
    j = jnp.from_dlpack(t)
    assert_type(j, jax.Array)
    assert a.ctypes.data == x.data_ptr() == t.data_ptr
    assert a.shape == tuple(x.shape) == j.shape == t.shape == (4, 6, 3)

    # The conversion functions, and the protocols underneath.
    assert np.asarray(t).ctypes.data == t.data_ptr
    assert torch.as_tensor(t).data_ptr() == t.data_ptr
    assert jnp.asarray(t).shape == (4, 6, 3)
    assert memoryview(t).nbytes == bytes(t).__len__() == 4 * 6 * 3
    capsule = t.__dlpack__(max_version=(1, 0))
    assert_type(capsule, CapsuleType)
    assert t.__dlpack_device__() == (1, 0)

    # Tensors that travel: pickled (out of band) and copied, the same type comes back.
    buffers: list[pickle.PickleBuffer] = []
    sent = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    received = pickle.loads(sent, buffers=buffers)
    assert received.shape == t.shape and received.data_ptr == t.data_ptr
    assert_type(copy.deepcopy(t), image_buffer.DLPackTensor)
    assert copy.copy(t).data_ptr != t.data_ptr

    samples = image_buffer.sine(8, 1.0)
    assert np.from_dlpack(samples).dtype == np.float32 and samples.dtype == "float32"


if __name__ == "__main__":
    main()
