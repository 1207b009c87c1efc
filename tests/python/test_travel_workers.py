"""DLPackTensors made in worker processes and sent back by pickling (DESIGN, "Tensors that
travel"): multiprocessing pools and queues (fork and spawn), ProcessPoolExecutor, and torch's
DataLoader with worker processes (with and without the README's collate recipe)."""

import concurrent.futures
import functools
import multiprocessing

import numpy as np
import pytest

import dlpack_testext as ext
import travel_work

START_METHODS = ["fork", "spawn"]


@pytest.mark.parametrize("method", START_METHODS)
def test_a_pool_maps_a_rust_function_and_returns_its_tensors(method):
    with multiprocessing.get_context(method).Pool(2) as pool:
        tensors = pool.map(travel_work.make, [1, 2, 3, 4])
        totals = pool.map(travel_work.total, tensors)  # and sends them back out
    assert [type(t) for t in tensors] == [ext.DLPackTensor] * 4
    assert [np.from_dlpack(t).tolist() for t in tensors[:2]] == [[0.0], [0.0, 1.0]]
    assert totals == [0.0, 1.0, 3.0, 6.0]


@pytest.mark.parametrize("method", START_METHODS)
def test_a_queue_carries_tensors_from_a_worker_process(method):
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    worker = context.Process(target=travel_work.produce, args=(queue, 3))
    worker.start()
    received = [queue.get(timeout=60) for _ in range(3)]
    worker.join(timeout=60)
    assert worker.exitcode == 0
    assert [np.from_dlpack(t).tolist() for t in received] == [[0.0], [0.0, 1.0], [0.0, 1.0, 2.0]]


def test_a_process_pool_executor_returns_tensors_and_takes_them():
    with concurrent.futures.ProcessPoolExecutor(2) as executor:
        doubled = list(executor.map(travel_work.double, [ext.arange("float32", 3)] * 2))
    assert [np.from_dlpack(t).tolist() for t in doubled] == [[0.0, 2.0, 4.0]] * 2


def test_a_dataloader_with_workers_yields_the_rust_tensors():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    loader = DataLoader(travel_work.Frames(), batch_size=None, num_workers=2)
    frames = list(loader)
    assert [type(f) for f in frames] == [ext.DLPackTensor] * 8
    assert [float(torch.from_dlpack(f)[0, 0]) for f in frames] == list(map(float, range(8)))


def collate_dlpack(batch, *, collate_fn_map=None):
    """The README's recipe: a batch of DLPackTensors becomes one torch tensor."""
    import torch

    return torch.stack([torch.from_dlpack(t) for t in batch])


def test_the_collate_recipe_batches_rust_tensors_in_the_workers():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from torch.utils.data._utils.collate import collate, default_collate_fn_map

    collate_map = {**default_collate_fn_map, ext.DLPackTensor: collate_dlpack}
    loader = DataLoader(
        travel_work.Frames(),
        batch_size=4,
        num_workers=2,
        collate_fn=functools.partial(collate, collate_fn_map=collate_map),
    )
    batches = list(loader)
    assert [b.shape for b in batches] == [torch.Size([4, 2, 3])] * 2
    assert batches[1][:, 0, 0].tolist() == [4.0, 5.0, 6.0, 7.0]
    # Items that are tuples of tensors and labels collate field by field, as usual.
    frames = travel_work.Frames()
    pairs = [(frames[i], i) for i in range(3)]
    images, labels = collate(pairs, collate_fn_map=collate_map)
    assert images.shape == (3, 2, 3) and labels.tolist() == [0, 1, 2]
