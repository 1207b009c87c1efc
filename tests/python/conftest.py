"""Shared helpers: a ctypes reader for DLPack capsules, and a drop counter."""

import ctypes
import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dlpack_testext as ext


def numpy_arange(dtype, n):
    """What `ext.arange(dtype, n)` holds, built by NumPy."""
    if dtype == "bool":
        return np.arange(n) % 2 == 1
    if dtype.startswith("complex"):
        return (np.arange(n) - 1j * np.arange(n)).astype(dtype)
    return np.arange(n).astype(dtype)


def run_fresh(code, env=None, silent=False):
    """`code` in a new interpreter (the fast paths' caches are per process); its stdout. A
    crash is a negative return code; `silent`: nothing may be printed to stderr either."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    if silent:
        assert done.stderr == ""
    return done.stdout


def _has_buffer_protocol():
    try:
        memoryview(ext.arange("uint8", 1))
    except TypeError:
        return False
    return True


# An abi3 build for CPython < 3.11 (`make abi3-test`, `make test-matrix`) has no buffer
# protocol, either way: it is not in the limited API before 3.11.
BUFFER_PROTOCOL = _has_buffer_protocol()
needs_buffer_protocol = pytest.mark.skipif(
    not BUFFER_PROTOCOL, reason="an abi3 build for CPython < 3.11 has no buffer protocol"
)
# What `describe` and friends say of a non-tensor, with and without the buffer protocol.
NOT_A_TENSOR = (
    "expected an object with __dlpack__, __cuda_array_interface__, __array_interface__ or the "
    "buffer protocol, or a DLPack capsule"
    if BUFFER_PROTOCOL
    else "expected an object with __dlpack__, __cuda_array_interface__ or __array_interface__, "
    "or a DLPack capsule"
)


def version_of(module):
    """`module.__version__` as a tuple of ints ("2.9.1+cpu" is (2, 9, 1), "0.4.38" (0, 4, 38))."""
    parts = []
    for part in module.__version__.split("+")[0].split(".")[:3]:
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        parts.append(int(digits or 0))
    return tuple(parts)


def old_torch_refuses_read_only(torch, export):
    """torch before 2.9 asks for legacy capsules only, which a read-only export refuses (a
    legacy capsule cannot say it is read-only): there the refusal is checked and the rest of
    the test, which needs torch to import it, is skipped."""
    if version_of(torch)[:2] >= (2, 9):
        return
    with pytest.raises(BufferError, match=r"legacy \(unversioned\) DLPack capsule cannot say so"):
        torch.from_dlpack(export)
    pytest.skip(f"torch {torch.__version__} imports no read-only export (legacy capsules only)")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU (skipped without one; `make gpu-bundle`)")


def freeze_what_lives():
    """Collects, then moves every object alive now out of the collector's reach (`gc.freeze`:
    reference counting still frees them): a later `gc.collect()` scans only what was made
    after. With torch and JAX imported, a full collection scans about 250,000 objects
    (~0.13 s); the suite's drop counts collect several hundred times."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session):
    freeze_what_lives()


def pytest_sessionfinish(session, exitstatus):
    # Collectable again at exit: nanobind modules (torch's triton) count what is never freed.
    gc.unfreeze()


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80

_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

READ_ONLY = 1
IS_COPIED = 2


class CapsuleView:
    """What a DLPack capsule holds, read with ctypes (the capsule is not consumed)."""

    def __init__(self, capsule):
        self.name = _api.PyCapsule_GetName(capsule).decode()
        address = _api.PyCapsule_GetPointer(capsule, self.name.encode())
        self.address = address
        if self.name == "dltensor_versioned":
            managed = DLManagedTensorVersioned.from_address(address)
            self.version = (managed.version.major, managed.version.minor)
            self.flags = managed.flags
        elif self.name == "dltensor":
            managed = DLManagedTensor.from_address(address)
            self.version = None
            self.flags = None
        else:
            raise AssertionError(f"unexpected capsule name {self.name!r}")
        tensor = managed.dl_tensor
        self.data = tensor.data or 0
        self.device = (tensor.device.device_type, tensor.device.device_id)
        self.ndim = tensor.ndim
        self.dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
        self.shape_address = ctypes.cast(tensor.shape, ctypes.c_void_p).value or 0
        self.strides_address = ctypes.cast(tensor.strides, ctypes.c_void_p).value or 0
        self.shape_is_null = not tensor.shape
        self.strides_is_null = not tensor.strides
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        self.strides = (
            None if self.strides_is_null else tuple(tensor.strides[i] for i in range(tensor.ndim))
        )
        self.byte_offset = tensor.byte_offset
        self.has_deleter = bool(managed.deleter)


@pytest.fixture
def capsule_view():
    return CapsuleView


class DropCounter:
    """Counts values the test extension created and dropped since the fixture began."""

    def __init__(self):
        freeze_what_lives()
        self.created0, self.dropped0, self.with_gil0 = ext.drop_counts()

    @property
    def created(self):
        return ext.drop_counts()[0] - self.created0

    @property
    def dropped(self):
        gc.collect()
        return ext.drop_counts()[1] - self.dropped0

    @property
    def dropped_now(self):
        """Like `dropped`, without a garbage collection (refcounting frees at once)."""
        return ext.drop_counts()[1] - self.dropped0

    @property
    def dropped_with_gil(self):
        gc.collect()
        return ext.drop_counts()[2] - self.with_gil0

    @property
    def live(self):
        return self.created - self.dropped


@pytest.fixture
def drops():
    return DropCounter()
