"""Imports through a producer's DLPack C exchange table (DLPack 1.3, torch >= 2.10's way in),
against the stand-in driver (see test_cuda_standin.py, whose `run` and helpers these tests
share). The producer is the test extension's `ExchangeProducer`: its type's
`__dlpack_c_exchange_api__` is a static table whose `current_work_stream` reports the stream
the test chose (`ext.exchange_stream`), whose owning export hands out float32 tensors over
stand-in device memory (PROT_NONE to the host) with a counted deleter
(`ext.exchange_counts`), and whose `__dlpack__` only counts the call and refuses.

Each case queues the producer's writes on the stream it reports, pending until something
orders them, imports in one `StreamMode`, reads the values back through the driver (`to_vec`:
a copy queued on the stream the import is ready on) and ends with zero races: a missing or
misdirected wait shows up as a race or as values not written yet. The producer's stream is
non-blocking unless said otherwise, so CUDA's legacy default stream does not order it
implicitly."""

import textwrap

import pytest

from test_cuda_standin import STANDIN, run

pytestmark = pytest.mark.skipif(
    not STANDIN, reason="CUDA_STANDIN names no stand-in driver (make test builds and names it)"
)

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

def attempt(f):
    try:
        f()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return "ok"
"""


def run_exchange(code, races=0, seed=None):
    return run(EXCHANGE + textwrap.dedent(code), races=races, seed=seed)


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
        assert cuda.standin_refusals() == 0 and cuda.standin_context_depth() == 0
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
        assert cuda.standin_refusals() == 0 and cuda.standin_context_depth() == 0
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
