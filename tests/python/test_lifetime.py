"""Each exported value is dropped exactly once, whatever its capsules go through."""

import gc
import threading

import numpy as np
import pytest

import dlpack_testext as ext

torch = pytest.importorskip("torch")


def test_the_exporter_alone(drops):
    x = ext.arange("float32", 4)
    assert (drops.created, drops.dropped) == (1, 0)
    del x
    assert (drops.created, drops.dropped) == (1, 1)


def test_consumers_deleted_in_any_order(drops):
    x = ext.arange("float32", 4)
    a = np.from_dlpack(x)
    t = torch.from_dlpack(x)
    b = np.from_dlpack(x)
    del x
    assert drops.dropped == 0, "consumers still hold the memory"
    del t
    assert drops.dropped == 0
    a[0] = 1  # still valid memory
    del b, a
    assert drops.dropped == 1


def test_many_exports_one_drop(drops):
    x = ext.arange("int8", 3)
    arrays = [np.from_dlpack(x) for _ in range(50)] + [torch.from_dlpack(x) for _ in range(50)]
    del x
    assert drops.dropped == 0
    arrays.clear()
    assert (drops.created, drops.dropped) == (1, 1)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_unconsumed_capsules_free_their_share(drops, max_version):
    x = ext.arange("float32", 4)
    capsule = x.__dlpack__(max_version=max_version)
    del x
    assert drops.dropped == 0, "the capsule keeps the value alive"
    del capsule
    assert drops.dropped == 1


@pytest.mark.parametrize("versioned", [False, True])
def test_bare_capsules_own_their_value(drops, versioned):
    capsule = ext.capsule(3, versioned)
    assert drops.live == 1
    del capsule
    assert drops.dropped == 1
    t = torch.utils.dlpack.from_dlpack(ext.capsule(3, versioned))
    assert drops.live == 1, "the consumer owns it now"
    del t
    assert drops.live == 0


def test_torch_frees_on_another_thread_without_the_gil(drops):
    x = ext.arange("float32", 1000)
    holder = [torch.from_dlpack(x) for _ in range(3)]
    del x
    assert drops.dropped == 0

    def release():
        with torch.no_grad():
            holder.clear()  # torch's deleter runs here, in this thread, without the GIL

    thread = threading.Thread(target=release)
    thread.start()
    thread.join()
    assert drops.dropped == 1


def test_numpy_rejecting_a_dtype_keeps_its_exception_and_frees_once(drops):
    # NumPy has no bfloat16: it raises, and drops the capsule with its error pending.
    expected = None
    try:
        np.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    except Exception as err:  # NumPy's own error for the same problem
        expected = err
    assert expected is not None
    x = ext.arange("bfloat16", 3)
    with pytest.raises(type(expected)) as excinfo:
        np.from_dlpack(x)
    assert str(excinfo.value) == str(expected)
    assert not isinstance(excinfo.value, SystemError)
    del x, excinfo
    gc.collect()
    assert drops.dropped == 1


def test_copies_free_independently(drops):
    x = ext.arange("float64", 5)
    copy = np.from_dlpack(x, copy=True)
    del x
    assert drops.dropped == 1, "the copy does not hold the original"
    np.testing.assert_array_equal(copy, np.arange(5.0))


def test_nothing_leaks_over_many_cycles(drops):
    for _ in range(2000):
        x = ext.arange("uint8", 16)
        np.from_dlpack(x)
        torch.from_dlpack(x)
        x.__dlpack__(max_version=(1, 0))
        del x
    assert (drops.created, drops.dropped) == (2000, 2000)
