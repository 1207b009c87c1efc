"""Typed tensor arguments (`Tensor<T, D>`, `TensorMut<T, D>`): the dtype and the rank in the
Rust type, checked while PyO3 extracts the argument, so a mismatch is a `TypeError` naming the
argument, as rust-numpy's `PyReadonlyArray<T, D>`; any producer `PyTensor` accepts fills one."""

import sys

import numpy as np
import pytest

import dlpack_testext as ext


def test_a_rust_numpy_signature_takes_numpy_torch_and_jax_values():
    x = np.arange(4.0)
    assert ext.typed_axpy(2.0, x, x) == [0.0, 3.0, 6.0, 9.0]
    assert ext.typed_axpy(1.0, x.reshape(2, 2), x.reshape(2, 2)) == [0.0, 2.0, 4.0, 6.0]
    torch = pytest.importorskip("torch")
    t = torch.arange(4.0, dtype=torch.float64)
    assert ext.typed_axpy(1.0, t, x) == [0.0, 2.0, 4.0, 6.0]
    assert ext.typed_trace(np.eye(3, dtype=np.float32)) == 3.0
    assert ext.typed_trace(torch.eye(3)) == 3.0
    jnp = pytest.importorskip("jax.numpy")
    assert ext.typed_trace(jnp.eye(3)) == 3.0  # float32: JAX's default


# PyO3 0.30 names the argument in a note ("while processing 'y'", Python 3.11+), as it does
# for every argument that fails to convert.


def test_a_wrong_dtype_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError) as err:
        ext.typed_axpy(1.0, np.zeros(2), np.zeros(2, dtype=np.int64))
    assert str(err.value) == "expected a float64 tensor, got int64"
    assert getattr(err.value, "__notes__", ["while processing 'y'"]) == ["while processing 'y'"]


def test_a_wrong_rank_is_a_type_error_with_the_crates_message():
    with pytest.raises(TypeError) as err:
        ext.typed_trace(np.zeros(3, dtype=np.float32))
    assert str(err.value) == "expected a 2-dimensional tensor, got 1 dimension"
    assert getattr(err.value, "__notes__", ["while processing 'm'"]) == ["while processing 'm'"]


def test_a_writable_argument_is_written_in_place_and_a_read_only_one_refused():
    v = np.ones(3, dtype=np.float32)
    ext.typed_scale(v, 4.0)
    assert v.tolist() == [4.0, 4.0, 4.0]
    v.flags.writeable = False
    with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one"):
        ext.typed_scale(v, 2.0)


def test_what_is_no_tensor_is_pyo3s_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="got list") as err:
        ext.typed_axpy(1.0, [1.0, 2.0], np.zeros(2))
    assert getattr(err.value, "__notes__", ["while processing 'x'"]) == ["while processing 'x'"]


def test_complex_elements_are_named_through_the_re_exported_num_complex():
    z = np.array([1 + 2j, 3 - 1j])
    assert ext.typed_complex_sum(z) == (4.0, 1.0)


@pytest.mark.parametrize(
    "array, found, way_out",
    [
        (np.array(["2026-11-28"], dtype="datetime64[ns]"), "datetime64[ns]", "x.view('int64')"),
        (np.array([1, 2], dtype="timedelta64[s]"), "timedelta64[s]", "x.view('int64')"),
        (np.array([1.0, None], dtype=object), "object", "np.asarray(x, dtype='float64')"),
        (np.array(["a"]), "<U1", "encode the strings first"),
    ],
)
def test_a_numpy_dtype_dlpack_cannot_carry_is_named_with_the_way_out(array, found, way_out):
    for call in [lambda: ext.typed_axpy(1.0, array, array), lambda: ext.describe(array)]:
        with pytest.raises(TypeError) as err:
            call()
        assert isinstance(err.value, BufferError), "NumPy's type for these dtypes, too"
        message = str(err.value)
        assert message.startswith(f"expected a tensor, got a NumPy array of dtype {found}, "
                                  "which DLPack cannot carry: "), message
        assert way_out in message


def test_a_conversion_copy_takes_any_real_dtype_and_any_strides():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert ext.cast_f64(a) == ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [2, 3])
    assert ext.cast_f64(a.T) == ([0.0, 3.0, 1.0, 4.0, 2.0, 5.0], [3, 2])
    assert ext.cast_f64(np.array([True, False])) == ([1.0, 0.0], [2])
    assert ext.cast_i8(np.array([1.9, -1.9, 300.0, -1e9])) == [1, -1, 127, -128]
    assert ext.cast_i8(np.array([300, -129], dtype=np.int32)) == [44, 127]
    torch = pytest.importorskip("torch")
    assert ext.cast_f64(torch.tensor([0.5, 2.0], dtype=torch.bfloat16)) == ([0.5, 2.0], [2])
    with pytest.raises(TypeError, match="expected a float64 tensor, got complex128"):
        ext.cast_f64(np.array([1j]))


def test_every_refusal_of_a_typed_argument_is_a_type_error_naming_it():
    # Found by review: torch's refusals came through as BufferError, unnamed.
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="requires grad|require gradient") as err:
        ext.typed_scale(torch.ones(2, requires_grad=True), 2.0)
    assert isinstance(err.value.__cause__, BufferError)
    # Pinned memory (host-accessible, but a view would wait for its stream): CPU only.
    memory = np.eye(2, dtype=np.float32)
    pinned = ext.over_memory(memory.ctypes.data, 16, 3, 0, [2, 2])
    with pytest.raises(TypeError, match="expected a tensor on cpu:0, got one on cuda_host:0"):
        ext.typed_trace(pinned)


class RaisingProducer:
    """A producer whose `__dlpack__` raises `exc`."""

    def __init__(self, exc):
        self.exc = exc

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        raise self.exc


@pytest.mark.parametrize("exc", [KeyboardInterrupt("ctrl-c"), SystemExit(3), MemoryError("oom"),
                                 RecursionError("deep")])
def test_what_says_nothing_about_the_argument_is_not_made_a_type_error(exc):
    # Found by review: a Ctrl-C while a producer ran became a TypeError.
    with pytest.raises(type(exc)) as err:
        ext.typed_trace(RaisingProducer(exc))
    assert err.value is exc


def test_a_producer_error_that_cannot_be_printed_prints_nothing(monkeypatch):
    # Found by review: its text was taken through PyO3's Display, which reports the
    # failing __str__ as unraisable (on stderr: "Exception ignored in").
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    class Unprintable(Exception):
        def __str__(self):
            raise ValueError("no str")

    with pytest.raises(TypeError, match="<unprintable Unprintable object>") as err:
        ext.typed_trace(RaisingProducer(Unprintable()))
    assert type(err.value.__cause__) is Unprintable

    class UnprintableTypeError(TypeError):
        def __str__(self):
            raise ValueError("no str")

    with pytest.raises(UnprintableTypeError):
        ext.describe(RaisingProducer(UnprintableTypeError()))  # asked whether max_version failed
    assert reported == []


# Device memory: the third parameter of the typed arguments (`memory::Cuda`, `memory::AnyDevice`).
# A host buffer that says it is CUDA memory (`over_memory`) stands for a GPU's: the typed
# argument describes it without touching it.
CUDA = 2


def claimed_cuda(shape, read_only=False):
    host = np.zeros(int(np.prod(shape)), dtype=np.float32)
    tensor = ext.over_memory(host.ctypes.data, host.nbytes, CUDA, 0, shape, read_only=read_only)
    return host, tensor


def test_a_cuda_typed_argument_describes_device_memory_with_its_shape_and_stream():
    host, m = claimed_cuda((2, 3))
    # The address is the producer's, the shape `D`'s pattern; the data is ready on the stream
    # the import asked for (CUDA's legacy default stream, 1).
    assert ext.typed_cuda_matrix(m) == (host.ctypes.data, (2, 3), 1)
    assert ext.typed_cuda_out(claimed_cuda((4,))[1]) != 0


def test_a_cuda_typed_argument_refuses_host_memory_and_the_wrong_rank_naming_the_argument():
    with pytest.raises(TypeError) as err:
        ext.typed_cuda_matrix(np.zeros((2, 3), dtype=np.float32))
    assert str(err.value) == "expected a tensor on cuda, got one on cpu:0"
    assert getattr(err.value, "__notes__", ["while processing 'm'"]) == ["while processing 'm'"]
    with pytest.raises(TypeError, match="^expected a 2-dimensional tensor, got 1 dimension(\n|$)"):
        ext.typed_cuda_matrix(claimed_cuda((6,))[1])
    with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one"):
        ext.typed_cuda_out(claimed_cuda((4,), read_only=True)[1])


def test_a_host_typed_argument_refuses_device_memory():
    with pytest.raises(TypeError) as err:
        ext.typed_trace(claimed_cuda((3, 3))[1])
    assert str(err.value) == "expected a tensor on cpu:0, got one on cuda:0"


def test_an_any_device_typed_argument_views_host_memory_and_describes_the_rest():
    assert ext.typed_anywhere(np.arange(4, dtype=np.float32).reshape(2, 2)) == "sum 6"
    assert ext.typed_anywhere(claimed_cuda((2, 2))[1]) == "on cuda:0"
    with pytest.raises(TypeError, match="^expected a float32 tensor, got float64(\n|$)"):
        ext.typed_anywhere(np.zeros(2))


def test_a_zero_dimensional_typed_argument_is_a_scalar():
    assert ext.typed_scalar(np.array(2.5)) == 2.5
    with pytest.raises(TypeError, match="^expected a 0-dimensional tensor, got 1 dimension(\n|$)"):
        ext.typed_scalar(np.ones(1))


def _capsule(kind, dtype, values=b"\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00",
             **kw):
    from handmade import HandMade
    return HandMade(values=values, dtype=dtype, shape=(2,), name=kind, **kw)


@pytest.mark.parametrize("kind", ["dltensor", "dltensor_versioned"])
@pytest.mark.parametrize("enum_sum", ["typed_enum_sum", "derived_enum_sum"])
def test_a_variant_that_refuses_a_raw_capsule_leaves_it_for_the_next(kind, enum_sum):
    # rust-numpy's `enum Arg { F64(..), I64(..) }`: the first variant's dtype check refuses an
    # int64 capsule and gives it back unconsumed; the second takes it, and deletes it once.
    h = _capsule(kind, (0, 64, 1))
    assert getattr(ext, enum_sum)(h.capsule) == ("i64", 3.0)
    assert h.deleted == 1
    h = _capsule(kind, (2, 64, 1), values=np.array([1.5, 2.0]).tobytes())
    assert getattr(ext, enum_sum)(h.capsule) == ("f64", 3.5)
    assert h.deleted == 1


@pytest.mark.parametrize("kind", ["dltensor", "dltensor_versioned"])
@pytest.mark.parametrize("enum_sum", ["typed_enum_sum", "derived_enum_sum"])
def test_a_capsule_no_variant_takes_stays_unconsumed(kind, enum_sum):
    h = _capsule(kind, (2, 32, 1))  # float32: no variant
    with pytest.raises(TypeError):
        getattr(ext, enum_sum)(h.capsule)
    assert h.deleted == 0
    assert ext.to_list(h.capsule, "float32") == pytest.approx(
        np.frombuffer(h.buffer.raw[:8], np.float32).tolist())
    assert h.deleted == 1


def test_a_typed_argument_that_refuses_an_array_still_works_for_the_next_variant():
    assert ext.typed_enum_sum(np.arange(3)) == ("i64", 3.0)
    assert ext.typed_enum_sum(np.arange(3.0)) == ("f64", 3.0)
    frozen = np.arange(3, dtype=np.uint8)
    frozen.flags.writeable = False
    with pytest.raises(TypeError):
        ext.typed_enum_sum(frozen)
    assert ext.typed_enum_sum(np.arange(3, dtype=np.uint8)) == ("u8", 3.0)


def test_a_typed_argument_casts_in_its_own_rank():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert ext.typed_cast(x[:, ::-1]) == ([2, 3], [2.0, 1.0, 0.0, 5.0, 4.0, 3.0])


def test_a_typed_matrix_is_a_nalgebra_view_or_a_copy_where_asked():
    m = np.arange(6.0).reshape(2, 3)
    assert ext.typed_dmatrix(m) == ((3, 1), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    # Negative strides: no view nalgebra can hold, the copy reads them.
    assert ext.typed_dmatrix(m[::-1]) == (None, [3.0, 0.0, 4.0, 1.0, 5.0, 2.0])
