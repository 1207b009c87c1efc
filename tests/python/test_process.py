"""Processes without surprises (DESIGN.md invariant 10): a child made by
`fork` at any moment uses the crate at once. A parent thread keeps taking
views with the interpreter released (the aliasing registry is entered and
left meanwhile) while the main thread forks; every child takes a view and
exits within a deadline. `PYO3_DLPACK_FORKS` sets the number of forks
(the default keeps the run to a few seconds; 300 for the long run)."""

import os
import signal
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import run_fresh

FORKS = int(os.environ.get("PYO3_DLPACK_FORKS", "60"))
DEADLINE = 5.0

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    # Forking is what these tests do; CPython warns about it in any process where JAX (imported
    # by other test files) started threads.
    pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def wait_or_kill(pid, deadline):
    """The child's exit code, or None when it did not exit before the
    deadline (it is killed then)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


class Busy:
    """A thread taking views with the interpreter released until stopped."""

    def __init__(self, array):
        self.array = array
        self.stop = threading.Event()
        self.errors = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        try:
            while not self.stop.is_set():
                ext.views_released(self.array, 50)
        except BaseException as error:  # reported by the test
            self.errors.append(error)

    def __enter__(self):
        self.thread.start()
        ext.views_released(self.array, 1)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        assert self.errors == []


def fork_child(body):
    """Forks; the child runs `body` and exits 0 when it returns True."""
    with warnings.catch_warnings():
        # CPython 3.12+ warns that forking a threaded process may deadlock
        # in the child: that is what this file proves does not happen here.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if body() else 2
        finally:
            os._exit(code)
    return pid


def test_every_child_of_a_busy_parent_takes_a_view_at_once():
    with Busy(np.arange(64.0)):
        fresh = np.arange(8.0)
        codes = [
            wait_or_kill(fork_child(lambda: ext.views_released(fresh, 1) == 28.0), DEADLINE)
            for _ in range(FORKS)
        ]
    hung = [i for i, code in enumerate(codes) if code is None]
    assert hung == [], f"{len(hung)} of {FORKS} children hung (forks {hung})"
    assert codes == [0] * FORKS


def test_a_child_still_sees_the_parents_writer():
    # The registry the child inherits is the parent's, whole: memory a
    # parent's import holds a mutable view of is still refused to a shared
    # view in the child (no alias is lost at fork).
    claimed = np.zeros(16)
    held = ext.hold_writer(claimed)

    def refusal():
        try:
            ext.views_released(claimed, 1)
        except Exception as error:
            return type(error), str(error)
        return None

    in_parent = refusal()
    assert in_parent is not None

    with Busy(np.arange(64.0)):
        codes = [wait_or_kill(fork_child(lambda: refusal() == in_parent), DEADLINE) for _ in range(5)]
    assert codes == [0] * 5
    del held
    ext.views_released(claimed, 1)


def test_dataloader_fork_workers_while_a_parent_thread_works():
    torch = pytest.importorskip("torch")

    class Sums(torch.utils.data.Dataset):
        def __len__(self):
            return 32

        def __getitem__(self, i):
            return ext.views_released(np.full(8, float(i)), 4)

    with Busy(np.arange(64.0)):
        for _ in range(10):
            loader = torch.utils.data.DataLoader(
                Sums(),
                batch_size=8,
                num_workers=3,
                multiprocessing_context="fork",
                timeout=DEADLINE,
            )
            got = sorted(float(x) for batch in loader for x in batch)
            assert got == [8.0 * i for i in range(32)]


# A thread is inside the first use of a once-made value whose making runs
# Python code (NumPy's C API table: importing `numpy._core.multiarray`),
# held there by an import hook, when the main thread forks. The child makes
# the value itself: the cell is never held while Python code runs (it was,
# and the child waited for the parent's thread forever).
ONCE_DURING_FORK = """
    import builtins, os, signal, threading, time, warnings
    import numpy as np
    import dlpack_testext as ext

    warnings.simplefilter("ignore", DeprecationWarning)
    parent = os.getpid()
    entered, release = threading.Event(), threading.Event()
    real_import = builtins.__import__

    def held_import(name, *args, **kwargs):
        if os.getpid() == parent and threading.current_thread().name == "first":
            if not release.is_set():
                entered.set()
                release.wait()
        return real_import(name, *args, **kwargs)

    builtins.__import__ = held_import
    make = lambda: ext.native_arange("numpy", "float64", 4)
    first = threading.Thread(target=make, name="first")
    first.start()
    entered.wait()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if float(make().sum()) == 6.0 else 1)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("child exited", os.waitstatus_to_exitcode(status))
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("child hung")
    release.set()
    first.join()
"""


def test_a_child_forked_while_a_once_made_value_is_being_made_makes_it():
    out = run_fresh(f"DEADLINE = {DEADLINE}\n" + textwrap.dedent(ONCE_DURING_FORK))
    assert out == "child exited 0\n"
