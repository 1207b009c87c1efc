"""Eight Python threads importing, exporting and freeing at once, for a
bounded time: NumPy and torch both ways, imports dropped on Rust threads,
capsules freed on other threads. Every exported value is dropped exactly
once, and no fresh array is refused as shared (the aliasing registry is
left before each producer's deleter runs, issue 9)."""

import gc
import queue
import threading
import time

import numpy as np
import torch

import dlpack_testext as ext

THREADS = 8
SECONDS = 2.0


def worker(stop, handoff, errors, counts):
    try:
        n = 0
        while not stop.is_set():
            n += 1
            # Export (drop-counted values), consumed by NumPy and torch.
            ours = ext.arange("float64", 64)
            a = np.from_dlpack(ours)
            t = torch.from_dlpack(ours)
            assert a[5] == 5.0 and t[7].item() == 7.0
            del ours
            # Import a fresh array and write through a mutable view: a fresh,
            # unshared array must never be refused as shared.
            fresh = np.zeros(32)
            ext.fill(fresh, 2.0)
            assert fresh.sum() == 64.0
            ext.fill(torch.zeros(16, dtype=torch.float64), 1.0)
            # Imports dropped on a Rust thread that never attaches to Python.
            ext.drop_on_thread(np.ones(8))
            ext.drop_on_thread(torch.ones(8))
            # Capsules made here, freed on another thread.
            handoff.put((a, t, ext.arange("int32", 16).__dlpack__(max_version=(1, 3))))
            del a, t
        counts.append(n)
    except BaseException as err:  # noqa: BLE001 - reported by the test
        errors.append(err)


def freer(done, handoff):
    while not (done.is_set() and handoff.empty()):
        try:
            item = handoff.get(timeout=0.05)
        except queue.Empty:
            continue
        del item


def test_eight_threads_import_export_and_free_with_exact_drop_counts(drops):
    stop, done, handoff, errors, counts = threading.Event(), threading.Event(), queue.Queue(), [], []
    threads = [threading.Thread(target=worker, args=(stop, handoff, errors, counts))
               for _ in range(THREADS)]
    freers = [threading.Thread(target=freer, args=(done, handoff)) for _ in range(2)]
    for thread in threads + freers:
        thread.start()
    time.sleep(SECONDS)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    done.set()  # the workers have stopped: the freers drain what is left
    for thread in freers:
        thread.join(timeout=60)
    assert handoff.empty()
    assert not errors, errors[:3]
    assert len(counts) == THREADS and min(counts) > 0
    gc.collect()
    # Two exported values per iteration (the float64 one NumPy and torch
    # share, the int32 one whose capsule another thread freed), each dropped
    # exactly once.
    assert drops.created == 2 * sum(counts)
    assert drops.dropped == drops.created
