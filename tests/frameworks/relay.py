"""pytest plugin for running the frameworks' own DLPack test files unchanged
with every `from_dlpack` relayed through Rust.

With `--relay`, `numpy.from_dlpack(x, device=…, copy=…)` becomes
`numpy.from_dlpack(dlpack_testext.reexport(x), device=…, copy=…)`: the
producer `x` is imported as a `PyTensor` (its own `__dlpack__` called, its
errors unchanged) and exported again as a `DLPackTensor`, zero-copy, which
NumPy then consumes with the caller's `device` and `copy`.

With `--outcomes PATH`, every test's outcome is written to PATH as JSON
(`run.py` compares the runs with and without the relay).
"""

import json

import numpy as np


def pytest_addoption(parser):
    parser.addoption("--relay", action="store_true", help="relay from_dlpack through Rust")
    parser.addoption("--outcomes", default=None, help="write test outcomes to this JSON file")


# Test id → outcome ("passed", "failed", "skipped") of this session.
OUTCOMES = {}
# How many from_dlpack calls went through Rust.
RELAYED = [0]


def pytest_configure(config):
    if not config.getoption("relay"):
        return
    import dlpack_testext as ext

    direct = np.from_dlpack

    def relayed(x, /, *, device=None, copy=None):
        RELAYED[0] += 1
        return direct(ext.reexport(x), device=device, copy=copy)

    np.from_dlpack = relayed


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        OUTCOMES[report.nodeid] = report.outcome


def pytest_sessionfinish(session):
    path = session.config.getoption("outcomes")
    if path:
        with open(path, "w") as f:
            json.dump({"outcomes": OUTCOMES, "relayed": RELAYED[0]}, f, indent=1, sort_keys=True)
