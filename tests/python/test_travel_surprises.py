"""Tensors that travel, without surprises (issue 46): the install function
refuses a stray call every time, chains of restores free without recursion,
interruptions pass through unpickling, subclasses' own reductions are
honoured."""

import copy
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import run_fresh


def test_a_stray_install_call_is_refused_after_a_pickle_too():
    # The install function refused a module that does not hold this crate only
    # until the first unpickling of the process installed the reconstructor;
    # from then on it returned 0 for any name.
    out = run_fresh(
        """
        import ctypes, pickle, sys
        import dlpack_testext as ext
        t = pickle.loads(pickle.dumps(ext.arange("float32", 3), protocol=5))
        library = ctypes.pydll[sys.modules["dlpack_testext.dlpack_testext"].__file__]
        for _ in range(2):
            try:
                library.pyo3_dlpack_0_4_install_v1(b"json")
            except ImportError as err:
                print("refused:", err)
            else:
                print("accepted")
        print(pickle.loads(pickle.dumps(t, protocol=5)).shape)
        """,
        silent=True,
    )
    refused = "refused: module json does not hold the pyo3-dlpack code this pickle names\n"
    assert out == refused * 2 + "(3,)\n"


# A tensor restored from an out-of-band buffer over another restored tensor's
# bytes keeps that tensor alive: a loop that round-trips a tensor builds a
# chain as long as its history. Freeing it recursed once per link through
# C frames and overflowed the stack (a crash) at about 15,000 links through
# pickle and 30,000 through the reconstructor. `PYO3_DLPACK_CHAIN` sets the
# length (1,000,000 for the long run).
CHAIN = """
    import gc, os, pickle, sys
    import dlpack_testext as ext

    def by_pickle(t):
        buffers = []
        data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
        return pickle.loads(data, buffers=buffers)

    def by_reconstructor(t):
        reconstructor, args = t.__reduce_ex__(5)
        return reconstructor(*args)

    step = {"pickle": by_pickle, "reconstructor": by_reconstructor}[sys.argv[1]]
    n = int(os.environ.get("PYO3_DLPACK_CHAIN", "60000"))
    root = ext.arange("float64", 4)
    t = root
    del root
    created, dropped, _ = ext.drop_counts()
    for _ in range(n):
        t = step(t)
    assert t.shape == (4,)
    assert ext.drop_counts()[1] == dropped  # the root is alive through the chain
    del t
    gc.collect()
    print(ext.drop_counts()[1] - dropped)
"""


@pytest.mark.parametrize("route", ["pickle", "reconstructor"])
def test_a_long_chain_of_restores_frees_without_recursion(route, tmp_path):
    script = tmp_path / "chain.py"
    script.write_text(textwrap.dedent(CHAIN))
    done = subprocess.run(
        [sys.executable, str(script), route], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.stdout == "1\n"  # the root's value, dropped once the chain is freed


class Raising:
    """An integer whose `__index__` raises `error`, and whose `repr` raises."""

    def __init__(self, error):
        self.error = error

    def __index__(self):
        raise self.error

    def __repr__(self):
        raise ValueError("no repr")


def forged(position, value):
    """The reconstructor and a real state with the item at `position` (for a
    tuple item, its first element) replaced by `value`."""
    reconstructor, (state,) = ext.arange("float32", 3).__reduce_ex__(5)
    state = list(state)
    item = state[position]
    state[position] = (value, *item[1:]) if isinstance(item, tuple) else value
    return reconstructor, tuple(state)


# The format, the dtype's code, an extent, the device's type.
ITEMS = [0, 1, 2, 3]


@pytest.mark.parametrize("position", ITEMS)
@pytest.mark.parametrize("interruption", [KeyboardInterrupt, MemoryError])
def test_an_interruption_while_a_payload_is_read_arrives_as_itself(position, interruption):
    # It was swallowed into an UnpicklingError ("expected the shape ..., got tuple ").
    reconstructor, state = forged(position, Raising(interruption()))
    with pytest.raises(interruption):
        reconstructor(state)
    reconstructor, state = forged(position, Raising(interruption()))
    with pytest.raises(interruption):
        pickle.loads(pickle.dumps(_Forged(reconstructor, state), protocol=5))


class _Forged:
    """Pickles as `reconstructor(state)`."""

    def __init__(self, reconstructor, state):
        self.reduced = (reconstructor, (state,))

    def __reduce__(self):
        return self.reduced


def test_an_unprintable_item_is_named_by_its_type():
    reconstructor, state = forged(2, Raising(ValueError("not an extent")))
    with pytest.raises(pickle.UnpicklingError) as refused:
        reconstructor(state)
    assert str(refused.value) == (
        "cannot unpickle a DLPackTensor: expected the shape (a tuple of ints), "
        "got tuple <unprintable tuple object>"
    )


# A subclass's own reduction is honoured (`DLPackTensor.__reduce_ex__` was
# found first and refused it, though the refusal told it to define one).


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_subclass_with_its_own_reduce_pickles_through_it(protocol):
    back = pickle.loads(pickle.dumps(ext.Tagged(3, "ramp"), protocol=protocol))
    assert type(back) is ext.Tagged and back.tag == "ramp"
    assert np.from_dlpack(back).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_a_subclass_with_its_own_reduce_copies_through_it(copier):
    tagged = ext.Tagged(3, "ramp")
    twin = copier(tagged)
    assert type(twin) is ext.Tagged and twin.tag == "ramp"
    assert np.from_dlpack(twin).tolist() == [0.0, 1.0, 2.0]
    assert np.from_dlpack(twin).ctypes.data != np.from_dlpack(tagged).ctypes.data


def test_a_subclass_with_its_own_reduce_ex_copy_and_deepcopy_keeps_them():
    class Own(ext.Tagged):
        def __reduce_ex__(self, protocol):
            return (str, ("own __reduce_ex__",))

        def __copy__(self):
            return "own __copy__"

        def __deepcopy__(self, memo):
            return "own __deepcopy__"

    own = Own(2, "x")
    assert pickle.loads(pickle.dumps(own)) == "own __reduce_ex__"
    assert copy.copy(own) == "own __copy__"
    assert copy.deepcopy(own) == "own __deepcopy__"


@pytest.mark.parametrize("device_type, name", [(4, "opencl"), (8, "metal"), (10, "rocm")])
@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_a_copy_of_memory_the_crate_cannot_copy_is_a_buffer_error(device_type, name, copier):
    # It was a ValueError ("expected a tensor on cpu:0, got one on opencl:0"),
    # where CUDA memory without a driver raised BufferError.
    t = ext.on_device(4, device_type, 0)
    with pytest.raises(BufferError, match=f"^cannot copy: a tensor on {name}:0 cannot be restored"):
        copier(t)
