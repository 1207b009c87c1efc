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

