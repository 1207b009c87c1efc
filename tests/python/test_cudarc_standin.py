"""cudarc (the extension's `cudarc` feature) against the stand-in driver: the same
`CudaSlice` exports and cudarc views test_cudarc.py checks on a GPU, here with every
stream's work queued and run only when something orders it, and every unordered access
recorded as a race (the shared harness: standin.py's `run_cudarc`, whose prelude makes
cudarc's context on device 0 first). Device memory stays `PROT_NONE` to the host: values
are read back through the stand-in's own mapping (`device_floats`)."""

import pytest

from standin import needs_cudarc, needs_standin, run_cudarc

pytestmark = [needs_standin, needs_cudarc]


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_a_cudarc_slice_is_exported_in_place_and_its_consumers_stream_waits_for_its_copy(seed):
    out = run_cudarc(
        """
        created, dropped, _ = ext.drop_counts()
        tensor, address, stream = ext.cudarc_arange(64)
        assert cuda.standin_allocated(address) == 1
        assert ext.drop_counts()[:2] == (created + 1, dropped)
        consumer = cuda.standin_stream_create(0)
        d = ext.import_with(tensor, stream=consumer)
        assert (d["device"], d["shape"], d["data_ptr"]) == ((2, 0), (64,), address), d
        assert cuda.standin_waits(consumer) == 1, "the consumer's stream waits for the slice's"
        read(consumer, address, 64)  # the consumer's kernel: after cudarc's copy
        assert sync(consumer) == 0
        assert cuda.standin_pending(address, 4 * 64) == 0
        assert device_floats(address, 64) == list(range(64))
        del d, tensor
        gc.collect()
        assert ext.drop_counts()[:2] == (created + 1, dropped + 1), "dropped exactly once"
        assert cuda.standin_allocated(address) == 0, "freed by cudarc"
        assert cuda.standin_refusals() == 0
        assert cuda.standin_context_syncs(0) == 1
        print("ok")
        """,
        seed=seed,
    )
    assert out == "ok\n"


def test_cudarcs_copy_is_queued_until_something_orders_it():
    # Without a consumer stream nothing orders the copy: it is still queued, and the
    # host's read of the memory is a race (reads what the copy has not written yet).
    out = run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(8)
        assert cuda.standin_pending(address, 32) == 1
        out = ctypes.create_string_buffer(32)
        assert cuda.standin_read(address, out, 32) == 1
        assert list(np.frombuffer(out.raw, np.float32)) != list(range(8))
        assert sync(stream) == 0
        assert device_floats(address, 8) == list(range(8))
        print("ok")
        """,
        races=1,
    )
    assert out == "ok\n"


def test_a_consumer_that_lets_go_with_work_still_queued_races_with_the_free():
    # The devices chapter of the guide: a slice is freed on its own stream when the last consumer lets go; a
    # consumer must order its pending work first. Here it does not: cudarc's free on
    # the slice's stream is not ordered after the consumer's read.
    out = run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(16)
        consumer = cuda.standin_stream_create(0)
        ext.import_with(tensor, stream=consumer)
        read(consumer, address, 16)
        del tensor
        gc.collect()
        assert cuda.standin_allocated(address) == 0
        print("ok")
        """,
        races=1,
    )
    assert out == "ok\n"


def test_cudarcs_stream_is_non_blocking_so_the_legacy_stream_waits_by_an_event():
    # cudarc's streams are CU_STREAM_NON_BLOCKING: the legacy default stream does not
    # synchronise with them, so a consumer on it (stream=1) is ordered by an event wait.
    out = run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(16)
        ext.import_with(tensor, stream=LEGACY)
        assert cuda.standin_default_stream_waits(0) == 1
        read(LEGACY, address, 16)
        assert sync(LEGACY) == 0
        assert device_floats(address, 16) == list(range(16))
        print("ok")
        """
    )
    assert out == "ok\n"
    # stream=-1 (no ordering): the legacy stream's implicit synchronisation does not
    # cover cudarc's stream, so its read races with the copy.
    run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(16)
        ext.import_with(tensor, stream=-1)
        assert cuda.standin_default_stream_waits(0) == 0
        read(LEGACY, address, 16)
        assert sync(LEGACY) == 0
        """,
        races=1,
    )


@pytest.mark.parametrize("consumer", [False, True])
def test_a_cudarc_view_reads_a_producers_memory_after_its_pending_work(consumer):
    # A `__cuda_array_interface__` producer with work pending on its stream: the import
    # synchronises it, or (given a consumer's stream) makes that stream wait for it, and
    # the view's stream waits for that one.
    out = run_cudarc(
        f"""
        memory = cuda.standin_alloc(0, 64, 0)
        producer = cuda.standin_stream_create(0)
        consumer = cuda.standin_stream_create(0) if {consumer} else None
        write(producer, memory, range(16))  # pending on the producer's stream
        total = ext.cudarc_sum(CudaArray(memory, 16, producer), stream=consumer)
        assert total == sum(range(16)), total
        if consumer:
            # The consumer's stream waited for the producer's, and for the view's once
            # it was dropped.
            assert (cuda.standin_syncs(producer), cuda.standin_waits(consumer)) == (0, 2)
        else:
            assert cuda.standin_syncs(producer) == 1
        assert cuda.standin_context_syncs(0) == 1
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_mutable_cudarc_view_orders_the_consumers_next_work_after_its_writes():
    out = run_cudarc(
        """
        memory = cuda.standin_alloc(0, 64, 0)
        producer, consumer = cuda.standin_stream_create(0), cuda.standin_stream_create(0)
        write(producer, memory, [1.0] * 16)
        ext.cudarc_fill(CudaArray(memory, 16, producer), 2.5, stream=consumer)
        # The fill is queued on the view's stream, not run: nothing blocked the host.
        assert cuda.standin_pending(memory, 64) == 1
        # The import made the consumer's stream wait for the producer's; dropping the
        # view made it wait for the view's: its next kernel reads the fill's values.
        assert cuda.standin_waits(consumer) == 2
        read(consumer, memory, 16)
        assert sync(consumer) == 0
        assert device_floats(memory, 16) == [2.5] * 16
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_mutable_view_of_memory_ready_on_every_stream_is_waited_for_when_dropped():
    # Synchronised on the host, a `__cuda_array_interface__` import is ready on every
    # stream: there is no stream to make wait for the view's, and cudarc's stream is
    # non-blocking (nothing implicit orders it), so the host waits for the view's work.
    out = run_cudarc(
        """
        memory = cuda.standin_alloc(0, 64, 0)
        producer = cuda.standin_stream_create(0)
        write(producer, memory, [1.0] * 16)
        ext.cudarc_fill(CudaArray(memory, 16, producer), 2.5)
        assert cuda.standin_pending(memory, 64) == 0
        read(producer, memory, 16)  # the producer's next kernel
        with current(0):
            read(LEGACY, memory, 16)  # or anyone's
        assert device_floats(memory, 16) == [2.5] * 16
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_cudarc_views_refuse_another_devices_memory_without_a_driver_call():
    out = run_cudarc(
        """
        memory = cuda.standin_alloc(1, 64, 0)
        kind, message = ext.cudarc_view_error(CudaArray(memory, 16, None))
        assert (kind, message) == ("TypeError", "expected a tensor on cuda:0, got one on cuda:1")
        assert ext.cudarc_view_error(CudaArray(cuda.standin_alloc(0, 64, 0), 16, None)) is None
        assert cuda.standin_refusals() == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_exporting_a_cudarc_slice_leaves_the_threads_current_context_alone():
    # The crate's own driver calls push the device's context and pop it; cudarc's calls
    # (the slice's read tracking when it is exported) must not leave another current.
    out = run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(16)
        consumer = cuda.standin_stream_create(0)
        with current(1):
            mine = context()
            ext.import_with(tensor, stream=consumer)
            assert context() == mine, "device 1's context is still current"
        print("ok")
        """
    )
    assert out == "ok\n"


def test_cudarc_views_say_their_length_stream_and_device():
    out = run_cudarc(
        """
        # The slice itself exported (CudaSlice's own IntoDLPack, no drop counter).
        tensor, address, stream = ext.cudarc_arange(6, tracked=False)
        for said in ext.cudarc_view_said(tensor):
            print(said)
        empty = ext.over_memory(address, 0, 2, 0, [0])
        print(ext.cudarc_view_said(empty)[1])
        assert cuda.standin_refusals() == 0
        """
    )
    assert out.splitlines() == [
        "(6, False, 1, 6, 'CudaTensorView { len: 6, device: Device(cuda:0), .. }')",
        "(6, False, 1, 6, 'CudaTensorViewMut { len: 6, device: Device(cuda:0), .. }')",
        "(0, True, 1, 0, 'CudaTensorViewMut { len: 0, device: Device(cuda:0), .. }')",
    ]


def test_a_slice_exported_by_value_is_freed_after_the_legacy_streams_work():
    # A bare capsule of a slice exported by value (`into_capsule`, not a DLPackTensor) is
    # made for the legacy default stream, as `__dlpack__(stream=None)` is; a consumer works
    # there (as torch's `from_dlpack(capsule)` does), then lets go. Found by review: this
    # path skipped the release's wait, so the slice was freed on its own stream before the
    # consumer's queued write (a race the stand-in reports).
    out = run_cudarc(
        """
        capsule, address = ext.cudarc_capsule(8)
        write(1, address, [7.0] * 8)
        del capsule
        gc.collect()
        assert cuda.standin_allocated(address) == 0
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_slice_released_by_our_own_import_is_freed_after_the_views_queued_writes():
    # Both sides are the crate's: a CudaSlice export, imported (synchronising: ready on the
    # legacy stream), written through a mutable cudarc view on another stream and dropped
    # with that write still queued. The view's drop makes the legacy stream wait for it;
    # the export's release makes the slice's stream wait for the legacy stream, so the
    # slice's free, queued on its own stream when the tensor goes, comes after the write.
    out = run_cudarc(
        """
        tensor, address, stream = ext.cudarc_arange(8)
        ext.cudarc_fill(tensor, 3.0)
        if "STANDIN_SEED" not in os.environ:
            assert cuda.standin_pending(address, 32) == 1, "the view's write is queued"
        del tensor
        gc.collect()
        assert cuda.standin_allocated(address) == 0
        print("ok")
        """
    )
    assert out == "ok\n"
