"""CUDA paths against the stand-in driver (tests/cuda-standin, `libcuda.so` built by
`make test`), which enforces the driver's context rules: every call that needs a current
context fails without one, and an event is recorded only on streams of its own device.
Each case runs in a fresh interpreter whose PYO3_DLPACK_CUDA_DRIVER names the stand-in
(the crate loads the driver once per process). Stream work is not simulated yet: the
stand-in counts synchronisations and waits per stream, and every refused call."""

import os
import subprocess
import sys
import textwrap

import pytest

STANDIN = os.environ.get("CUDA_STANDIN")
pytestmark = pytest.mark.skipif(
    not STANDIN, reason="CUDA_STANDIN names no stand-in driver (make test builds and names it)"
)

PRELUDE = """
import ctypes, os
import numpy as np
import dlpack_testext as ext

cuda = ctypes.CDLL(os.environ["PYO3_DLPACK_CUDA_DRIVER"])
for name in ["standin_alloc", "standin_stream_create", "standin_syncs", "standin_waits",
             "standin_refusals", "standin_context_depth", "standin_default_stream_waits",
             "standin_default_stream_syncs"]:
    getattr(cuda, name).restype = ctypes.c_size_t
cuda.standin_alloc.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
cuda.standin_stream_create.argtypes = [ctypes.c_int]
cuda.standin_syncs.argtypes = [ctypes.c_size_t]
cuda.standin_waits.argtypes = [ctypes.c_size_t]
assert cuda.cuInit(0) == 0

class CudaArray:
    "A __cuda_array_interface__ v3 producer over stand-in memory."
    def __init__(self, address, n, stream):
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": "<f4", "data": (address, False), "version": 3,
            "strides": None, "stream": stream,
        }
"""


def run(code):
    env = dict(os.environ, PYO3_DLPACK_CUDA_DRIVER=STANDIN)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PRELUDE) + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.stderr == ""
    return done.stdout


def test_a_cuda_array_interface_import_learns_the_device_and_synchronises_the_producers_stream():
    out = run(
        """
        memory = cuda.standin_alloc(1, 64, 0)  # device memory of device 1: PROT_NONE
        producer = cuda.standin_stream_create(1)
        d = ext.describe(CudaArray(memory, 16, producer))
        assert (d["device"], d["shape"], d["data_ptr"]) == ((2, 1), (16,), memory), d
        assert cuda.standin_syncs(producer) == 1
        managed = cuda.standin_alloc(0, 64, 2)
        assert ext.describe(CudaArray(managed, 16, None))["device"] == (13, 0)
        assert cuda.standin_refusals() == 0
        assert cuda.standin_context_depth() == 0, "every pushed context popped"
        print("ok")
        """
    )
    assert out == "ok\n"


def test_an_import_with_a_consumer_stream_records_the_event_in_the_pointers_context():
    # Before the contexts were made current, cuEventCreate failed with
    # CUDA_ERROR_INVALID_CONTEXT (201) on every thread without a context.
    out = run(
        """
        memory = cuda.standin_alloc(1, 64, 0)
        producer, consumer = cuda.standin_stream_create(1), cuda.standin_stream_create(1)
        d = ext.import_with(CudaArray(memory, 16, producer), stream=consumer)
        assert (d["device"], d["stream"]) == ((2, 1), consumer), d
        assert (cuda.standin_waits(consumer), cuda.standin_syncs(producer)) == (1, 0)
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_an_export_waits_for_its_stream_on_its_device_whatever_context_is_current():
    # The value names its stream on device 1; the consumer's stream is device 1's too,
    # while device 0's context is current on this thread: the event must be made in
    # device 1's context (else recording it on device 1's stream is refused), and
    # device 0's must be current again afterwards.
    out = run(
        """
        producer, consumer = cuda.standin_stream_create(1), cuda.standin_stream_create(1)
        t = ext.on_device(4, 2, 1, stream=producer)
        ctx0 = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx0), 0) == 0
        assert cuda.cuCtxPushCurrent_v2(ctx0) == 0
        capsule = t.__dlpack__(stream=consumer, max_version=(1, 3))
        assert cuda.standin_waits(consumer) == 1
        current = ctypes.c_void_p()
        assert cuda.cuCtxGetCurrent(ctypes.byref(current)) == 0
        assert current.value == ctx0.value, "device 0's context is current again"
        assert cuda.cuCtxPopCurrent_v2(None) == 0
        # And from a thread with no context at all.
        t.__dlpack__(stream=consumer, max_version=(1, 3))
        assert cuda.standin_waits(consumer) == 2
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_the_event_is_made_in_the_producer_streams_context_not_the_memorys_device():
    # Managed memory on device 0 whose pending work is on a stream of device 1: the
    # event must be made in that stream's context (the driver records an event only
    # on a stream of its own context), not device 0's.
    out = run(
        """
        producer, consumer = cuda.standin_stream_create(1), cuda.standin_stream_create(1)
        t = ext.on_device(4, 13, 0, stream=producer)  # cuda_managed:0
        t.__dlpack__(stream=consumer, max_version=(1, 3))
        assert cuda.standin_waits(consumer) == 1
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_our_exchange_table_orders_the_values_stream_for_the_stream_it_reports():
    # DLPackTensor's C exchange table reports NULL (the default stream) as current:
    # its _no_sync exports make the legacy default stream wait for the value's stream,
    # as __dlpack__(stream=None) does (they handed the memory over unordered).
    out = run(
        """
        producer = cuda.standin_stream_create(1)
        t = ext.on_device(4, 2, 1, stream=producer)
        d = ext.describe(t)  # the crate imports its own tensor through the table
        assert (d["device"], d["stream"]) == ((2, 1), 1), d
        assert cuda.standin_default_stream_waits(1) == 1
        assert ext.describe_borrowed(t)["device"] == (2, 1)
        assert cuda.standin_default_stream_waits(1) == 2
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_the_stand_in_refuses_what_the_driver_refuses():
    # The stand-in's own rules, so that the tests above can fail: no context, no event;
    # an event of device 0 cannot be recorded on a stream of device 1.
    out = run(
        """
        event = ctypes.c_void_p()
        assert cuda.cuEventCreate(ctypes.byref(event), 2) == 201
        assert cuda.cuStreamSynchronize(ctypes.c_void_p(1)) == 201  # the legacy stream
        ctx0 = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx0), 0) == 0
        assert cuda.cuCtxPushCurrent_v2(ctx0) == 0
        assert cuda.cuEventCreate(ctypes.byref(event), 2) == 0
        other = cuda.standin_stream_create(1)
        assert cuda.cuEventRecord(event, ctypes.c_void_p(other)) == 400
        assert cuda.cuCtxPopCurrent_v2(None) == 0
        assert cuda.cuCtxPopCurrent_v2(None) == 201
        assert cuda.standin_refusals() == 4
        print("ok")
        """
    )
    assert out == "ok\n"


def test_pinned_and_managed_memory_is_read_by_the_host_only_after_its_stream():
    # The one host-read rule: the buffer export, copy=True, dl_device=cpu and
    # Native::numpy of pinned (cuda_host) or managed memory first synchronise the
    # value's stream; an export on its own device (the consumer orders it) does not.
    out = run(
        """
        for device_type in (3, 13):  # cuda_host:0, cuda_managed:0
            s = cuda.standin_stream_create(0)
            t = ext.on_device(4, device_type, 0, stream=s)  # host memory declared so
            memoryview(t).release()
            assert cuda.standin_syncs(s) == 1
            t.__dlpack__(max_version=(1, 3), dl_device=(1, 0))
            assert cuda.standin_syncs(s) == 2
            t.__dlpack__(max_version=(1, 3), copy=True)
            assert cuda.standin_syncs(s) == 3
            if device_type == 3:
                # Pinned memory as it is: its consumer (NumPy) reads it on the host at
                # once, as no stream protocol orders pinned memory.
                t.__dlpack__(max_version=(1, 3))
                assert cuda.standin_syncs(s) == 4
            else:
                # Managed memory to a consumer that names no stream (NumPy, which reads it
                # on the host at once); a CUDA consumer names its stream and is made to wait.
                t.__dlpack__(max_version=(1, 3))
                assert cuda.standin_syncs(s) == 4
                consumer = cuda.standin_stream_create(0)
                t.__dlpack__(max_version=(1, 3), stream=consumer)
                assert (cuda.standin_syncs(s), cuda.standin_waits(consumer)) == (4, 1)
        device = cuda.standin_stream_create(0)
        try:
            memoryview(ext.on_device(4, 2, 0, stream=device))
        except BufferError:
            pass
        else:
            raise AssertionError("device memory read by the host")
        assert cuda.standin_syncs(device) == 0
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_host_views_of_pinned_and_managed_imports_wait_for_the_stream_the_data_is_ready_on():
    # The same rule for imports: as_slice / to_vec of pinned or managed memory (they
    # were refused: "expected a tensor on cpu:0") read it once the stream the import's data is
    # ready on has finished; device memory is still refused.
    out = run(
        """
        s = cuda.standin_stream_create(0)
        pinned = ext.on_device(4, 3, 0, stream=s)
        # The export of pinned memory waits for its stream on the host (once), and the
        # import names no stream (pinned memory has no stream protocol): nothing more.
        assert ext.slice_values(pinned, "float32") == [0.0] * 4
        assert cuda.standin_syncs(s) == 1
        assert cuda.standin_default_stream_syncs(0) == 0
        managed = ext.on_device(4, 13, 0, stream=s)
        # Imported on CUDA's legacy default stream (1), made to wait for s; the view
        # waits for the legacy stream on the host before reading.
        assert ext.slice_values(managed, "float32") == [0.0] * 4
        assert cuda.standin_default_stream_waits(0) == 1
        assert cuda.standin_default_stream_syncs(0) == 1
        assert ext.to_list(managed, "float32") == [0.0] * 4
        assert cuda.standin_default_stream_syncs(0) == 2
        try:
            ext.slice_values(ext.on_device(4, 2, 0, stream=s), "float32")
        except ValueError as err:
            assert str(err) == "expected a tensor on cpu:0, got one on cuda:0", err
        else:
            raise AssertionError("device memory read by the host")
        assert cuda.standin_refusals() == 0
        assert cuda.standin_context_depth() == 0
        print("ok")
        """
    )
    assert out == "ok\n"
