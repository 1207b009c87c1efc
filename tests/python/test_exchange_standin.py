"""Imports through a producer's DLPack C exchange table (DLPack 1.3, torch >= 2.10's way in),
against the stand-in driver (the shared harness: standin.py's `run_exchange`, whose
prelude makes `producer`s and reads their counts). The producer is the test extension's
`ExchangeProducer`: its type's `__dlpack_c_exchange_api__` is a static table whose
`current_work_stream` reports the stream the test chose (`ext.exchange_stream`), whose
owning export hands out float32 tensors over stand-in device memory (PROT_NONE to the host)
with a counted deleter (`ext.exchange_counts`), whose allocator hands out blocks of a pool
of stand-in memory the test filled (`ext.exchange_pool`; what `allocate_like` calls), and
whose `__dlpack__` only counts the call and refuses.

Each case queues the producer's writes on the stream it reports, pending until something
orders them, imports in one `StreamMode`, reads the values back through the driver (`to_vec`:
a copy queued on the stream the import is ready on) and ends with zero races: a missing or
misdirected wait shows up as a race or as values not written yet. The producer's stream is
non-blocking unless said otherwise, so CUDA's legacy default stream does not order it
implicitly."""

import pytest

from standin import CUDARC, EXCHANGE, needs_cudarc, needs_standin, run, run_exchange

pytestmark = needs_standin


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_synchronize_makes_the_legacy_stream_wait_for_the_producers_current_stream(seed):
    out = run_exchange(
        """
        p, memory, s = producer(values=range(8))
        # Imported through the table (no __dlpack__), the legacy default stream made to
        # wait for s; the copy to the host is queued on the legacy stream after that wait.
        assert ext.to_list(p, "float32") == list(range(8))
        assert cuda.standin_default_stream_waits(0) == 1
        assert cuda.standin_waits(s) == 0 and cuda.standin_syncs(s) == 0
        assert cuda.standin_pending(memory, 32) == 0
        assert exports() == (1, 1, 0, 0, 0), exports()
        assert counts("queries") == ([(2, 0)],)
        d = ext.import_with(p)
        assert (d["device"], d["shape"], d["data_ptr"], d["stream"]) == ((2, 0), (8,), memory, 1)
        assert cuda.standin_default_stream_waits(0) == 2
        assert exports() == (2, 2, 0, 0, 0), exports()
        assert cuda.standin_refusals() == 0
        print("ok")
        """,
        seed=seed,
    )
    assert out == "ok\n"


def test_stream_ordered_keeps_the_producers_stream_and_waits_for_nothing():
    out = run_exchange(
        """
        p, memory, s = producer(values=[2.0 * i for i in range(8)])
        d = ext.import_with(p, stream_ordered=True, read_as="float32", keep=True)
        assert d["stream"] == s, d
        assert d["values"] == [2.0 * i for i in range(8)]
        # No wait anywhere; the host copy was queued on s and waited for on the host.
        assert cuda.standin_default_stream_waits(0) == 0 and cuda.standin_waits(s) == 0
        assert cuda.standin_syncs(s) == 1
        # The consumer's next kernel, launched on the import's stream, follows the
        # producer's later writes there: no race.
        write(s, memory, [5.0] * 8)
        read(d["stream"], memory, 8)
        assert sync(s) == 0
        # The deleter runs when the consumer lets go, not before.
        assert exports() == (1, 0, 1, 0, 0), exports()
        del d
        assert exports() == (1, 1, 0, 0, 0), exports()
        assert_clean()
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_stream_ordered_consumer_that_reads_on_another_stream_races():
    # The stand-in sees what StreamOrdered leaves to the caller: work on another stream
    # must wait for the import's stream first. Here it does not.
    out = run_exchange(
        """
        p, memory, s = producer(values=range(8))
        assert ext.import_with(p, stream_ordered=True)["stream"] == s
        other = cuda.standin_stream_create_with_flags(0, 1)
        read(other, memory, 8)
        assert sync(other) == 0
        print("raced")
        """,
        races=1,
    )
    assert out == "raced\n"


def test_a_named_consumer_stream_waits_for_the_producers_stream_through_the_table():
    # Synchronize with ImportOptions::stream: the named stream waits (an event recorded
    # on the producer's current stream); the table is used, __dlpack__ never called.
    out = run_exchange(
        """
        p, memory, s = producer(values=range(8))
        consumer = cuda.standin_stream_create_with_flags(0, 1)
        d = ext.import_with(p, stream=consumer, read_as="float32")
        assert (d["stream"], d["values"]) == (consumer, list(range(8))), d
        assert cuda.standin_waits(consumer) == 1
        assert cuda.standin_default_stream_waits(0) == 0
        assert exports() == (1, 1, 0, 0, 0), exports()

        # The legacy stream named explicitly is the default.
        write(s, memory, [3.0] * 8)
        d = ext.import_with(p, stream=LEGACY, read_as="float32")
        assert (d["stream"], d["values"]) == (1, [3.0] * 8), d
        assert cuda.standin_default_stream_waits(0) == 1

        # StreamOrdered with a named stream: the producer's stream, no wait.
        d = ext.import_with(p, stream=consumer, stream_ordered=True)
        assert d["stream"] == s and cuda.standin_waits(consumer) == 1

        # The producer reports its consumer's own stream: nothing to wait for.
        ext.exchange_stream(2, 0, consumer)
        write(consumer, memory, [4.0] * 8)
        d = ext.import_with(p, stream=consumer, read_as="float32")
        assert (d["stream"], d["values"]) == (consumer, [4.0] * 8), d
        assert cuda.standin_waits(consumer) == 1

        # The producer reports NULL (the legacy default stream): the named stream waits
        # for the legacy one (non-blocking: it would not, implicitly).
        ext.exchange_stream(2, 0, None)
        with current(0):
            write(LEGACY, memory, [6.0] * 8)
        d = ext.import_with(p, stream=consumer, read_as="float32")
        assert (d["stream"], d["values"]) == (consumer, [6.0] * 8), d
        assert cuda.standin_waits(consumer) == 2
        assert exports() == (5, 5, 0, 0, 0), exports()
        assert_clean()
        print("ok")
        """
    )
    assert out == "ok\n"


def test_imports_from_a_thread_without_a_context_and_of_device_1_under_device_0s_context():
    out = run_exchange(
        """
        p, memory, s = producer(device=1, values=range(8))
        ctx0 = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx0), 0) == 0
        assert cuda.cuCtxPushCurrent_v2(ctx0) == 0
        # Device 1's legacy stream waits for s (an event made in device 1's context).
        assert ext.to_list(p, "float32") == list(range(8))
        assert counts("queries") == ([(2, 1)],)
        assert cuda.standin_default_stream_waits(1) == 1
        assert cuda.standin_default_stream_waits(0) == 0
        now = ctypes.c_void_p()
        assert cuda.cuCtxGetCurrent(ctypes.byref(now)) == 0 and now.value == ctx0.value
        assert cuda.cuCtxPopCurrent_v2(None) == 0

        # A thread that never had a context: both modes, a named stream of device 1.
        consumer = cuda.standin_stream_create_with_flags(1, 1)
        results = []
        def worker():
            write(s, memory, [9.0] * 8)
            results.append(ext.import_with(p, stream=consumer, read_as="float32"))
            write(s, memory, [8.0] * 8)
            results.append(ext.import_with(p, stream_ordered=True, read_as="float32"))
            results.append(cuda.standin_context_depth())
        worker = threading.Thread(target=worker)
        worker.start()
        worker.join()
        named, ordered, depth = results
        assert (named["stream"], named["values"]) == (consumer, [9.0] * 8), named
        assert (ordered["stream"], ordered["values"]) == (s, [8.0] * 8), ordered
        assert depth == 0 and cuda.standin_waits(consumer) == 1
        assert exports() == (3, 3, 0, 0, 0), exports()
        assert_clean()
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_capturing_producer_stream_makes_a_default_import_stream_ordered_there():
    # Synchronize while the producer's stream is captured into a CUDA graph: no wait or
    # host synchronisation can be made (the legacy stream cannot join a capture), so an
    # import for no named stream is ready on the capturing stream, where the consumer's
    # work joins the capture after the producer's. A named consumer stream would have to
    # wait across the capture's edge: refused before the driver sees it, the export
    # handed back (its deleter runs once). The capture ends cleanly every time.
    out = run_exchange(
        """
        capturing_refusal = lambda stream: (
            f"BufferError: CUDA stream {stream:#x} is being captured into a CUDA graph, where "
            "cuStreamWaitEvent is not allowed; export or import outside the capture (or export "
            "with stream=-1 and order the streams yourself): the capture is left as it was"
        )
        for non_blocking in (True, False):
            p, memory, s = producer(non_blocking=non_blocking)
            assert begin_capture(s) == 0
            d = ext.describe(p)
            print(d["stream"] == s, cuda.standin_default_stream_waits(0), cuda.standin_syncs(s))
            read(s, memory, 8)  # the consumer's kernel, captured after the producer's
            consumer = cuda.standin_stream_create(0)
            print(attempt(lambda: ext.import_with(p, stream=consumer)) == capturing_refusal(s))
            assert capturing(consumer) == 0 and capturing(s) == 1
            assert ext.import_with(p, stream_ordered=True)["stream"] == s
            assert end_capture(s) == (0, True)
        assert exports() == (6, 6, 0, 0, 0), exports()
        assert cuda.standin_context_depth() == 0
        print("ok")
        """
    )
    assert out == "True 0 0\nTrue\n" * 2 + "ok\n"


def test_a_failing_current_work_stream_fails_the_import_and_hands_the_export_back():
    out = run_exchange(
        """
        p, memory, s = producer()
        ext.exchange_stream(2, 0, fail=True)
        print(attempt(lambda: ext.describe(p)))
        print(attempt(lambda: ext.import_with(p, stream_ordered=True)))
        assert exports() == (2, 2, 0, 0, 0), exports()
        print("ok")
        """
    )
    assert out == (
        "RuntimeError: ExchangeProducer: no current work stream\n" * 2 + "ok\n"
    )


def test_the_deleter_runs_once_when_the_import_is_dropped_on_a_thread_without_python():
    out = run_exchange(
        """
        p, memory, s = producer(values=range(8))
        ext.drop_on_thread(p)
        assert exports() == (1, 1, 0, 0, 0), exports()
        assert cuda.standin_default_stream_waits(0) == 1
        d = ext.import_with(p, keep=True)
        held = d.pop("held")
        del d
        assert exports() == (2, 1, 1, 0, 0), exports()
        del held
        assert exports() == (2, 2, 0, 0, 0), exports()
        # A borrowed view exports nothing and waits for nothing.
        b = ext.describe_borrowed(p)
        assert (b["device"], b["data_ptr"], b["shape"]) == ((2, 0), memory, (8,)), b
        assert counts("borrowed", "exported") == (1, 2)
        assert cuda.standin_default_stream_waits(0) == 2
        assert sync(s) == 0
        print("ok")
        """
    )
    assert out == "ok\n"


# `allocate_like` on a device: the crate calls the table's allocator with the prototype
# (like's device, the shape, float32), wraps the allocation as the producer's own object
# (`managed_tensor_to_py_object_no_sync`) and imports that object for Rust to fill; the
# producer's allocator hands out blocks of a pool of stand-in device memory.


def run_allocating(code, races=0, seed=None):
    "A case with cudarc's context made first (the fill is cudarc's copy) and the producer."
    return run(code, races=races, seed=seed, prelude=CUDARC + EXCHANGE)


def allocations():
    return 'counts("allocated", "wrapped", "freed", "pool")'


@needs_cudarc
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_allocate_like_on_a_device_allocates_through_the_producers_table_and_fills_it(seed):
    out = run_allocating(
        f"""
        memory = cuda.standin_alloc(0, 32, 0)
        assert ext.exchange_pool(2, 0, memory, 32, clear=True) == [memory]
        p, _, s = producer()
        a, said = ext.cudarc_allocate_arange(p, [4, 2])
        # The producer's object over the pool's block, filled from Rust through a mutable
        # cudarc view: 0..8 copied on a stream of cudarc's, queued (not waited for).
        assert type(a) is ext.ExchangeProducer and a.allocated and a.address == memory
        assert said[:2] == (8, False) and said[3:] == (
            8, "CudaTensorViewMut {{ len: 8, device: Device(cuda:0), .. }}"), said
        if "STANDIN_SEED" not in os.environ:
            assert cuda.standin_pending(memory, 32) == 1
        assert {allocations()} == (1, 1, 0, []), {allocations()}
        # The import Rust filled through was deleted when allocate_like's tensor was
        # dropped; the allocation lives on in `a`.
        assert exports() == (1, 1, 1, 0, 0), exports()
        d = ext.import_with(a, read_as="float32")
        assert (d["device"], d["shape"], d["data_ptr"]) == ((2, 0), (4, 2), memory), d
        assert d["values"] == [float(i) for i in range(8)], d
        assert device_floats(memory, 8) == list(range(8))
        del d, a
        assert {allocations()} == (1, 1, 1, [memory]), {allocations()}
        assert exports() == (2, 2, 0, 0, 0), exports()
        assert cuda.standin_refusals() == 0
        print("ok")
        """,
        seed=seed,
    )
    assert out == "ok\n"


def test_allocate_like_on_a_device_reports_the_allocators_errors_and_frees_on_failure():
    out = run_exchange(
        f"""
        memory = cuda.standin_alloc(0, 32, 0)
        ext.exchange_pool(2, 0, clear=True)
        p, _, s = producer()
        # The allocator's SetError: its exception kind and message.
        print(attempt(lambda: ext.allocate_filled(p, [8], "float32")))
        ext.exchange_pool(2, 0, memory, 32)
        print(attempt(lambda: ext.allocate_filled(p, [9], "float32")))
        print(attempt(lambda: ext.allocate_filled(p, [8], "int64")))
        assert {allocations()} == (0, 0, 0, [memory]), {allocations()}
        # Allocated and wrapped, then refused by the host fill (device memory): the
        # allocation is deleted with the object, its block back in the pool.
        print(attempt(lambda: ext.allocate_filled(p, [8], "float32")))
        assert {allocations()} == (1, 1, 1, [memory]), {allocations()}
        assert exports() == (1, 1, 0, 0, 0), exports()
        # The crate's own table allocates on the CPU only.
        print(attempt(lambda: ext.allocate_filled(ext.on_device(4, 2, 1), [4], "float32")))
        assert_clean()
        """
    )
    assert out.splitlines() == [
        "MemoryError: ExchangeProducer: no free block of 32 bytes on cuda:0",
        "MemoryError: ExchangeProducer: no free block of 36 bytes on cuda:0",
        "TypeError: ExchangeProducer allocates float32 only, not int64",
        "TypeError: expected a tensor on cpu:0, got one on cuda:0",
        "BufferError: DLPackTensor allocates CPU tensors only, not cuda:1",
    ]


@needs_cudarc
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_memory_deleted_with_writes_still_queued_is_reused_after_them(seed):
    # The allocation's deleter runs (its block back in the pool) while the fill is still
    # queued on cudarc's stream; the block's next allocation is filled on another stream.
    # The view's stream was made to rejoin the stream the import is ready on (the legacy
    # stream) when it was dropped, and the next import's view waits for that stream: the
    # second fill is ordered after the first, with no race and its own values.
    out = run_allocating(
        f"""
        memory = cuda.standin_alloc(0, 32, 0)
        ext.exchange_pool(2, 0, memory, 32, clear=True)
        p, _, s = producer()
        a, first = ext.cudarc_allocate_arange(p, [8])
        del a
        assert {allocations()} == (1, 1, 1, [memory]), {allocations()}
        if "STANDIN_SEED" not in os.environ:
            assert cuda.standin_pending(memory, 32) == 1, "deleted with its fill queued"
        b, second = ext.cudarc_allocate_arange(p, [2, 2])
        assert b.address == memory
        if "STANDIN_SEED" not in os.environ:
            assert cuda.standin_pending(memory, 32) == 1
        assert ext.to_list(b, "float32") == [0.0, 1.0, 2.0, 3.0]
        # The first fill's tail is what it wrote: both copies ran, in order.
        assert cuda.standin_pending(memory, 32) == 0
        assert device_floats(memory, 8) == [0, 1, 2, 3, 4, 5, 6, 7]
        # A reader on a stream nothing ordered after the fills would race; one on the
        # legacy stream (which the fills rejoined) does not.
        with current(0):
            read(LEGACY, memory, 8)
            assert sync(LEGACY) == 0
        del b
        assert {allocations()} == (2, 2, 2, [memory]), {allocations()}
        with current(0):
            # Freed by the host: a race if any work on it were still unordered.
            assert cuda.cuMemFree_v2(ctypes.c_uint64(memory)) == 0
        print("ok")
        """,
        seed=seed,
    )
    assert out == "ok\n"
