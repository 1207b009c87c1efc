"""Work that worker processes run for test_travel_workers.py and test_travel_clusters.py (a
module of its own, so that spawned workers import it without importing the tests)."""

import numpy as np

import dlpack_testext as ext


def make(n):
    """A DLPackTensor from Rust: n float32s, 0 to n - 1."""
    return ext.arange("float32", n)


def total(t):
    """The sum of a DLPackTensor's elements, read through NumPy."""
    return float(np.from_dlpack(t).sum())


def double(t):
    """A new DLPackTensor from Rust holding twice `t`'s elements."""
    values = (2 * np.from_dlpack(t)).astype(np.float32)
    return ext.from_bytes(values.tobytes(), "float32", list(values.shape))


def produce(queue, n):
    """Puts DLPackTensors of 1 to n elements on `queue`."""
    for i in range(1, n + 1):
        queue.put(make(i))


class Frames:
    """A map-style dataset whose items are DLPackTensors made in Rust (a decoder's frames)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return ext.from_bytes(np.full(6, i, np.float32).tobytes(), "float32", [2, 3])


def collate_dlpack(batch, *, collate_fn_map=None):
    """The guide's collate recipe (travel.md): a batch of DLPackTensors becomes one torch tensor."""
    import torch

    return torch.stack([torch.from_dlpack(t) for t in batch])
