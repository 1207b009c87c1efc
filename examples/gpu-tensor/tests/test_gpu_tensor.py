"""The device tensor type, consumed by NumPy and PyTorch."""

import numpy as np
import pytest
import torch

import gpu_tensor


def test_zeros_of_any_dtype():
    x = gpu_tensor.zeros([2, 3], "bfloat16")
    assert x.__dlpack_device__() == (1, 0)
    t = torch.from_dlpack(x)
    assert (t.dtype, tuple(t.shape)) == (torch.bfloat16, (2, 3))
    assert t.data_ptr() == x.data_ptr
    assert not t.any()


def test_column_major_strides_reach_the_consumer():
    x = gpu_tensor.column_major(3, 4)
    assert x.strides == (1, 3)
    a = np.from_dlpack(x)
    assert a.strides == (4, 12)
    np.testing.assert_array_equal(a, np.add.outer(np.arange(3) * 10, np.arange(4)).astype("f4"))
    t = torch.from_dlpack(x)
    assert t.stride() == (1, 3)
    assert t[2, 3] == 23


def test_an_unknown_dtype_is_a_value_error():
    with pytest.raises(ValueError, match='unknown dtype "float128"'):
        gpu_tensor.zeros([2], "float128")
