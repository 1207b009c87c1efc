"""DLPackTensors made in worker processes and sent back by pickling (DESIGN, "Tensors that
travel"): multiprocessing pools and queues (fork and spawn), ProcessPoolExecutor, and torch's
DataLoader with worker processes (with and without the guide's collate recipe, travel.md).

Forking cases run in a fresh interpreter: this one has JAX's threads by now, and forking a
process with threads may deadlock the child (Python warns so); a user's process that forks
has what it imported, and the fresh one has NumPy and the extension only."""

import concurrent.futures
import functools
import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest

import dlpack_testext as ext
import travel_work

START_METHODS = ["fork", "spawn"]
HERE = os.path.dirname(os.path.abspath(__file__))
# Workers started here (not forked: see above).
SPAWN = multiprocessing.get_context("spawn")


POOL = """
import multiprocessing, numpy as np, dlpack_testext as ext, travel_work
if __name__ == "__main__":
    with multiprocessing.get_context(METHOD).Pool(2) as pool:
        tensors = pool.map(travel_work.make, [1, 2, 3, 4])
        totals = pool.map(travel_work.total, tensors)  # and sends them back out
    print([type(t) is ext.DLPackTensor for t in tensors])
    print([np.from_dlpack(t).tolist() for t in tensors[:2]], totals)
"""

QUEUE = """
import multiprocessing, numpy as np, travel_work
if __name__ == "__main__":
    context = multiprocessing.get_context(METHOD)
    queue = context.Queue()
    worker = context.Process(target=travel_work.produce, args=(queue, 3))
    worker.start()
    received = [queue.get(timeout=60) for _ in range(3)]
    worker.join(timeout=60)
    print(worker.exitcode, [np.from_dlpack(t).tolist() for t in received])
"""


def run_script(tmp_path, source, method):
    """`source` as a script (spawned workers import its `__main__`), in a fresh interpreter
    that imports travel_work from here."""
    script = tmp_path / "main.py"
    script.write_text(f"METHOD = {method!r}\n" + source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("method", START_METHODS)
def test_a_pool_maps_a_rust_function_and_returns_its_tensors(tmp_path, method):
    assert run_script(tmp_path, POOL, method) == (
        "[True, True, True, True]\n[[0.0], [0.0, 1.0]] [0.0, 1.0, 3.0, 6.0]\n"
    )


@pytest.mark.parametrize("method", START_METHODS)
def test_a_queue_carries_tensors_from_a_worker_process(tmp_path, method):
    assert run_script(tmp_path, QUEUE, method) == "0 [[0.0], [0.0, 1.0], [0.0, 1.0, 2.0]]\n"


def test_a_process_pool_executor_returns_tensors_and_takes_them():
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=SPAWN) as executor:
        doubled = list(executor.map(travel_work.double, [ext.arange("float32", 3)] * 2))
    assert [np.from_dlpack(t).tolist() for t in doubled] == [[0.0, 2.0, 4.0]] * 2


def test_a_dataloader_with_workers_yields_the_rust_tensors():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    loader = DataLoader(travel_work.Frames(), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    frames = list(loader)
    assert [type(f) for f in frames] == [ext.DLPackTensor] * 8
    assert [float(torch.from_dlpack(f)[0, 0]) for f in frames] == list(map(float, range(8)))


def test_the_collate_recipe_batches_rust_tensors_in_the_workers():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from torch.utils.data._utils.collate import collate, default_collate_fn_map

    collate_map = {**default_collate_fn_map, ext.DLPackTensor: travel_work.collate_dlpack}
    loader = DataLoader(
        travel_work.Frames(),
        batch_size=4,
        num_workers=2,
        multiprocessing_context="spawn",
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
