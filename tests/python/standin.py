"""The stand-in CUDA driver's test harness, shared by the suites that run against it
(test_cuda_standin.py, test_cudarc_standin.py, test_exchange_standin.py and the others that
import it): each case runs in a fresh interpreter whose PYO3_DLPACK_CUDA_DRIVER names the
stand-in (tests/cuda-standin, `libcuda.so` built by `make test`; the crate loads the driver
once per process), after a prelude of helpers over the stand-in's test entry points
(`PRELUDE`), and ends with the number of races the stand-in recorded (`run`).

Streams are queues: a case enqueues simulated kernels (`write`: these bytes there, when it
runs; `read`), which run only when something orders them, and the stand-in records every
access not ordered after a write to the same memory on another stream as a race (a host
read is reported by the case, `host_read`, at the point the host reads). Device memory is
PROT_NONE to the host: its values are read through the stand-in's own mapping
(`device_floats`)."""

import os
import subprocess
import sys
import textwrap

import pytest

STANDIN = os.environ.get("CUDA_STANDIN")
needs_standin = pytest.mark.skipif(
    not STANDIN, reason="CUDA_STANDIN names no stand-in driver (make test builds and names it)"
)


def has_cudarc():
    """Whether the test extension was built with its `cudarc` feature."""
    try:
        import dlpack_testext
    except ImportError:
        return False
    return hasattr(dlpack_testext, "cudarc_arange")


needs_cudarc = pytest.mark.skipif(not has_cudarc(), reason="extension built without cudarc")

PRELUDE = """
import ctypes, os
import numpy as np
import dlpack_testext as ext

cuda = ctypes.CDLL(os.environ["PYO3_DLPACK_CUDA_DRIVER"])
for name in ["standin_alloc", "standin_stream_create", "standin_syncs", "standin_waits",
             "standin_refusals", "standin_context_depth", "standin_default_stream_waits",
             "standin_default_stream_syncs", "standin_stream_create_with_flags",
             "standin_host_read", "standin_races", "standin_pending"]:
    getattr(cuda, name).restype = ctypes.c_size_t
cuda.standin_alloc.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
cuda.standin_stream_create.argtypes = [ctypes.c_int]
cuda.standin_stream_create_with_flags.argtypes = [ctypes.c_int, ctypes.c_uint]
cuda.standin_syncs.argtypes = [ctypes.c_size_t]
cuda.standin_waits.argtypes = [ctypes.c_size_t]
cuda.standin_enqueue_write.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_char_p,
                                       ctypes.c_size_t]
cuda.standin_enqueue_read.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t]
cuda.standin_host_read.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
cuda.standin_pending.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
for name in ["cuStreamSynchronize", "cuEventRecord", "cuStreamWaitEvent", "cuEventSynchronize",
             "cuEventDestroy_v2", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
             "cuStreamIsCapturing"]:
    getattr(cuda, name).argtypes = None
assert cuda.cuInit(0) == 0
cuda.standin_read.argtypes = [ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
for name in ["standin_read", "standin_allocated", "standin_context_syncs"]:
    getattr(cuda, name).restype = ctypes.c_size_t
cuda.standin_allocated.argtypes = [ctypes.c_size_t]
LEGACY, PER_THREAD = 1, 2

def write(stream, address, values):
    "Enqueues a kernel on `stream` writing float32 `values` at `address`."
    data = np.asarray(values, dtype=np.float32).tobytes()
    assert cuda.standin_enqueue_write(stream, address, data, len(data)) == 0

def read(stream, address, n):
    "Enqueues a kernel on `stream` reading `n` float32s at `address`."
    assert cuda.standin_enqueue_read(stream, address, 4 * n) == 0

def host_read(address, n):
    "The host reads `n` float32s at `address` now; the races this makes."
    return cuda.standin_host_read(address, 4 * n)

def floats(address, n):
    "What the host sees at `address` (pinned or managed memory)."
    return list(np.frombuffer((ctypes.c_char * (4 * n)).from_address(address), np.float32))

def device_floats(address, n):
    "The `n` float32s at `address`, through the driver's mapping; the read must not race."
    out = ctypes.create_string_buffer(4 * n)
    races = cuda.standin_read(address, out, 4 * n)
    assert races == 0, f"{races} races (or no such memory)"
    return list(np.frombuffer(out.raw, np.float32))

def attempt(f):
    "'ok', or the exception `f()` raised, as 'TypeName: message'."
    try:
        f()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return "ok"

def assert_clean():
    "The driver refused no call, and every context the crate pushed was popped."
    assert (cuda.standin_refusals(), cuda.standin_context_depth()) == (0, 0), (
        cuda.standin_refusals(), cuda.standin_context_depth())

def context():
    "The current context's handle (None without one)."
    made = ctypes.c_void_p()
    assert cuda.cuCtxGetCurrent(ctypes.byref(made)) == 0
    return made.value

def sync(stream):
    return cuda.cuStreamSynchronize(ctypes.c_void_p(stream))

class current:
    "Makes device `device`'s primary context current on this thread, for a block."
    def __init__(self, device):
        self.context = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), device) == 0
    def __enter__(self):
        assert cuda.cuCtxPushCurrent_v2(self.context) == 0
    def __exit__(self, *exc):
        assert cuda.cuCtxPopCurrent_v2(None) == 0

def event(device):
    made = ctypes.c_void_p()
    with current(device):
        assert cuda.cuEventCreate(ctypes.byref(made), 2) == 0
    return made

def record(event, stream):
    return cuda.cuEventRecord(event, ctypes.c_void_p(stream))

def wait(stream, event):
    return cuda.cuStreamWaitEvent(ctypes.c_void_p(stream), event, 0)

def capturing(stream):
    status = ctypes.c_int(-1)
    code = cuda.cuStreamIsCapturing(ctypes.c_void_p(stream), ctypes.byref(status))
    return status.value if code == 0 else ("error", code)

def begin_capture(stream, mode=0):
    return cuda.cuStreamBeginCapture_v2(ctypes.c_void_p(stream), mode)

def end_capture(stream):
    "cuStreamEndCapture's CUresult, and whether it made a graph."
    graph = ctypes.c_void_p()
    code = cuda.cuStreamEndCapture(ctypes.c_void_p(stream), ctypes.byref(graph))
    if graph.value:
        assert cuda.cuGraphDestroy(graph) == 0
    return code, bool(graph.value)

class CudaArray:
    "A __cuda_array_interface__ v3 producer over stand-in memory."
    def __init__(self, address, n, stream):
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": "<f4", "data": (address, False), "version": 3,
            "strides": None, "stream": stream,
        }
"""


EPILOGUE = """
print("races", cuda.standin_races())
"""


def run(code, races=0, seed=None, prelude=""):
    """Runs `code` after PRELUDE and `prelude` in a fresh interpreter; checks that the
    stand-in recorded `races` races (each described on standard error, which holds nothing
    else) and returns the standard output."""
    env = dict(os.environ, PYO3_DLPACK_CUDA_DRIVER=STANDIN)
    env.pop("STANDIN_SEED", None)
    if seed is not None:
        env["STANDIN_SEED"] = str(seed)
    source = PRELUDE + textwrap.dedent(prelude) + textwrap.dedent(code) + EPILOGUE
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    out, _, last = done.stdout.rstrip("\n").rpartition("\n")
    assert last == f"races {races}", f"{last}, expected {races}\n{done.stderr}"
    reported = [line for line in done.stderr.splitlines() if line.startswith("cuda-standin: race:")]
    assert len(reported) == races and done.stderr.count("\n") == races, done.stderr
    return out + "\n" if out else ""


# Run after PRELUDE by `run_cudarc`: cudarc's context on device 0 made first (cudarc
# synchronises the whole device when a context makes its first stream, which would order
# whatever a case queued before). cudarc loads `libcuda.so` by name; the stand-in's soname is
# `libcuda.so`, so once the prelude has loaded it by its path, cudarc is handed that same
# library (nothing is put on the library path: torch, JAX and CuPy never see it).
CUDARC = """
import gc
ext.cudarc_context(0)
assert cuda.standin_context_syncs(0) == 1
"""




def run_cudarc(code, races=0, seed=None):
    return run(code, races=races, seed=seed, prelude=CUDARC)


# Run after PRELUDE by `run_exchange`: the test extension's `ExchangeProducer` (a producer
# speaking only the DLPack C exchange API) over stand-in device memory.
EXCHANGE = """
import threading

def producer(device=0, n=8, values=None, non_blocking=True):
    '''Stand-in device memory of `n` float32s on `device`, an ExchangeProducer over it, and
    a new stream it reports as current on that device, with `values` written on it (pending).'''
    memory = cuda.standin_alloc(device, 4 * n, 0)
    stream = cuda.standin_stream_create_with_flags(device, 1 if non_blocking else 0)
    ext.exchange_stream(2, device, stream)
    if values is not None:
        write(stream, memory, values)
        assert cuda.standin_pending(memory, 4 * n) == 1
    return ext.ExchangeProducer(memory, [n], 2, device), memory, stream

def counts(*names):
    c = ext.exchange_counts()
    return tuple(c[name] for name in names)

def exports():
    "(exported, deleted, live, bad deletes, __dlpack__ calls)"
    return counts("exported", "deleted", "live", "bad_deletes", "dlpack_calls")
"""




def run_exchange(code, races=0, seed=None):
    return run(code, races=races, seed=seed, prelude=EXCHANGE)
