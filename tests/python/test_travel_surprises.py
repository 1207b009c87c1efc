"""Tensors that travel, without surprises (issue 46): the install function
refuses a stray call every time, chains of restores free without recursion,
interruptions pass through unpickling, subclasses' own reductions are
honoured."""

import copy
import pickle

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
