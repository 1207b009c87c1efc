"""Framework-native results: `Native` / `to_framework` return a real
numpy.ndarray, torch.Tensor or jax.Array over the Rust value's memory,
zero-copy, the value dropped exactly once when the array is freed."""

import gc

import numpy as np
import pytest
import torch

import dlpack_testext as ext

from conftest import run_fresh

jax = pytest.importorskip("jax")

# torch's C exchange table (and its allocator) exists from 2.10.
needs_exchange_table = pytest.mark.skipif(
    not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"), reason="torch < 2.10 has no C exchange table"
)
jnp = jax.numpy


NUMPY_DTYPES = ["bool", "int8", "int64", "uint16", "float16", "float32", "float64", "complex64"]


def expected(dtype, n):
    if dtype == "bool":
        return np.arange(n) % 2 == 1
    if dtype == "complex64":
        return (np.arange(n) - 1j * np.arange(n)).astype(np.complex64)
    return np.arange(n).astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_results_are_ndarrays_over_the_rust_memory(dtype, drops):
    a = ext.native_arange("numpy", dtype, 6)
    assert type(a) is np.ndarray
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, expected(dtype, 6))
    assert a.flags.writeable and a.flags.c_contiguous and a.flags.aligned
    # The base owns the Rust value: zero-copy, and it lives as long as the array.
    assert a.base is not None
    view = a[2:]
    del a
    assert drops.dropped_now == 0
    np.testing.assert_array_equal(view, expected(dtype, 6)[2:])
    del view
    assert (drops.created, drops.dropped_now) == (1, 1)


def test_numpy_results_of_unused_strides_that_overflow_in_bytes(drops):
    # An axis of one element, or an empty array, may have any stride; in
    # bytes 2^62 float32s overflow (was a panic from Python).
    a = ext.native_arange("numpy", "float32", 4, shape=[1, 4], strides=[2**62, 1])
    np.testing.assert_array_equal(a, [[0, 1, 2, 3]])
    e = ext.native_arange("numpy", "float32", 0, shape=[0, 3], strides=[2**62, 2**62])
    assert e.shape == (0, 3)
    del a, e
    assert drops.created == drops.dropped_now == 2


def test_numpy_results_keep_layout_and_writability(drops):
    # A (2, 3) transposed view of 6 elements: strides in elements (1, 2) → bytes (4, 8).
    a = ext.native_arange("numpy", "float32", 6, shape=[3, 2], strides=[1, 3])
    assert a.shape == (3, 2) and a.strides == (4, 12)
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3).T)
    r = ext.native_arange("numpy", "float32", 3, read_only=True)
    assert not r.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        r[0] = 1
    # Writes land in the Rust buffer: a view made before sees them.
    w = ext.native_arange("numpy", "float64", 3)
    v = w[:]
    w[1] = 42
    assert v[1] == 42
    del a, r, w, v
    assert (drops.created, drops.dropped_now) == (3, 3)


def test_numpy_refuses_what_it_has_no_dtype_for_with_a_buffer_error(drops):
    # NumPy's own `from_dlpack` raises "RuntimeError: Unsupported dtype in DLTensor."
    # for these; ours is the documented BufferError, naming the tensor.
    with pytest.raises(RuntimeError, match="^Unsupported dtype in DLTensor.$"):
        np.from_dlpack(ext.arange("bfloat16", 3))
    with pytest.raises(BufferError) as ours:
        ext.native_arange("numpy", "bfloat16", 3)
    assert str(ours.value).startswith("a numpy.ndarray cannot hold this bfloat16 tensor on cpu:0: ")
    assert (drops.created, drops.dropped) == (2, 2)


def test_numpy_takes_pinned_memory_as_its_own_from_dlpack_does(drops):
    # Pinned (cuda_host) memory is host memory; with no stream named, nothing to wait for.
    a = ext.native_arange("numpy", "float32", 3, device="cuda_host:0")
    assert isinstance(a, np.ndarray)
    assert a.tolist() == [0.0, 1.0, 2.0]
    del a
    assert (drops.created, drops.dropped_now) == (1, 1)


def test_numpy_refuses_device_memory_and_drops_the_value(drops):
    with pytest.raises(BufferError) as info:
        ext.native_arange("numpy", "float32", 3, device="cuda:1")
    assert str(info.value) == (
        "a numpy.ndarray holds host memory only, but the value is on cuda:1; "
        "return it as a DLPackTensor or in a framework for that device"
    )
    assert (drops.created, drops.dropped_now) == (1, 1)


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax"])
def test_a_failing_description_is_a_value_error_and_drops_the_value(framework, drops):
    with pytest.raises(ValueError, match="needs 20 bytes, but the buffer holds 16 bytes"):
        ext.native_broken(framework)
    assert (drops.created, drops.dropped_now) == (1, 1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "bfloat16", "float32",
                                   "complex64"])
def test_torch_results_are_tensors_through_torchs_exchange_table(dtype, drops):
    t = ext.native_arange("torch", dtype, 5)
    assert type(t) is torch.Tensor
    want = torch.from_dlpack(ext.arange(dtype, 5))
    assert t.dtype == want.dtype
    assert torch.equal(t, want)
    del want
    gc_view = t[1:]
    del t
    assert drops.dropped_now == 1  # only `want`'s value, not ours: the view keeps it
    del gc_view
    assert (drops.created, drops.dropped_now) == (2, 2)


def test_torch_results_keep_layout_and_share_memory(drops):
    t = ext.native_arange("torch", "float32", 6, shape=[3, 2], strides=[1, 3])
    assert t.shape == (3, 2) and t.stride() == (1, 3)
    assert torch.equal(t, torch.arange(6, dtype=torch.float32).reshape(2, 3).T)
    t2 = t.view(-1) if t.is_contiguous() else t.as_strided((6,), (1,))
    t2[0] = 7
    assert t[0, 0] == 7
    del t, t2
    assert (drops.created, drops.dropped_now) == (1, 1)


@pytest.mark.parametrize("device, message", [
    # Refused before torch takes the block (`dlDeviceToTorchDevice`): we free it.
    ("vpi:0", "Unsupported device_type: 9"),
    # Refused inside `from_blob`, after torch took the block: torch frees it.
    ("oneapi:0", "Cannot get device of pointer on XPU without ATen_xpu library."),
])
def test_what_torch_refuses_is_a_buffer_error_and_the_value_drops_once(device, message, drops):
    # torch raises a RuntimeError with a C++ backtrace: its first line is kept.
    with pytest.raises(BufferError) as info:
        ext.native_arange("torch", "float32", 3, device=device)
    assert str(info.value) == f"a torch.Tensor cannot hold this float32 tensor on {device}: {message}"
    assert (drops.created, drops.dropped_now) == (1, 1)


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64", "complex64", "bfloat16"])
def test_jax_results_are_jax_arrays(dtype, drops):
    x = ext.native_arange("jax", dtype, 4)
    assert isinstance(x, jax.Array)
    want = np.asarray(jnp.from_dlpack(ext.arange(dtype, 4)))
    np.testing.assert_array_equal(np.asarray(x), want)
    del x, want
    assert drops.dropped == drops.created == 2


# The dtypes JAX keeps as they are; the 64-bit ones it narrows unless x64 is on.
JAX_KEPT_DTYPES = ["bool", "int8", "uint16", "float16", "bfloat16", "float32", "complex64"]
JAX_NARROWED_DTYPES = ["int64", "float64"]
# The jaxlib whose capsule import host values go through (its jaxlib_extension_version).
has_capsule_import = pytest.mark.skipif(
    getattr(__import__("jax._src.lib", fromlist=["lib"]), "jaxlib_extension_version", 0) != 467,
    reason="not the proven jaxlib (extension version 467): every value takes jax.dlpack.from_dlpack",
)


@pytest.fixture
def from_dlpack_calls(monkeypatch):
    """The types `jax.dlpack.from_dlpack` is called with while the test runs (it checks that
    `jax.numpy.from_dlpack`, which only forwards, is never called)."""
    import jax.dlpack

    calls = []
    original = jax.dlpack.from_dlpack

    def counting(x, *args, **kwargs):
        calls.append(type(x).__name__)
        return original(x, *args, **kwargs)

    def refused(*args, **kwargs):
        raise AssertionError("jax.numpy.from_dlpack only forwards: not called")

    monkeypatch.setattr(jax.dlpack, "from_dlpack", counting)
    monkeypatch.setattr(jnp, "from_dlpack", refused)
    return calls


@pytest.mark.parametrize("dtype", JAX_NARROWED_DTYPES)
def test_jax_results_that_jax_narrows_come_from_jax_dlpack_from_dlpack(dtype, from_dlpack_calls):
    x = ext.native_arange("jax", dtype, 4)
    assert from_dlpack_calls == ["DLPackTensor"]
    # Without x64, JAX's from_dlpack narrows them (a copy) as it does any producer's.
    assert x.dtype == jnp.asarray(np.zeros(1, dtype)).dtype
    assert np.asarray(x).tolist() == [0, 1, 2, 3]


@has_capsule_import
@pytest.mark.parametrize("dtype", JAX_KEPT_DTYPES)
def test_jax_results_of_host_values_are_what_from_dlpack_makes_without_calling_it(dtype, drops, monkeypatch):
    import jax.dlpack

    public = jax.dlpack.from_dlpack
    monkeypatch.setattr(jax.dlpack, "from_dlpack", None)  # a call would raise TypeError
    x = ext.native_arange("jax", dtype, 6, shape=[2, 3])
    monkeypatch.undo()
    want = public(ext.arange(dtype, 6)).reshape(2, 3)
    assert type(x) is type(want)
    assert (x.dtype, x.shape, x.weak_type, x.committed, x.sharding) == (
        want.dtype, want.shape, want.weak_type, want.committed, want.sharding)
    values = np.asarray(want)
    np.testing.assert_array_equal(np.asarray(x), values)
    # Zero-copy: the Rust value lives exactly as long as the array.
    del want
    gc.collect()
    assert (drops.created, drops.dropped_now) == (2, 1)
    y = x + 1
    del x
    gc.collect()
    assert drops.dropped == 2
    np.testing.assert_array_equal(np.asarray(y), values + 1)


@has_capsule_import
@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8", "uint32"])
def test_jax_arrays_of_dlpack_tensors_take_the_same_route(dtype, monkeypatch):
    import jax.dlpack

    public = jax.dlpack.from_dlpack
    monkeypatch.setattr(jax.dlpack, "from_dlpack", None)
    x = jnp.asarray(ext.arange(dtype, 5))  # DLPackTensor.__jax_array__
    monkeypatch.undo()
    want = public(ext.arange(dtype, 5))
    assert (type(x), x.dtype, x.weak_type, x.committed, x.sharding) == (
        type(want), want.dtype, want.weak_type, want.committed, want.sharding)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(want))


# Two Native::jax results in a fresh interpreter after PATCH, with the types
# jax.dlpack.from_dlpack was called with, how often jaxlib's import raised our way, and the
# Rust values' drop count once both arrays are gone.
CAPSULE_IMPORT_PATCHED = """
    import gc, sys
    import jax.dlpack, numpy as np
    from jax._src import lib
    import dlpack_testext as ext

    original_import = lib._jax.dlpack_managed_tensor_to_buffer
    refusals = []

    def our_keywords_refused(*args, **kwargs):
        # A jaxlib whose import takes other arguments, for callers other than JAX's own.
        if sys._getframe(1).f_code.co_filename.endswith("dlpack.py"):
            return original_import(*args, **kwargs)
        refusals.append(len(args) + len(kwargs))
        raise TypeError("dlpack_managed_tensor_to_buffer(): incompatible function arguments")

    PATCH
    calls = []
    original = jax.dlpack.from_dlpack
    jax.dlpack.from_dlpack = lambda x, *a, **k: (calls.append(type(x).__name__), original(x, *a, **k))[1]
    created0, dropped0, _ = ext.drop_counts()
    results = [ext.native_arange("jax", "float32", 3) for _ in range(2)]
    assert [np.asarray(x).tolist() for x in results] == [[0.0, 1.0, 2.0]] * 2
    del results
    gc.collect()
    created, dropped, _ = ext.drop_counts()
    print(calls, refusals, created - created0, dropped - dropped0)
"""


@has_capsule_import
@pytest.mark.parametrize("patch, calls, refusals", [
    ("pass", [], []),
    # An older and a newer jaxlib than the proven one: from_dlpack, never the import.
    ("lib.jaxlib_extension_version = 466", ["DLPackTensor"] * 2, []),
    ("lib.jaxlib_extension_version = 468", ["DLPackTensor"] * 2, []),
    # A JAX whose private module moved (JAX's own from_dlpack holds it already).
    ("sys.modules['jax._src.lib'] = None", ["DLPackTensor"] * 2, []),
    # A jaxlib whose import refuses our arguments: tried once, then from_dlpack for good.
    ("lib._jax.dlpack_managed_tensor_to_buffer = our_keywords_refused", ["DLPackTensor"] * 2, [5]),
])
def test_jax_results_take_from_dlpack_where_jaxlibs_import_is_not_the_one_proven(patch, calls, refusals):
    out = run_fresh(CAPSULE_IMPORT_PATCHED.replace("PATCH", patch))
    assert out.strip() == f"{calls} {refusals} 2 2"


def test_jax_takes_read_only_values_its_immutable_arrays_cannot_write(drops):
    # A legacy consumer of a read-only DLPackTensor is refused (NumPy's rule)...
    with pytest.raises(BufferError, match="legacy") as info:
        jnp.from_dlpack(ext.arange("float32", 3, "arc"))
    # ...with a hint a JAX user can act on, which works:
    assert str(info.value).endswith("can take a copy through NumPy: jnp.asarray(np.from_dlpack(x)))")
    del info  # its traceback holds the refused tensor
    frozen = np.arange(3, dtype=np.float32)
    frozen.flags.writeable = False
    np.testing.assert_array_equal(jnp.asarray(np.from_dlpack(ext.asdlpack(frozen))), [0, 1, 2])
    # ...but Native::jax knows its consumer: JAX arrays are immutable.
    x = ext.native_arange("jax", "float32", 3, read_only=True)
    assert isinstance(x, jax.Array)
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0])
    del x
    gc.collect()
    assert drops.dropped == drops.created == 2


@pytest.mark.parametrize("make, kind", [
    (lambda: np.zeros(3, np.float32), np.ndarray),
    (lambda: torch.zeros(3), torch.Tensor),
    (lambda: jnp.zeros(3), jax.Array),
])
def test_a_result_of_the_same_kind_as_the_argument(make, kind, drops):
    out = ext.native_like(make(), 4)
    assert isinstance(out, kind)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4, dtype=np.float32))
    del out
    assert drops.dropped == drops.created == 1


def test_an_argument_of_no_framework_gives_a_dlpack_tensor(drops):
    out = ext.native_like(memoryview(b"abc"), 2)
    assert type(out).__name__ == "DLPackTensor"
    np.testing.assert_array_equal(np.from_dlpack(out), [0, 1])
    del out
    assert drops.dropped == drops.created == 1


# --- Outputs allocated by the caller's framework (`allocate_like`) ---------

@needs_exchange_table
def test_torch_outputs_come_from_torchs_exchange_table_allocator(monkeypatch):
    like = torch.zeros(2)
    # The table's allocator, not the Python constructor, makes it.
    monkeypatch.setattr(torch, "empty", lambda *a, **k: pytest.fail("torch.empty was called"))
    out = ext.allocate_filled(like, [2, 3], "float32")
    assert type(out) is torch.Tensor
    assert out.shape == (2, 3) and out.dtype == torch.float32 and out.device == like.device
    assert out.is_contiguous()
    assert torch.equal(out, torch.arange(6, dtype=torch.float32).reshape(2, 3))
    out64 = ext.allocate_filled(like, [4], "int64")
    assert out64.dtype == torch.int64 and out64.tolist() == [0, 1, 2, 3]


def test_numpy_outputs_come_from_numpy_empty():
    out = ext.allocate_filled(np.zeros(1), [3, 2], "float32")
    assert type(out) is np.ndarray and out.flags.writeable and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(3, 2))
    assert ext.allocate_filled(np.zeros(1), [0], "int64").shape == (0,)


def test_jax_and_unknown_arguments_are_refused_with_a_reason():
    with pytest.raises(TypeError) as info:
        ext.allocate_filled(jnp.zeros(1), [2], "float32")
    assert str(info.value) == (
        "cannot write the result into an array like a jax.Array: JAX arrays are "
        "immutable; pass a numpy.ndarray, torch.Tensor or cupy.ndarray instead"
    )
    with pytest.raises(TypeError) as info:
        ext.allocate_filled([1.0], [2], "float32")
    assert str(info.value) == (
        "cannot allocate like a list: expected a numpy.ndarray, torch.Tensor or cupy.ndarray"
    )


def test_a_negative_extent_is_our_value_error_before_any_framework_sees_it():
    with pytest.raises(ValueError) as info:
        ext.allocate_filled(torch.zeros(1), [2, -1], "float32")
    assert str(info.value) == "shape [2, -1] has a negative extent -1 in dimension 1"


@needs_exchange_table
def test_what_torchs_allocator_refuses_is_the_exception_it_reports():
    # torch has no float8_e3m4: its allocator reports the failure through SetError,
    # naming MemoryError as the kind, which becomes that exception (first line only).
    with pytest.raises(MemoryError) as info:
        ext.allocate_filled(torch.zeros(1), [2], "float8_e3m4")
    assert str(info.value) == "Unsupported code 7"


@pytest.mark.parametrize("like", [lambda: torch.zeros(1), lambda: np.zeros(1)], ids=["torch", "numpy"])
@pytest.mark.parametrize("dtype, reason", [
    ("float6_e3m2fn", "no framework allocates elements narrower than a byte"),
    ("float4_e2m1fn", "no framework allocates elements narrower than a byte"),
    ("float32x2", "dtype float32x2 has 2 lanes: vector dtypes (lanes != 1) are not supported, but for float4_e2m1fn_x2"),
])
def test_dtypes_no_framework_allocates_are_refused_before_any_framework_sees_them(like, dtype, reason):
    like = like()
    with pytest.raises(BufferError) as info:
        ext.allocate_filled(like, [2], dtype)
    name = f"{type(like).__module__}.{type(like).__qualname__}"
    assert str(info.value) == f"a {name} cannot hold a {dtype} tensor: {reason}"

def test_usize_indices_return_as_numpy_uintp_and_usize_arguments_take_uint64():
    a = ext.usize_indices(4)
    assert isinstance(a, np.ndarray) and a.dtype == np.uintp and a.tolist() == [3, 2, 1, 0]
    assert ext.usize_sum(a) == (6, [3, 2, 1, 0])
    assert ext.usize_sum(np.array([2**63], np.uint64)) == (2**63, [-(2**63)])
    with pytest.raises(TypeError) as err:
        ext.usize_sum(np.arange(3))
    assert str(err.value) == "expected a uint64 tensor, got int64"
