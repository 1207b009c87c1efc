"""PyTensor: imports from real and hand-made producers, validated and owned."""

import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import BUFFER_PROTOCOL, NOT_A_TENSOR, version_of
from handmade import HandMade


import torch


# --- NumPy -------------------------------------------------------------------


def test_numpy_contiguous():
    a = np.arange(12, dtype="f4").reshape(3, 4)
    d = ext.describe(a)
    assert d["shape"] == (3, 4)
    assert d["strides"] == (4, 1)
    assert d["dtype"] == "float32"
    assert d["device"] == (1, 0)
    assert d["version"] == (1, 0), "NumPy exports DLPack 1.0 when asked for 1.3"
    assert d["data_ptr"] == a.ctypes.data
    assert (d["read_only"], d["copied"], d["contiguous"]) == (False, False, True)
    assert (d["ndim"], d["numel"], d["nbytes"]) == (2, 12, 48)
    assert ext.slice_values(a, "float32") == list(range(12))
    assert ext.to_list(a, "float32") == list(range(12))


def test_numpy_transposed_negative_and_broadcast_strides():
    a = np.arange(6, dtype="i8").reshape(2, 3)
    t = a.T
    assert ext.describe(t)["strides"] == (1, 3)
    assert ext.to_list(t, "int64") == t.ravel().tolist()
    assert ext.array_values(t, "int64") == t.ravel().tolist()
    with pytest.raises(TypeError, match=r"expected a contiguous \(row-major\) tensor, got shape \[3, 2\] with strides \[1, 3\]"):
        ext.slice_values(t, "int64")
    r = a[:, ::-1]
    assert ext.describe(r)["strides"] == (3, -1)
    assert ext.to_list(r, "int64") == r.ravel().tolist()
    assert ext.array_values(r, "int64") == r.ravel().tolist()
    b = np.broadcast_to(np.arange(3, dtype="u2"), (4, 3))
    assert ext.describe(b)["strides"] == (0, 1)
    assert ext.to_list(b, "uint16") == b.ravel().tolist()


def test_numpy_read_only_is_reported_and_enforced():
    a = np.arange(4, dtype="f8")
    a.flags.writeable = False
    d = ext.describe(a)
    assert d["read_only"] is True
    with pytest.raises(TypeError, match="expected a writable tensor, got a read-only one"):
        ext.fill(a, 1.0)
    assert ext.to_list(a, "float64") == [0, 1, 2, 3]


def test_writes_through_as_slice_mut_reach_numpy():
    a = np.zeros(5)
    ext.fill(a, 2.5)
    assert a.tolist() == [2.5] * 5
    b = np.zeros((3, 4))[:, ::-2]  # strided, negative: only ndarray views can write it
    ext.fill(b, 7.0, through_ndarray=True)
    assert (b == 7.0).all()


def test_dtype_mismatch_names_both():
    with pytest.raises(TypeError, match="expected a float64 tensor, got float32"):
        ext.to_list(np.zeros(2, dtype="f4"), "float64")


def test_bool_reads_as_uint8():
    a = np.array([True, False, True])
    assert ext.describe(a)["dtype"] == "bool"
    assert ext.to_list(a, "uint8") == [1, 0, 1]


@pytest.mark.parametrize(
    "dtype",
    ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"],
)  # fmt: skip
def test_numpy_every_dtype_reads_back(dtype):
    a = (np.arange(7) * 3).astype(dtype)
    assert ext.to_list(a, dtype) == a.astype("f8").tolist()


def test_numpy_complex():
    a = np.array([1 + 2j, -3.5 - 4j], dtype="c8")
    assert ext.to_list(a, "complex64") == [(1.0, 2.0), (-3.5, -4.0)]


# --- PyTorch -----------------------------------------------------------------


def test_torch_zero_d_has_an_empty_shape():
    d = ext.describe(torch.tensor(3.5))
    assert (d["shape"], d["strides"], d["numel"]) == ((), (), 1)
    # torch exports DLPack 1.3 from 2.10 (its C exchange table), 1.0 in 2.9, legacy before.
    torch_version = version_of(torch)[:2]
    assert d["version"] == ((1, 3) if torch_version >= (2, 10) else (1, 0) if torch_version >= (2, 9) else None)
    assert ext.to_list(torch.tensor(3.5), "float32") == [3.5]


def test_torch_zero_size_with_null_data():
    t = torch.empty(0, 4)
    d = ext.describe(t)
    assert d["shape"] == (0, 4)
    assert d["data_ptr"] == 0, "torch exports NULL data for empty tensors"
    assert ext.slice_values(t, "float32") == []
    assert ext.to_list(t, "float32") == []
    assert ext.array_values(t, "float32") == []


def test_torch_expanded_stride_zero():
    t = torch.arange(3, dtype=torch.int32).expand(4, 3)
    assert ext.describe(t)["strides"] == (0, 1)
    assert ext.to_list(t, "int32") == [0, 1, 2] * 4
    broadcast = torch.zeros(1, dtype=torch.float64).expand(3)
    with pytest.raises(TypeError, match=r"needs distinct elements, but shape \[3\] with strides \[0\] reaches some twice"):
        ext.fill(broadcast, 1.0, through_ndarray=True)


def test_overlapping_windows_refuse_mutable_views():
    windows = np.lib.stride_tricks.as_strided(np.zeros(3), (2, 2), (8, 8))  # [[a, b], [b, c]]
    with pytest.raises(TypeError, match="reaches some twice"):
        ext.fill(windows, 1.0, through_ndarray=True)
    assert ext.array_values(windows, "float64") == [0.0] * 4, "reading is fine"
    disjoint = np.zeros((3, 4))[:, ::2]
    ext.fill(disjoint, 2.0, through_ndarray=True)
    assert disjoint.tolist() == [[2.0, 2.0]] * 3


def test_the_same_array_twice_refuses_a_mutable_view():
    a = np.ones(3)
    with pytest.raises(TypeError) as err:
        ext.add_into(a, a)
    assert str(err.value) == (
        "another imported tensor shares this memory (the same array passed twice, or imported "
        "meanwhile by another thread?): a mutable view needs it alone, and excludes views "
        "through other imports until its tensor is dropped")
    with pytest.raises(TypeError, match="another imported tensor shares this memory"):
        ext.add_into(a[1:], a[:2])  # overlapping halves
    b = np.ones(3)
    ext.add_into(a, b)
    assert a.tolist() == [2.0] * 3
    ext.add_into(a[:1], a[2:])  # disjoint parts of one buffer are fine
    assert a.tolist() == [4.0, 2.0, 2.0]


def test_bool_tensors_are_read_as_bytes_but_never_written():
    a = np.array([True, False])
    assert ext.to_list(a, "uint8") == [1, 0]
    with pytest.raises(TypeError, match="expected a uint8 tensor, got bool"):
        ext.fill(a, 2.0, as_type="uint8")
    with pytest.raises(TypeError, match="expected a uint8 tensor, got bool"):
        ext.fill(a, 2.0, as_type="uint8", through_ndarray=True)
    assert a.tolist() == [True, False]


def test_empty_tensors_with_negative_strides_give_empty_views():
    h = HandMade(values=b"", dtype=(2, 32, 1), shape=(2, 0), strides=(-1, 1), null_data=True)
    assert ext.array_values(h.capsule, "float32") == []
    h = HandMade(values=b"", dtype=(2, 64, 1), shape=(2**40, 0), strides=(-(2**40), 1))
    ext.fill(h.capsule, 1.0, through_ndarray=True)
    assert h.deleted == 1


def test_the_stride_of_a_one_element_axis_is_never_used():
    # Any stride is valid where the extent is 1; i64::MIN's magnitude went
    # into ndarray's view as is (a panic, a BaseException, in debug builds).
    values = bytes(range(12))
    for shape, strides, expected in [
        ((1, 3), (-(2**63), 1), [0, 1, 2]),
        ((2, 1, 3), (6, -(2**63), 2), [0, 2, 4, 6, 8, 10]),
        ((3, 1), (1, 2**63 - 1), [0, 1, 2]),
    ]:
        h = HandMade(values=values, dtype=(1, 8, 1), shape=shape, strides=strides)
        assert ext.array_values(h.capsule, "uint8") == expected
        assert h.deleted == 1
    h = HandMade(values=values, dtype=(1, 8, 1), shape=(1, 3), strides=(-(2**63), 1))
    ext.fill(h.capsule, 7.0, as_type="uint8", through_ndarray=True)
    assert h.deleted == 1


def test_an_empty_tensor_too_large_for_ndarray_is_a_value_error():
    # No element, but extents whose product passes isize::MAX: ndarray
    # refuses the shape (was a PanicException, a BaseException).
    for call in (lambda c: ext.array_values(c, "uint8"), lambda c: ext.fill(c, 7.0, "uint8", True)):
        h = HandMade(values=b"", dtype=(1, 8, 1), shape=(0, 2**62, 2), strides=(1, 1, 1))
        with pytest.raises(ValueError, match=r"shape \[0, 4611686018427387904, 2\] has more elements than fit in memory"):
            call(h.capsule)
        assert h.deleted == 1


def test_a_copy_memory_cannot_hold_is_a_memory_error():
    # One byte broadcast to 2^50 elements (a PiB): the copy cannot be
    # allocated (was an abort of the process), as NumPy's copy raises.
    h = HandMade(values=b"\x05", dtype=(1, 8, 1), shape=(2**50,), strides=(0,))
    with pytest.raises(MemoryError, match="^cannot allocate 1125899906842624 bytes for a host copy of the tensor"):
        ext.to_list(h.capsule, "uint8")
    assert h.deleted == 1
    broadcast = np.broadcast_to(np.zeros(1, np.uint8), (2**31, 2**31))
    with pytest.raises(MemoryError):
        ext.to_list(broadcast, "uint8")
    with pytest.raises(MemoryError):
        ext.asdlpack(broadcast).__dlpack__(copy=True)


def test_a_strided_packed_tensor_is_not_reexported_as_another_layout():
    # Packed float4 at stride 2: re-exported without strides it described
    # other nibbles of the same bytes (wrong values, no error).
    h = HandMade(values=bytes([0x10, 0x32, 0x54, 0x76]), dtype=(17, 4, 1), shape=(4,), strides=(2,))
    with pytest.raises(ValueError, match="float4_e2m1fn packs several elements per byte: it cannot be exported with strides"):
        ext.reexport(h.capsule)
    assert h.deleted == 1
    packed = HandMade(values=bytes([0x10, 0x32]), dtype=(17, 4, 1), shape=(4,), strides=(1,))
    assert ext.describe(ext.reexport(packed.capsule))["shape"] == (4,)


@pytest.mark.skipif(not hasattr(torch, "float4_e2m1fn_x2"), reason="torch without float4_e2m1fn_x2")
def test_torch_float4_pairs_are_imported_and_reexported_in_place():
    # torch's MXFP4/NVFP4 storage type, (17, 4, lanes=2): one byte, two
    # values. It was refused as a vector dtype.
    t = torch.tensor([0x21, 0x43, 0x65, 0x87], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    try:  # torch 2.9 has the dtype but exports it over DLPack only from 2.10
        t.__dlpack__()
    except BufferError as err:
        pytest.skip(f"this torch does not export float4_e2m1fn_x2: {err}")
    d = ext.describe(t)
    assert (d["dtype"], d["shape"], d["nbytes"], d["data_ptr"]) == ("float4_e2m1fn_x2", (4,), 4, t.data_ptr())
    back = torch.from_dlpack(ext.reexport(t[::2]))
    assert back.dtype == torch.float4_e2m1fn_x2 and back.data_ptr() == t.data_ptr()
    assert back.view(torch.uint8).tolist() == [0x21, 0x65]
    if BUFFER_PROTOCOL:  # not in an abi3 build for CPython < 3.11
        with pytest.raises(BufferError, match="a float4_e2m1fn_x2 tensor has no buffer-protocol format"):
            memoryview(ext.reexport(t))
    # Other vectors stay refused.
    with pytest.raises(ValueError, match="dtype float32x2 has 2 lanes"):
        ext.describe(HandMade(values=bytes(16), dtype=(2, 32, 2), shape=(2,)).capsule)


@pytest.mark.parametrize("import_", [ext.describe, ext.describe_borrowed])
def test_a_metaclass_that_imports_again_meets_the_import_limit(import_):
    # Found by review: the type's exchange-table lookup ran the metaclass's Python code
    # before the import's recursion limit was entered: it recursed until the C stack
    # overflowed (a segfault at a depth of about 680).
    depth = []

    class Meta(type):
        def __getattr__(cls, name):
            if name == "__dlpack_c_exchange_api__":
                depth.append(1)
                import_(cls())
            raise AttributeError(name)

    class Producer(metaclass=Meta):
        pass

    with pytest.raises(RecursionError, match="32 imports nested"):
        import_(Producer())
    assert len(depth) == 32


def test_a_class_made_in_a_function_is_not_kept_alive_by_an_import():
    # Found by review: the exchange-table cache kept every type it looked up alive,
    # a local class with whatever its class attributes hold.
    def make():
        class Local:
            payload = np.zeros(1000)

            def __dlpack__(self, **kwargs):
                return self.payload.__dlpack__(**kwargs)

        return Local

    local = make()
    assert ext.describe(local())["shape"] == (1000,)
    assert ext.describe_borrowed(local())["shape"] == (1000,)
    alive = weakref.ref(local)
    del local
    gc.collect()
    assert alive() is None


class TorchSubclass(torch.Tensor):
    pass


class ChangesAnEarlierArgument:
    """An argument whose `__dlpack__` first runs `change` (imported after the one it changes)."""

    def __init__(self, change, values):
        self.change, self.values = change, values

    def __dlpack__(self, **kwargs):
        self.change()
        return self.values.__dlpack__(**kwargs)


@pytest.mark.parametrize("kind", ["exact", "subclass"])
@pytest.mark.parametrize("change", ["t_", "unsqueeze_ x4"])
def test_a_torch_tensor_changed_in_place_after_its_import_keeps_what_was_checked(kind, change):
    # Found by review: torch's capsules point shape and strides into the source tensor's
    # own metadata, and the import read them again after checking them. An in-place view
    # op after the import (here a later argument's) changed the view: transposed memory
    # order, or (past 5 dimensions, stored out of line) a heap address as an extent.
    x = torch.arange(16, dtype=torch.float64).reshape(4, 4)
    if kind == "subclass":
        x = x.as_subclass(TorchSubclass)

    def act():
        if change == "t_":
            x.t_()
        else:
            for _ in range(4):
                x.unsqueeze_(0)

    later = ChangesAnEarlierArgument(act, np.zeros((4, 4)))
    assert ext.typed_axpy(1.0, x, later) == [float(i) for i in range(16)]
    assert x.shape != (4, 4) or x.stride() != (4, 1)  # the change did happen


def test_torch_bfloat16_and_zero_copy():
    t = torch.arange(5, dtype=torch.bfloat16)
    assert ext.describe(t)["data_ptr"] == t.data_ptr()
    assert ext.to_list(t, "bfloat16") == [0, 1, 2, 3, 4]


def test_torch_writes_through_as_slice_mut():
    t = torch.zeros(3, dtype=torch.float64)
    ext.fill(t, -1.0)
    assert t.tolist() == [-1.0] * 3


# --- JAX, array-api-strict, pyarrow, TensorFlow ------------------------------


def test_jax_legacy_capsule_even_when_versioned_is_asked():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    d = ext.describe(x)
    assert d["shape"] == (2, 3)
    jax = pytest.importorskip("jax")

    if tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 12):
        assert d["version"] is None, "JAX < 0.12 always sends a legacy capsule"
    assert ext.to_list(x, "float32") == list(range(6))


def test_array_api_strict():
    xp = pytest.importorskip("array_api_strict")
    x = xp.reshape(xp.arange(6, dtype=xp.int32), (3, 2))
    assert ext.describe(x)["shape"] == (3, 2)
    assert ext.to_list(x, "int32") == list(range(6))


def test_pyarrow_is_read_only():
    pa = pytest.importorskip("pyarrow")
    arr = pa.array([1.5, 2.5, 3.5], type=pa.float64())
    d = ext.describe(arr)
    assert d["read_only"] is True
    # pyarrow 18.1 exports legacy capsules only (26.0: versioned, flagged read-only).
    assert d["version"] is not None or version_of(pa)[0] <= 18
    assert ext.to_list(arr, "float64") == [1.5, 2.5, 3.5]


def test_tensorflow():
    tf = pytest.importorskip("tensorflow")
    t = tf.constant([[1, 2], [3, 4]], dtype=tf.int32)
    assert ext.to_list(t, "int32") == [1, 2, 3, 4]


# --- Python producers written here -------------------------------------------


class OldProducer:
    """A producer from before DLPack 1.0: `__dlpack__(self, stream=None)`."""

    def __init__(self, array):
        self.array = array
        self.calls = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_an_old_producer_gets_a_legacy_call():
    p = OldProducer(np.arange(3, dtype="f4"))
    d = ext.describe(p)
    assert d["version"] is None
    assert d["read_only"] is True, "a legacy capsule cannot say writes are allowed"
    assert p.calls == [None]
    with pytest.raises(TypeError, match="^expected a writable tensor, got one from a legacy"):
        ext.fill(OldProducer(np.zeros(3)), 1.0)


class RefusesMaxVersion:
    """array-api-strict once raised NotImplementedError for max_version."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if max_version is not None:
            raise NotImplementedError("max_version is not supported")
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_not_implemented_max_version_falls_back():
    assert ext.describe(RefusesMaxVersion(np.arange(2.0)))["version"] is None


class BrokenInside:
    """Fails inside `__dlpack__` when given keywords, works without them: a
    wrong legacy retry would hide the failure by succeeding."""

    def __init__(self, error):
        self.error = error

    def __dlpack__(self, **kwargs):
        if kwargs:
            raise self.error
        return np.arange(2.0).__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize(
    "error",
    [
        TypeError("producer bug: bad operand"),
        TypeError("helper() got an unexpected keyword argument 'x'"),  # looks like a signature error
        ValueError("producer says no"),
        NotImplementedError("float8 export is not implemented"),
    ],
)
def test_a_producers_own_error_reaches_the_caller(error):
    with pytest.raises(type(error)) as excinfo:
        ext.describe(BrokenInside(error))
    assert excinfo.value is error


def test_a_decorated_old_producer_still_gets_the_legacy_call():
    import functools

    def logged(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            return method(self, *args, **kwargs)

        return wrapper

    class Decorated(OldProducer):
        __dlpack__ = logged(OldProducer.__dlpack__)

    p = Decorated(np.arange(2.0))
    assert ext.describe(p)["version"] is None
    assert p.calls == [None]


def test_array_api_strict_style_value_error_falls_back():
    class OldApiVersion(RefusesMaxVersion):
        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            if max_version is not None:
                raise ValueError("The max_version argument to __dlpack__ requires at least version 2023.12")
            return self.array.__dlpack__()

    assert ext.describe(OldApiVersion(np.arange(2.0)))["version"] is None


def test_no_legacy_retry_when_dl_device_or_copy_is_asked():
    with pytest.raises(TypeError, match="max_version"):
        ext.import_with(OldProducer(np.arange(2.0)), copy=True)
    with pytest.raises(TypeError, match="max_version"):
        ext.import_with(OldProducer(np.arange(2.0)), dl_device=(1, 0))


def test_attribute_errors_mean_absent_other_errors_propagate():
    class Exploding:
        @property
        def __dlpack__(self):
            raise RuntimeError("lookup failed")

    with pytest.raises(RuntimeError, match="lookup failed"):
        ext.describe(Exploding())

    class DeviceExplodes:
        def __dlpack__(self, **kwargs):
            return np.arange(2.0).__dlpack__(**kwargs)

        @property
        def __dlpack_device__(self):
            raise RuntimeError("device lookup failed")

    with pytest.raises(RuntimeError, match="device lookup failed"):
        ext.describe(DeviceExplodes())


def test_dlpack_device_is_asked_first():
    calls = []

    class Ordered:
        def __dlpack_device__(self):
            calls.append("device")
            return (1, 0)

        def __dlpack__(self, **kwargs):
            calls.append("dlpack")
            return np.arange(2.0).__dlpack__(**kwargs)

    ext.describe(Ordered())
    assert calls == ["device", "dlpack"]


def test_options_are_forwarded():
    seen = {}

    class Recorder:
        def __dlpack__(self, **kwargs):
            seen.update(kwargs)
            return np.arange(2.0).__dlpack__(max_version=kwargs.get("max_version"))

        def __dlpack_device__(self):
            return (1, 0)

    ext.import_with(Recorder(), max_version=(1, 1), dl_device=(1, 0), copy=True)
    assert seen == {"max_version": (1, 1), "dl_device": (1, 0), "copy": True}
    seen.clear()
    ext.describe(Recorder())
    assert seen == {"max_version": (1, 3)}, "no stream for CPU producers"


def test_cuda_producers_get_a_stream():
    seen = {}

    class FakeCuda:
        def __dlpack__(self, **kwargs):
            seen.update(kwargs)
            raise BufferError("no GPU here")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(BufferError):
        ext.describe(FakeCuda())
    assert seen["stream"] == 1, "the legacy default stream by default"
    with pytest.raises(BufferError):
        ext.import_with(FakeCuda(), stream=0x1234)
    assert seen["stream"] == 0x1234
    seen.clear()
    with pytest.raises(BufferError):
        ext.import_with(FakeCuda(), dl_device=(1, 0))
    assert "stream" not in seen, "a CPU target gets no stream"

    class FakeRocm(FakeCuda):
        def __dlpack_device__(self):
            return (10, 0)

    seen.clear()
    with pytest.raises(BufferError):
        ext.describe(FakeRocm())
    assert seen["stream"] == 0, "ROCm's default stream is 0"


def test_the_legacy_retry_keeps_the_cuda_stream():
    calls = []

    class OldCuda:
        def __dlpack__(self, stream=None):
            calls.append(stream)
            raise BufferError("no GPU here")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(BufferError):
        ext.describe(OldCuda())
    assert calls == [1]


@pytest.mark.parametrize(
    "device, field, value",
    [((2**40, 0), "device_type", 2**40), ((1, -(2**31) - 1), "device_id", -(2**31) - 1)],
)
def test_a_device_out_of_range_is_an_overflow_error(device, field, value):
    class Huge:
        def __dlpack__(self, **kwargs):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return device

    with pytest.raises(OverflowError) as excinfo:
        ext.describe(Huge())
    assert str(excinfo.value) == (
        f"the {field} of Huge.__dlpack_device__() must be an integer in range "
        f"[-2147483648, 2147483647], got {value}"
    )


def test_copy_option_gives_a_private_copy():
    a = np.arange(4.0)
    d = ext.import_with(a, copy=True)
    assert d["copied"] is True
    assert d["data_ptr"] != a.ctypes.data


def test_not_dlpack_is_a_type_error():
    with pytest.raises(TypeError, match="^" + NOT_A_TENSOR + ", got list"):
        ext.describe([1, 2, 3])


def test_dlpack_returning_a_non_capsule():
    class Liar:
        def __dlpack__(self, **kwargs):
            return 42

    with pytest.raises(TypeError, match=r"Liar.__dlpack__\(\) returned int, expected a DLPack capsule"):
        ext.describe(Liar())


# --- hand-made capsules ------------------------------------------------------


def test_handmade_valid_capsule_and_null_strides():
    h = HandMade()
    d = ext.describe(h.capsule)
    assert (d["shape"], d["strides"], d["dtype"], d["version"]) == ((2, 3), (3, 1), "int16", (1, 3))
    assert h.deleted == 1
    h = HandMade()
    assert ext.to_list(h.capsule, "int16") == [1, 2, 3, 4, 5, 6]
    assert h.deleted == 1


def test_handmade_legacy_and_byte_offset():
    h = HandMade(name="dltensor", byte_offset=4, shape=(4,))
    assert ext.to_list(h.capsule, "int16") == [3, 4, 5, 6]
    assert h.deleted == 1


@pytest.mark.parametrize(
    "fields, error, message",
    [
        ({"version": (2, 0)}, BufferError, "unsupported DLPack version 2.0: expected major version 1"),
        ({"version": (0, 8)}, BufferError, "unsupported DLPack version 0.8"),
        ({"null_shape": True}, ValueError, "the tensor has 2 dimensions but a NULL shape"),
        ({"shape": (2, -3)}, ValueError, r"shape \[2, -3\] has a negative extent -3 in dimension 1"),
        ({"shape": (2**40, 2**40)}, ValueError, "more elements than fit in memory"),
        ({"shape": (2, 3), "strides": (2**62, 1)}, ValueError, "reaches outside the address space"),
        # An offset within an allocation is at most isize::MAX bytes: 2^63
        # did not wrap the address, was accepted and read (a crash).
        ({"shape": (3,), "byte_offset": 2**63}, ValueError, "reaches outside the address space"),
        ({"shape": (3,), "strides": (2,), "byte_offset": 2**63}, ValueError, "reaches outside the address space"),
        ({"shape": (2,), "strides": (2**61,), "byte_offset": 2**62}, ValueError, "reaches outside the address space"),
        ({"ndim": -1}, ValueError, "ndim -1 is outside"),
        ({"ndim": 5000, "shape": (1,)}, ValueError, "ndim 5000 is outside"),
        ({"dtype": (99, 8, 1)}, ValueError, "unknown DLPack dtype code 99"),
        ({"dtype": (2, 32, 2)}, ValueError, "2 lanes: vector dtypes"),
        ({"dtype": (2, 0, 1)}, ValueError, "0 bits per element"),
        ({"null_data": True}, ValueError, r"shape \[2, 3\] but a NULL data pointer"),
    ],
)
def test_handmade_bad_fields_raise_and_delete_once(fields, error, message):
    h = HandMade(**fields)
    with pytest.raises(error, match=message):
        ext.describe(h.capsule)
    assert h.deleted == 1


def test_the_version_is_checked_before_any_other_field():
    h = HandMade(version=(2, 0), ndim=-1, null_shape=True, dtype=(99, 0, 7))
    with pytest.raises(BufferError, match="unsupported DLPack version 2.0"):
        ext.describe(h.capsule)
    assert h.deleted == 1


def test_minor_versions_from_the_future_are_fine():
    h = HandMade(version=(1, 99))
    assert ext.describe(h.capsule)["version"] == (1, 99)


def test_wrong_name_and_used_capsules_are_refused_and_not_deleted():
    for name, message in [
        ("bogus", 'expected a capsule named "dltensor" or "dltensor_versioned", got "bogus"'),
        ("used_dltensor", "already consumed"),
        ("used_dltensor_versioned", "already consumed"),
    ]:
        h = HandMade(name=name)
        with pytest.raises(ValueError, match=message):
            ext.describe(h.capsule)
        assert h.deleted == 0, "not ours to delete"


def test_a_capsule_imports_once():
    h = HandMade()
    ext.describe(h.capsule)
    with pytest.raises(ValueError, match="already consumed"):
        ext.describe(h.capsule)
    assert h.deleted == 1


def test_zero_size_null_data_and_zero_d_null_shape():
    h = HandMade(shape=(0, 5), null_data=True)
    assert ext.to_list(h.capsule, "int16") == []
    assert h.deleted == 1
    h = HandMade(shape=(), null_shape=True)
    d = ext.describe(h.capsule)
    assert (d["shape"], d["numel"]) == ((), 1)


# Host copies read host memory: the CPU's, and CUDA pinned (3) and managed (13) memory
# once the stream the data is ready on has finished (a capsule handed over as it is
# names none: read at once, as NumPy's from_dlpack reads it; the stand-in driver's
# tests cover the wait), and TPU pinned host memory (20, JAX's pinned_host arrays). CUDA
# device memory (2) is copied by the CUDA driver (here: none; the stand-in driver's
# tests copy it), other devices' is refused: TPU device memory (19), Metal (8, whose data
# is an id<MTLBuffer> handle), codes no header names.
NO_DRIVER = (
    "copying CUDA device memory to the host needs the CUDA driver, which could not be "
    "loaded: libcuda.so.1: "
)


@pytest.mark.parametrize(
    "device, error",
    [((1, 0), None), ((3, 0), None), ((13, 0), None), ((20, 1), None),
     ((19, 0), (TypeError, "expected a tensor on cpu:0, got one on tpu:0")),
     ((8, 0), (TypeError, "expected a tensor on cpu:0, got one on metal:0")),
     ((99, 0), (TypeError, "expected a tensor on cpu:0, got one on device_type(99):0")),
     ((2, 1), (BufferError, NO_DRIVER))],
)
def test_device_codes_are_kept_and_only_host_memory_is_read(device, error):
    h = HandMade(device=device)
    assert ext.describe(h.capsule)["device"] == device
    h = HandMade(device=device)
    if error is None:
        assert ext.to_list(h.capsule, "int16") == [1, 2, 3, 4, 5, 6]
    else:
        with pytest.raises(error[0]) as raised:
            ext.to_list(h.capsule, "int16")
        assert str(raised.value).startswith(error[1])
    assert h.deleted == 1


def test_a_capsule_passed_as_it_is_names_no_stream():
    # No stream was negotiated for it (it was reported as CUDA's legacy stream, 1, so
    # a host view of managed memory waited for a stream the producer never saw).
    assert ext.describe(HandMade(device=(13, 0)).capsule)["stream"] is None
    assert ext.describe(HandMade(device=(2, 0)).capsule)["stream"] is None


def test_misaligned_data_refuses_slices_but_not_to_vec():
    h = HandMade(values=bytes(range(13)), dtype=(1, 32, 1), shape=(3,), byte_offset=1)
    with pytest.raises(TypeError, match="not aligned for uint32"):
        ext.slice_values(h.capsule, "uint32")
    h = HandMade(values=bytes(range(13)), dtype=(1, 32, 1), shape=(3,), byte_offset=1)
    assert ext.to_list(h.capsule, "uint32") == np.frombuffer(bytes(range(1, 13)), "u4").tolist()


# --- ownership -----------------------------------------------------------------


def test_dropped_on_a_thread_without_the_gil_deletes_once():
    h = HandMade()
    ext.drop_on_thread(h.capsule)
    assert h.deleted == 1


def test_torch_tensor_imported_and_dropped_on_another_thread():
    t = torch.arange(1000, dtype=torch.float32)
    before = t.untyped_storage()._weak_ref()
    ext.drop_on_thread(t)
    del t
    gc.collect()
    assert torch.Storage._expired(before), "the storage was freed: our share was released"


def test_python_threads_importing_concurrently():
    arrays = [np.arange(100, dtype="f8") for _ in range(8)]
    results = []

    def work(a):
        for _ in range(200):
            results.append(ext.to_list(a, "float64")[-1])

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [99.0] * 1600


def test_a_list_of_imports_holds_each_array_until_the_list_is_dropped():
    # Every State of the list comes from (and goes back to) the thread's spare blocks.
    arrays = [np.arange(i, i + 4, dtype=np.float32) for i in range(1500)]
    counts = [sys.getrefcount(a) for a in arrays]
    for _ in range(3):
        assert ext.consume_list(arrays) == 1500
    assert [sys.getrefcount(a) for a in arrays] == counts
    values = [ext.to_list(a, "float32") for a in arrays[::500]]
    assert values == [[i, i + 1, i + 2, i + 3] for i in (0, 500, 1000)]
