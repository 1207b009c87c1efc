"""CUDA paths against the stand-in driver (tests/cuda-standin, `libcuda.so` built by
`make test`), which enforces the driver's context rules: every call that needs a current
context fails without one, and an event is recorded only on streams of its own device.
Each case runs in a fresh interpreter through the shared harness (standin.py: `run`, the
prelude's helpers over queued stream work and the race detector) and ends with the number
of races the stand-in recorded, zero unless the case makes them on purpose."""

import ctypes.util
import os

import pytest

from standin import STANDIN, needs_standin, run

pytestmark = needs_standin


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
        assert_clean()
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
        assert attempt(lambda: memoryview(ext.on_device(4, 2, 0, stream=device))) == (
            "BufferError: expected a tensor in host memory for the buffer protocol, "
            "got one on cuda:0")
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
        assert attempt(lambda: ext.slice_values(ext.on_device(4, 2, 0, stream=s), "float32")) == (
            "TypeError: expected a tensor on cpu:0, got one on cuda:0")
        assert_clean()
        print("ok")
        """
    )
    assert out == "ok\n"


def test_stream_work_runs_only_when_something_orders_it():
    # The stand-in's own queues, so that the tests below can fail: an enqueued write is
    # invisible until its stream is synchronised, or an event after it is.
    out = run(
        """
        pinned = cuda.standin_alloc(0, 16, 1)
        s = cuda.standin_stream_create(0)
        write(s, pinned, [1, 2, 3, 4])
        assert floats(pinned, 4) == [0] * 4 and cuda.standin_pending(pinned, 16) == 1
        assert sync(s) == 0
        assert floats(pinned, 4) == [1, 2, 3, 4] and cuda.standin_pending(pinned, 16) == 0
        assert host_read(pinned, 4) == 0
        # An event orders what was enqueued before its record, not after.
        e = event(0)
        write(s, pinned, [5, 6, 7, 8])
        assert record(e, s) == 0
        write(s, pinned + 8, [9, 9])
        assert cuda.cuEventSynchronize(e) == 0
        assert floats(pinned, 4) == [5, 6, 7, 8] and cuda.standin_pending(pinned, 16) == 1
        assert host_read(pinned, 2) == 0  # the first half: no write pending on it
        # A stream waiting for an event runs the event's work first, when it runs.
        other = cuda.standin_stream_create(0)
        e2 = event(0)
        assert record(e2, s) == 0 and wait(other, e2) == 0
        read(other, pinned, 4)  # ordered after both writes on s: no race
        assert sync(other) == 0
        assert floats(pinned, 4) == [5, 6, 9, 9] and cuda.standin_pending(pinned, 16) == 0
        assert host_read(pinned, 4) == 0
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_unordered_accesses_are_recorded_as_races():
    # The detector itself: each access below is not ordered after a pending write of the
    # same memory on another stream (or, for the host, not waited for), whether or not
    # the write happened to run.
    out = run(
        """
        pinned = cuda.standin_alloc(0, 16, 1)
        a, b = cuda.standin_stream_create(0), cuda.standin_stream_create(0)
        write(a, pinned, [1, 2, 3, 4])
        assert host_read(pinned, 4) == 1        # 1: the host did not wait for a
        read(b, pinned + 12, 1)                  # 2: b is not ordered after a
        write(b, pinned, [7])                    # 3: nor here (write after write)
        read(b, pinned + 16, 1)                  # beyond the write: no race
        e = event(0)
        assert record(e, a) == 0 and wait(b, e) == 0
        read(b, pinned, 4)                       # ordered now: no race
        # A write after another stream's unordered read races too.
        c = cuda.standin_stream_create(0)
        write(c, pinned, [0])                    # 4, 5, 6: a's write, b's write and read
        assert sync(a) == 0 and sync(b) == 0 and sync(c) == 0
        assert host_read(pinned, 4) == 0         # all waited for
        print(cuda.standin_races())
        """,
        races=6,
    )
    assert out == "6\n"


HOST_READS = """
for device_type in (3, 13):  # cuda_host:0, cuda_managed:0
    s = cuda.standin_stream_create(0)
    t = ext.on_device(4, device_type, 0, stream=s)
    address = ext.describe(t)["data_ptr"]
    readers = [
        lambda: ext.slice_values(t, "float32"),              # an import's host view
        lambda: ext.to_list(t, "float32"),
        lambda: memoryview(t).cast("B").cast("f").tolist(),  # the buffer export
        lambda: list(np.from_dlpack(t, device="cpu")),       # dl_device=cpu
        lambda: list(np.from_dlpack(t, device="cpu", copy=True)),
    ]
    for i, reader in enumerate(readers):
        written = [i + 0.5, i + 1.5, i + 2.5, i + 3.5]
        write(s, address, written)  # a kernel still queued on the value's stream
        if "STANDIN_SEED" not in os.environ:  # (the seeded scheduler may run it early)
            assert cuda.standin_pending(address, 16) == 1
        seen = [float(x) for x in reader()]
        assert host_read(address, 4) == 0, (device_type, i)
        assert seen == written, (device_type, i, seen)
assert cuda.standin_refusals() == 0
print("ok")
"""


def test_the_host_reads_pinned_and_managed_memory_after_the_writes_queued_on_its_stream():
    # The one host-read rule, against queued work: what each host reader sees is what
    # the kernel queued on the value's stream wrote (it ran because the crate waited for
    # that stream, directly or through the legacy stream an import is ready on), and the
    # stand-in saw the host wait before the read.
    assert run(HOST_READS) == "ok\n"


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_host_read_rule_holds_whatever_work_runs_early(seed):
    # The seeded scheduler runs ready work at arbitrary driver calls: values may appear
    # early, but only the ordering counts, and it must hold in every interleaving.
    assert run(HOST_READS, seed=seed) == "ok\n"


def test_consumers_work_on_the_stream_they_named_is_ordered_after_the_producers():
    # The DLPack stream protocol against queued work: after __dlpack__(stream=consumer),
    # a kernel the consumer enqueues on its stream reads what the producer's queued
    # kernel wrote; stream=None orders CUDA's legacy default stream. A kernel on a stream
    # the consumer did not name is unordered: the one race this case makes on purpose.
    out = run(
        """
        producer = cuda.standin_stream_create(1)
        def produced(values):
            "Device memory on device 1 (so the crate says) that a queued kernel writes."
            t = ext.on_device(4, 2, 1, stream=producer)
            address = ext.describe(t.__dlpack__(max_version=(1, 3), stream=-1))["data_ptr"]
            write(producer, address, values)
            return t, address
        t, address = produced([1, 2, 3, 4])
        consumer = cuda.standin_stream_create(1)
        t.__dlpack__(max_version=(1, 3), stream=consumer)
        read(consumer, address, 4)
        t2, address2 = produced([5, 6, 7, 8])
        t2.__dlpack__(max_version=(1, 3))  # stream=None: the legacy default stream
        with current(1):
            read(LEGACY, address2, 4)
        assert cuda.standin_races() == 0
        # A blocking stream is ordered after the legacy stream's work (CUDA's implicit
        # synchronisation); a non-blocking one that no one named is not: a race.
        read(cuda.standin_stream_create(1), address2, 4)
        assert cuda.standin_races() == 0
        read(cuda.standin_stream_create_with_flags(1, 1), address2, 4)
        assert cuda.standin_races() == 1
        with current(1):
            assert sync(LEGACY) == 0
        assert cuda.standin_pending(address2, 16) == 0
        assert sync(consumer) == 0
        assert cuda.standin_pending(address, 16) == 0
        assert cuda.standin_refusals() == 0
        print("ok")
        """,
        races=1,
    )
    assert out == "ok\n"


def test_the_legacy_default_stream_synchronises_with_blocking_streams_only():
    # CUDA's rules: work on the legacy default stream waits for earlier work on the
    # blocking streams of its context, and work on a blocking stream (the per-thread
    # default stream is one) waits for earlier legacy work; a stream created with
    # CU_STREAM_NON_BLOCKING takes part in neither, and blocking streams do not
    # synchronise with each other. Races 1 to 5 below are these rules' absences.
    out = run(
        """
        import threading
        pinned = cuda.standin_alloc(0, 64, 1)
        blocking = cuda.standin_stream_create_with_flags(0, 0)
        non_blocking = cuda.standin_stream_create_with_flags(0, 1)
        with current(0):
            made = ctypes.c_void_p()
            assert cuda.cuStreamCreate(ctypes.byref(made), 1) == 0  # non-blocking too
            assert cuda.cuStreamCreate(ctypes.byref(ctypes.c_void_p()), 4) == 1  # no flag 4
            created_non_blocking = made.value

            write(blocking, pinned, [1])
            read(LEGACY, pinned, 1)              # after the blocking stream's write
            write(LEGACY, pinned + 4, [2])
            read(blocking, pinned + 4, 1)        # after the legacy stream's write
            write(PER_THREAD, pinned + 8, [3])
            read(LEGACY, pinned + 8, 1)          # the per-thread stream is blocking
            write(LEGACY, pinned + 12, [4])
            read(PER_THREAD, pinned + 12, 1)
            assert cuda.standin_races() == 0

            write(non_blocking, pinned + 16, [5])
            read(LEGACY, pinned + 16, 1)                  # race 1
            write(LEGACY, pinned + 20, [6])
            read(created_non_blocking, pinned + 20, 1)    # race 2
            write(blocking, pinned + 24, [7])
            read(PER_THREAD, pinned + 24, 1)              # race 3: blocking streams
            write(PER_THREAD, pinned + 28, [8])
            read(blocking, pinned + 28, 1)                # race 4
            assert cuda.standin_races() == 4

        def other_thread():
            # Another thread's per-thread default stream is another stream.
            with current(0):
                read(PER_THREAD, pinned + 28, 1)          # race 5
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        # Synchronising the legacy stream runs what its work depends on.
        write(blocking, pinned + 32, [9])
        with current(0):
            read(LEGACY, pinned + 32, 1)
            assert sync(LEGACY) == 0
        assert floats(pinned + 32, 1) == [9]
        assert host_read(pinned + 32, 1) == 0
        print("ok")
        """,
        races=5,
    )
    assert out == "ok\n"


def test_the_stand_in_enforces_the_drivers_capture_rules():
    # CUDA's stream capture, as the driver documents it: work on a capturing stream is
    # recorded, not run; synchronising it is unsupported (900) and invalidates the
    # capture (901 from then on, and at the end); any use of the legacy stream while a
    # blocking stream of its context captures is an implicit dependency (906, the
    # capture invalidated), but not while only a non-blocking stream captures; a stream
    # that waits for an event recorded in a capture joins it, and must be joined back
    # (904 otherwise); a capturing stream cannot wait for uncaptured work (905).
    out = run(
        """
        pinned = cuda.standin_alloc(0, 16, 1)
        s = cuda.standin_stream_create(0)
        assert begin_capture(s) == 0 and capturing(s) == 1
        assert begin_capture(s) == 401                 # already capturing
        write(s, pinned, [1, 2, 3, 4])                 # captured: never runs here
        assert cuda.standin_pending(pinned, 16) == 0 and floats(pinned, 4) == [0] * 4
        assert end_capture(s) == (0, True) and capturing(s) == 0
        assert end_capture(s) == (401, False)          # not capturing
        with current(0):
            assert begin_capture(LEGACY) == 900        # the legacy stream cannot capture

        assert begin_capture(s) == 0
        assert sync(s) == 900 and capturing(s) == 2
        assert cuda.standin_enqueue_read(s, pinned, 4) == 901
        assert end_capture(s) == (901, False) and capturing(s) == 0

        blocking, non_blocking = (cuda.standin_stream_create_with_flags(0, f) for f in (0, 1))
        assert begin_capture(non_blocking) == 0
        with current(0):
            assert sync(LEGACY) == 0 and capturing(LEGACY) == 0
            assert begin_capture(blocking) == 0
            assert capturing(LEGACY) == ("error", 906)  # a query: invalidates nothing
            assert capturing(blocking) == 1
            assert sync(LEGACY) == 906
            assert capturing(blocking) == 2 and capturing(non_blocking) == 1
        assert end_capture(blocking) == (901, False)
        assert end_capture(non_blocking) == (0, True)

        # Cross-stream capture: fork and join through events.
        origin, side = cuda.standin_stream_create(0), cuda.standin_stream_create(0)
        fork, join = event(0), event(0)
        assert begin_capture(origin) == 0
        assert record(fork, origin) == 0 and wait(side, fork) == 0
        assert capturing(side) == 1
        assert record(join, side) == 0 and wait(origin, join) == 0
        assert end_capture(origin) == (0, True) and capturing(side) == 0
        assert begin_capture(origin) == 0
        assert record(fork, origin) == 0 and wait(side, fork) == 0
        assert end_capture(side) == (903, False)        # not where it began: invalidated
        assert end_capture(origin) == (901, False)
        assert begin_capture(origin) == 0
        assert record(fork, origin) == 0 and wait(side, fork) == 0
        assert end_capture(origin) == (904, False)      # side never joined back
        assert capturing(side) == 0
        assert cuda.cuEventSynchronize(fork) == 907     # recorded in a capture

        uncaptured = event(0)
        assert record(uncaptured, side) == 0
        assert begin_capture(origin) == 0
        assert wait(origin, uncaptured) == 905
        assert end_capture(origin) == (901, False)
        assert cuda.standin_refusals() == 15
        print("ok")
        """
    )
    assert out == "ok\n"


def test_the_crate_refuses_ordering_across_a_capture_and_leaves_the_capture_intact():
    # Under CUDA graph capture the crate's ordering calls (an event wait, a host
    # synchronisation) are refused before the driver sees them, as BufferErrors that say
    # so, and the user's capture survives (cuStreamEndCapture succeeds). Before, the
    # driver refused them itself and invalidated the capture (901 at EndCapture), or a
    # consumer's stream silently joined the capture (904 at EndCapture).
    out = run(
        """
        def capturing_refusal(call, stream):
            return (
                f"BufferError: CUDA stream {stream:#x} is being captured into a CUDA graph, "
                f"where {call} "
                "is not allowed; export or import outside the capture (or export with "
                "stream=-1 and order the streams yourself): the capture is left as it was"
            )
        legacy_refusal = (
            "BufferError: the CUDA driver's cuStreamIsCapturing failed with CUresult 906 "
            "(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: a stream is being captured into a CUDA "
            "graph; export or import outside the capture (or export with stream=-1 and "
            "order the streams yourself))"
        )

        # The value's stream captures; a consumer names no stream (the legacy stream,
        # which cannot be used while a blocking stream of its context captures): the
        # query says so, and the capture goes on.
        s = cuda.standin_stream_create(0)
        t = ext.on_device(4, 2, 0, stream=s)
        assert begin_capture(s) == 0
        assert attempt(lambda: t.__dlpack__(max_version=(1, 3))) == legacy_refusal
        assert end_capture(s) == (0, True)

        # Another blocking stream of the device captures: the same, for any value.
        other = cuda.standin_stream_create(0)
        assert begin_capture(other) == 0
        assert attempt(lambda: t.__dlpack__(max_version=(1, 3))) == legacy_refusal
        assert end_capture(other) == (0, True)

        # A consumer's stream outside the capture would join it: refused.
        consumer = cuda.standin_stream_create(0)
        assert begin_capture(s) == 0
        assert attempt(lambda: t.__dlpack__(max_version=(1, 3), stream=consumer)) == (
            capturing_refusal("cuStreamWaitEvent", s))
        assert capturing(consumer) == 0
        # So is a __cuda_array_interface__ import given a consumer stream.
        memory = cuda.standin_alloc(0, 64, 0)
        assert attempt(lambda: ext.import_with(CudaArray(memory, 16, s), stream=consumer)) == (
            capturing_refusal("cuStreamWaitEvent", s))
        assert capturing(consumer) == 0
        assert end_capture(s) == (0, True)

        # The consumer's stream captures, the value's does not: a capture cannot wait
        # for work outside it.
        assert begin_capture(consumer) == 0
        assert attempt(lambda: t.__dlpack__(max_version=(1, 3), stream=consumer)) == (
            capturing_refusal("cuStreamWaitEvent", consumer))
        assert end_capture(consumer) == (0, True)

        # Both in one capture (the consumer's stream joined through an event): the wait
        # is an edge of the graph, as the driver allows.
        assert begin_capture(s) == 0
        join = event(0)
        assert record(join, s) == 0 and wait(consumer, join) == 0
        assert attempt(lambda: t.__dlpack__(max_version=(1, 3), stream=consumer)) == "ok"
        rejoin = event(0)
        assert record(rejoin, consumer) == 0 and wait(s, rejoin) == 0
        assert end_capture(s) == (0, True)

        # The host reads pinned or managed memory whose stream captures: refused, the
        # capture intact.
        for device_type in (3, 13):
            s = cuda.standin_stream_create(0)
            t = ext.on_device(4, device_type, 0, stream=s)
            assert begin_capture(s) == 0
            assert attempt(lambda: memoryview(t)) == capturing_refusal("cuStreamSynchronize", s)
            assert end_capture(s) == (0, True)
        # An import from a producer whose stream captures, synchronising by default: the
        # host cannot wait for a capture, so the import is ready on the capturing stream
        # (stream-ordered there, where the consumer's work joins the capture).
        assert begin_capture(s) == 0
        d = ext.describe(CudaArray(memory, 16, s))
        assert (d["stream"], cuda.standin_syncs(s)) == (s, 0)
        read(s, memory, 16)  # the consumer's kernel, captured after the producer's work
        assert end_capture(s) == (0, True)
        assert cuda.standin_context_depth() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_work_the_seeded_scheduler_ran_early_is_still_unordered():
    # With STANDIN_SEED, ready work runs at arbitrary driver calls: the write below shows
    # up without anything ordering it, and the host's read of it is still a race.
    out = run(
        """
        pinned = cuda.standin_alloc(0, 16, 1)
        s = cuda.standin_stream_create(0)
        write(s, pinned, [1, 2, 3, 4])
        calls = 0
        while cuda.standin_pending(pinned, 16) and calls < 1000:
            calls += 1
        assert floats(pinned, 4) == [1, 2, 3, 4], calls
        assert host_read(pinned, 4) == 1
        print("ok")
        """,
        races=1,
        seed=7,
    )
    assert out == "ok\n"


# Host copies of CUDA device memory: an export asked for the CPU (`dl_device=(1, 0)`,
# NumPy's `from_dlpack(x, device="cpu")`), and `PyTensor::to_vec` of a device import, read
# through the driver after the value's stream; what they read is checked against the
# stand-in's record of who wrote it.


def test_an_export_asked_for_the_cpu_is_a_host_copy_made_after_the_values_stream():
    out = run(
        """
        memory = cuda.standin_alloc(1, 64, 0)  # device memory of device 1: PROT_NONE
        producer = cuda.standin_stream_create(1)
        write(producer, memory, range(16))  # pending until something orders it
        t = ext.over_memory(memory, 64, 2, 1, [4, 4], stream=producer)
        a = np.from_dlpack(t, device="cpu")  # dl_device=(1, 0), copy=None
        assert a.tolist() == np.arange(16, dtype=np.float32).reshape(4, 4).tolist()
        assert a.flags.writeable and a.ctypes.data != memory
        assert cuda.standin_syncs(producer) == 1, "the host waited for the copy on its stream"
        b = np.from_dlpack(t, device="cpu", copy=True)
        assert b.tolist() == a.tolist() and b.ctypes.data != a.ctypes.data
        assert ext.describe(t.__dlpack__(dl_device=(1, 0), max_version=(1, 3)))["copied"]
        for kwargs in [dict(dl_device=(1, 0), copy=False), dict(copy=True)]:
            print(kwargs, attempt(lambda: t.__dlpack__(max_version=(1, 3), **kwargs)))
        # In place on the device, as before: no copy, no host wait.
        assert ext.describe(t)["data_ptr"] == memory
        assert_clean()
        print("ok")
        """
    )
    refusals, ok = out.splitlines()[:2], out.splitlines()[2]
    assert refusals == [
        "{'dl_device': (1, 0), 'copy': False} BufferError: cannot export a tensor on cuda:1 "
        "to cpu:0: pyo3-dlpack copies across devices only from CUDA device memory to the CPU, "
        "and not with copy=False",
        "{'copy': True} BufferError: copy=True copies to the host only, but the tensor is on "
        "cuda:1 and dl_device does not ask for the CPU; pass dl_device=(1, 0) for a host copy "
        "of CUDA memory, or export without copy and copy it in the consumer",
    ]
    assert ok == "ok"


def test_a_host_copy_of_strided_device_memory_is_gathered_in_row_major_order():
    out = run(
        """
        memory = cuda.standin_alloc(0, 24, 0)
        producer = cuda.standin_stream_create(0)
        write(producer, memory, range(6))
        # (3, 2) with element strides (1, 3): the transpose of a row-major (2, 3).
        t = ext.over_memory(memory, 24, 2, 0, [3, 2], strides=[1, 3], stream=producer)
        print(np.from_dlpack(t, device="cpu").tolist())
        # A column of the (2, 3): two elements, three apart, of a span of four.
        column = ext.over_memory(memory + 4, 20, 2, 0, [2], strides=[3], stream=producer)
        print(np.from_dlpack(column, device="cpu").tolist())
        """
    )
    assert out == "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]\n[1.0, 4.0]\n"


def test_a_host_copy_of_packed_sub_byte_device_elements_is_their_bytes():
    # 64 float4 elements packed in a 32-byte allocation: copied as their 32 bytes (one byte
    # an element read 64 bytes of a 32-byte allocation, and wrote as many into 32).
    out = run(
        """
        import ctypes, struct
        memory = cuda.standin_alloc(0, 32, 0)
        producer = cuda.standin_stream_create(0)
        write(producer, memory, range(8))
        t = ext.over_memory(memory, 32, 2, 0, [64], dtype="float4_e2m1fn", stream=producer)
        capsule = t.__dlpack__(dl_device=(1, 0), max_version=(1, 3))
        api = ctypes.pythonapi
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        managed = api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        # dl_tensor.data follows the version, manager_ctx, deleter and flags (8 bytes each).
        data = ctypes.c_void_p.from_address(managed + 32)
        print(ctypes.string_at(data.value, 32) == struct.pack("8f", *range(8)))
        print(ext.describe(capsule)["copied"])
        assert_clean()
        """
    )
    assert out == "True\nTrue\n"


def test_to_vec_of_a_device_import_reads_through_the_driver_after_the_producers_stream():
    out = run(
        """
        memory = cuda.standin_alloc(1, 64, 0)
        producer = cuda.standin_stream_create(1)
        write(producer, memory, [float(i) * 2 for i in range(16)])
        # A DLPack import (through our exchange table: ready on the producer's stream).
        t = ext.over_memory(memory, 64, 2, 1, [16], stream=producer)
        print(ext.to_list(t, "float32") == [float(i) * 2 for i in range(16)])
        # A __cuda_array_interface__ import (synchronised: ready on every stream).
        write(producer, memory, [7.0] * 16)
        print(ext.to_list(CudaArray(memory, 16, producer), "float32") == [7.0] * 16)
        # Views of device memory are still refused: the host cannot touch it.
        print(attempt(lambda: ext.slice_values(t, "float32")))
        assert_clean()
        """
    )
    assert out == "True\nTrue\nTypeError: expected a tensor on cpu:0, got one on cuda:1\n"


def test_a_host_copy_races_with_a_write_on_a_stream_the_value_did_not_name():
    # The value says its data is ready after `producer`, but another stream writes it
    # too, unordered: the copy (on `producer`) reads memory that write may still change.
    out = run(
        """
        memory = cuda.standin_alloc(0, 16, 0)
        producer, other = cuda.standin_stream_create(0), cuda.standin_stream_create(0)
        write(other, memory, [1.0] * 4)
        t = ext.over_memory(memory, 16, 2, 0, [4], stream=producer)
        np.from_dlpack(t, device="cpu")
        print("copied")
        """,
        races=1,
    )
    assert out == "copied\n"


# `DLPackTensor.__cuda_array_interface__` (version 3) of device memory: the dict names CUDA's
# legacy default stream as its `stream`, which consumers synchronise on before using the
# data (CAI v3), so the export first makes the legacy stream wait for the value's stream.
# The value's stream is non-blocking here: nothing but that wait orders the legacy stream
# after it.


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_the_cuda_array_interface_export_names_the_legacy_stream_after_the_values_stream(seed):
    out = run(
        """
        memory = cuda.standin_alloc(1, 64, 0)  # device 1's memory: PROT_NONE to the host
        producer = cuda.standin_stream_create_with_flags(1, 1)
        write(producer, memory, range(16))  # pending until something orders it
        t = ext.over_memory(memory, 64, 2, 1, [4, 4], stream=producer)
        with current(0):  # another device's context current: device 1's is used, and popped
            before = context()
            cai = t.__cuda_array_interface__
            assert context() == before
        assert cai == {
            "shape": (4, 4), "typestr": "<f4", "data": (memory, False), "version": 3,
            "strides": None, "descr": [("", "<f4")], "stream": 1,
        }, cai
        # An event wait, not a host wait: the write may still be queued.
        assert cuda.standin_default_stream_waits(1) == 1
        assert cuda.standin_syncs(producer) == 0 and cuda.standin_waits(producer) == 0
        if "STANDIN_SEED" not in os.environ:
            assert cuda.standin_pending(memory, 64) == 1
        # A consumer honouring the stream key reads on the legacy stream: after the write.
        with current(1):
            read(LEGACY, memory, 16)
            assert sync(LEGACY) == 0
        assert cuda.standin_pending(memory, 64) == 0
        assert device_floats(memory, 16) == list(range(16))
        # Each read of the attribute orders again (later writes on the value's stream).
        write(producer, memory, [7.0] * 16)
        assert t.__cuda_array_interface__ == cai
        assert cuda.standin_default_stream_waits(1) == 2
        # The crate's own CAI import of the dict synchronises its stream (the legacy one)
        # and reads what the second write wrote.
        class Interface:
            __cuda_array_interface__ = cai
        assert ext.to_list(Interface(), "float32") == [7.0] * 16
        d = ext.describe(Interface())
        assert (d["device"], d["shape"], d["data_ptr"]) == ((2, 1), (4, 4), memory), d
        assert_clean()
        print("ok")
        """,
        seed=seed,
    )
    assert out == "ok\n"


def test_a_consumer_that_ignores_the_stream_key_races():
    # The detector sees a consumer that reads the interface's data on a stream of its own
    # without synchronising on the dict's `stream` first.
    out = run(
        """
        memory = cuda.standin_alloc(0, 16, 0)
        producer = cuda.standin_stream_create_with_flags(0, 1)
        write(producer, memory, [1, 2, 3, 4])
        t = ext.over_memory(memory, 16, 2, 0, [4], stream=producer)
        assert t.__cuda_array_interface__["stream"] == 1
        read(cuda.standin_stream_create_with_flags(0, 1), memory, 4)
        print("read")
        """,
        races=1,
    )
    assert out == "read\n"


def test_the_cuda_array_interface_export_of_layouts_dtypes_and_devices():
    out = run(
        """
        memory = cuda.standin_alloc(0, 64, 0)
        # Strides in bytes when not C-contiguous: a transpose, a column.
        t = ext.over_memory(memory, 64, 2, 0, [4, 4], strides=[1, 4])
        print(t.__cuda_array_interface__["strides"])
        print(ext.over_memory(memory + 4, 52, 2, 0, [4], strides=[4]).__cuda_array_interface__[
            "strides"])
        # A read-only value says so in `data`; no stream named: no wait.
        cai = ext.over_memory(memory, 64, 2, 0, [16], read_only=True).__cuda_array_interface__
        print(cai["data"] == (memory, True), cai["stream"])
        assert cuda.standin_default_stream_waits(0) == 0
        # The typestrs of the interface's kinds; a 0-d value has the shape ().
        for dtype in ["bool", "int8", "uint16", "int64", "float64", "complex64"]:
            cai = ext.over_memory(memory, 64, 2, 0, [], dtype=dtype).__cuda_array_interface__
            print(dtype, cai["typestr"], cai["descr"], cai["shape"], cai["strides"])
        # Managed memory is CUDA memory too.
        managed = cuda.standin_alloc(0, 64, 2)
        print(ext.over_memory(managed, 64, 13, 0, [16]).__cuda_array_interface__["data"][0]
              == managed)
        # No typestr (another kind, elements narrower than a byte): no attribute.
        for dtype in ["bfloat16", "float4_e2m1fn"]:
            value = ext.over_memory(memory, 64, 2, 0, [4], dtype=dtype)
            print(attempt(lambda: value.__cuda_array_interface__),
                  hasattr(value, "__cuda_array_interface__"))
        # Nor on another device than CUDA's (pinned memory, the CPU).
        pinned = cuda.standin_alloc(0, 64, 1)
        for device in [3, 1]:
            value = ext.over_memory(pinned, 64, device, 0, [16])
            print(attempt(lambda: value.__cuda_array_interface__),
                  hasattr(value, "__cuda_array_interface__"))
        assert_clean()
        """
    )
    assert out.splitlines() == [
        "(4, 16)",
        "(16,)",
        "True 1",
        "bool |b1 [('', '|b1')] () None",
        "int8 |i1 [('', '|i1')] () None",
        "uint16 <u2 [('', '<u2')] () None",
        "int64 <i8 [('', '<i8')] () None",
        "float64 <f8 [('', '<f8')] () None",
        "complex64 <c8 [('', '<c8')] () None",
        "True",
        "AttributeError: a bfloat16 tensor has no __cuda_array_interface__ typestr: expected "
        "bool, an integer, float or complex type False",
        "AttributeError: a float4_e2m1fn tensor has no __cuda_array_interface__ typestr: "
        "expected bool, an integer, float or complex type False",
        "AttributeError: a DLPackTensor on cuda_host:0 has no __cuda_array_interface__: it "
        "describes CUDA device memory False",
        "AttributeError: a DLPackTensor on cpu:0 has no __cuda_array_interface__: it describes "
        "CUDA device memory False",
    ]


def test_the_cuda_array_interface_export_is_refused_while_the_values_device_captures():
    # The legacy stream cannot be used while a blocking stream of its context captures
    # (the wait would invalidate the capture): refused, the capture intact.
    out = run(
        """
        memory = cuda.standin_alloc(0, 16, 0)
        s = cuda.standin_stream_create(0)
        t = ext.over_memory(memory, 16, 2, 0, [4], stream=s)
        assert begin_capture(s) == 0
        print(attempt(lambda: t.__cuda_array_interface__))
        assert end_capture(s) == (0, True)
        assert t.__cuda_array_interface__["stream"] == 1
        assert cuda.standin_context_depth() == 0
        """
    )
    assert out == (
        "BufferError: the CUDA driver's cuStreamIsCapturing failed with CUresult 906 "
        "(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: a stream is being captured into a CUDA graph; "
        "export or import outside the capture (or export with stream=-1 and order the streams "
        "yourself))\n"
    )


# The driver the crate loads: the library PYO3_DLPACK_CUDA_DRIVER names (else libcuda.so.1),
# once per process, on first use; why it could not be loaded is remembered and said by
# every call that needed it. Each case sets the variable (or the stand-in's STANDIN_INIT_ERROR,
# the code its cuInit fails with) before the crate's first driver call.
NEEDERS = """
memory = cuda.standin_alloc(0, 64, 0)
for need in [
    lambda: ext.describe(CudaArray(memory, 16, None)),                # pointer attributes
    lambda: memoryview(ext.on_device(4, 3, 0, stream=5)),              # the host-read rule
    lambda: ext.on_device(4, 2, 0, stream=5).__dlpack__(stream=7),     # an event wait
    lambda: ext.to_list(ext.over_memory(memory, 64, 2, 0, [16]), "float32"),  # a host copy
]:
    print(attempt(need))
"""

PURPOSES = [
    "__cuda_array_interface__ (to find the pointer's device and order the producer's stream)",
    "reading pinned or managed memory on the host after its stream",
    "ordering the export's stream before the consumer's",
    "copying CUDA device memory to the host",
]


@pytest.mark.parametrize(
    "setup, reason",
    [
        ('os.environ["PYO3_DLPACK_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"',
         "/nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory"),
        ('os.environ["PYO3_DLPACK_CUDA_DRIVER"] = "libm.so.6"',
         "cuInit not found: /lib/x86_64-linux-gnu/libm.so.6: undefined symbol: cuInit"),
        # A driver whose cuInit fails (no usable GPU): the library named, and the code.
        ('os.environ["STANDIN_INIT_ERROR"] = "100"',
         "{standin}: the CUDA driver's cuInit failed with CUresult 100 (CUDA_ERROR_NO_DEVICE)"),
    ],
)
def test_a_driver_that_cannot_be_loaded_is_named_with_why_by_every_call_that_needs_it(
    setup, reason
):
    if "libm.so.6" in setup and not os.path.exists("/lib/x86_64-linux-gnu/libm.so.6"):
        pytest.skip("the loader's message names libm.so.6's path on x86-64 Debian/Ubuntu")
    out = run(setup + "\n" + NEEDERS)
    reason = reason.format(standin=STANDIN)
    assert out.splitlines() == [
        f"BufferError: {purpose} needs the CUDA driver, which could not be loaded: {reason}"
        for purpose in PURPOSES
    ]


def test_without_the_variable_the_driver_is_libcuda_so_1():
    if ctypes.util.find_library("cuda"):
        pytest.skip("a CUDA driver is installed: libcuda.so.1 loads")
    out = run('del os.environ["PYO3_DLPACK_CUDA_DRIVER"]\n' + NEEDERS)
    assert out.splitlines()[0] == (
        f"BufferError: {PURPOSES[0]} needs the CUDA driver, which could not be loaded: "
        "libcuda.so.1: cannot open shared object file: No such file or directory"
    )


def test_a_device_the_driver_does_not_have_is_refused_by_cu_device_get():
    # A value that says it is on cuda:7 (the stand-in has two devices) copied to the host
    # on the legacy stream, whose context is device 7's primary context.
    out = run(
        """
        memory = cuda.standin_alloc(0, 64, 0)
        print(attempt(lambda: ext.to_list(ext.over_memory(memory, 64, 2, 7, [16]), "float32")))
        # An empty tensor copies nothing: no driver call.
        print(ext.to_list(ext.over_memory(memory, 0, 2, 7, [0]), "float32"))
        # Another device's memory the host cannot read is refused before any copy.
        print(attempt(lambda: ext.to_list(ext.on_device(4, 10, 0), "float32")))
        assert cuda.standin_context_depth() == 0
        print(cuda.standin_refusals())
        """
    )
    assert out.splitlines() == [
        "BufferError: the CUDA driver's cuDeviceGet failed with CUresult 101 "
        "(CUDA_ERROR_INVALID_DEVICE)",
        "[]",
        "TypeError: expected a tensor on cpu:0, got one on rocm:0",
        "1",
    ]
