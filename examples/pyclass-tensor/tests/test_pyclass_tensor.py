"""A Python class with its own methods that NumPy and PyTorch import without a copy."""

import numpy as np
import torch

import pyclass_tensor


def test_own_methods_and_dlpack():
    s = pyclass_tensor.Signal([3.0, 4.0, 3.0, 4.0], 2.0)
    assert s.duration() == 2.0
    assert s.sample_rate == 2.0
    assert abs(s.rms() - 3.5355339) < 1e-6
    a = np.from_dlpack(s)
    t = torch.from_dlpack(s)
    assert a.ctypes.data == t.data_ptr() == s.data_ptr
    # Shared with the class's Rust methods, so exported read-only.
    assert s.read_only and not a.flags.writeable
    assert s.shape == (4,) and s.dtype == "float32"
