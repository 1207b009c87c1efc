"""Each exported value is dropped exactly once, whatever its capsules go through."""

import ctypes
import gc
import itertools
import threading

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import version_of

import torch


def test_the_exporter_alone(drops):
    x = ext.arange("float32", 4)
    assert (drops.created, drops.dropped) == (1, 0)
    del x
    assert (drops.created, drops.dropped) == (1, 1)


@pytest.mark.parametrize("order", list(itertools.permutations(["exporter", "numpy", "torch", "capsule"])))
def test_owners_released_in_any_order(drops, order):
    x = ext.arange("float32", 4)
    owners = {
        "numpy": np.from_dlpack(x),
        "torch": torch.from_dlpack(x),
        "capsule": x.__dlpack__(max_version=(1, 0)),
        "exporter": x,
    }
    del x
    for i, name in enumerate(order):
        assert drops.dropped_now == 0, f"released too early, after {order[:i]}"
        if name in ("numpy", "torch"):
            owners[name][0] = i  # the memory is still valid
        del owners[name]
    assert (drops.created, drops.dropped) == (1, 1)


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


@pytest.mark.parametrize("max_version, name", [(None, b"dltensor"), ((1, 0), b"dltensor_versioned")])
def test_an_unconsumed_capsule_is_known_by_its_names_text_not_its_address(drops, max_version, name):
    # The destructor compared the name's address with its own constant's:
    # the same text at another address (another copy of the constant, or a
    # consumer that renames it back) was taken for a consumed capsule, and
    # the value leaked.
    set_name = ctypes.pythonapi.PyCapsule_SetName
    set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
    same_text = ctypes.create_string_buffer(name)  # outlives the capsule
    capsule = ext.arange("float32", 4).__dlpack__(max_version=max_version)
    assert set_name(capsule, ctypes.cast(same_text, ctypes.c_char_p)) == 0
    del capsule
    assert (drops.created, drops.dropped_now) == (1, 1)
    del same_text


@pytest.mark.parametrize("versioned", [False, True])
def test_bare_capsules_own_their_value(drops, versioned):
    capsule = ext.capsule(3, versioned)
    assert drops.live == 1
    del capsule
    assert drops.dropped == 1
    if versioned and version_of(torch)[:2] < (2, 9):
        # torch reads versioned capsules from 2.9; the refused capsule frees its value.
        capsule = ext.capsule(3, versioned)
        with pytest.raises(RuntimeError, match="invalid capsule") as excinfo:
            torch.utils.dlpack.from_dlpack(capsule)
        del capsule, excinfo
        assert drops.live == 0
        return
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
    assert drops.dropped_with_gil == 0, "torch runs DLPack deleters without the GIL"


def test_numpy_error_survives_a_drop_that_runs_python_in_our_destructor(drops):
    # NumPy rejects bfloat16 and drops the capsule with its error pending. The
    # capsule is the value's last owner, and the value's Drop runs Python code
    # that clears the error indicator: only the destructor's save and restore
    # keeps NumPy's exception (otherwise: SystemError, "returned NULL without
    # setting an exception").
    try:
        np.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    except Exception as err:
        expected = err

    class OneShot:
        def __dlpack__(self, **kwargs):
            return ext.clobbering_capsule(3)

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(type(expected)) as excinfo:
        np.from_dlpack(OneShot())
    assert str(excinfo.value) == str(expected)
    assert (drops.created, drops.dropped) == (1, 1)


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


def test_a_panicking_drop_is_contained_and_the_crate_prints_nothing(capfd):
    t = ext.panicking_on_drop()
    a = np.from_dlpack(t)
    del t
    del a  # the last reference: the deleter runs the panicking Drop
    gc.collect()
    err = capfd.readouterr().err
    # Rust's panic hook reports the user's panic; nothing else is written.
    assert "PanicsOnDrop::drop" in err
    assert "DLPack deleter" not in err and "caught" not in err
    assert np.from_dlpack(ext.arange("float32", 2)).tolist() == [0.0, 1.0]
