"""DLPack's header after 1.3 (dmlc/dlpack, 2026): `kDLBcomplex = 18` (complex numbers of two
bfloat16 parts, #187), the TPU device codes `kDLTPU = 19` and `kDLTPUHost = 20` (#188), and
Metal's `data` being an `id<MTLBuffer>` handle with the offset in `byte_offset` (#186).

What the frameworks do with a bcomplex32 tensor, as they are (NumPy 2.4, torch 2.15, JAX
0.10): none imports it over DLPack, and torch, which has a `torch.bcomplex32` dtype, does not
export it either. This crate imports, exports and re-exports it, and its framework-native
results refuse it with a `BufferError` naming the array type, as for other dtypes the
framework lacks.
"""

import ctypes
import pickle
import struct

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import BUFFER_PROTOCOL, CapsuleView, needs_buffer_protocol, version_of
from handmade import HandMade

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")


def bf16_bytes(values):
    """bfloat16s: the high halves of the float32s (exact for small integers)."""
    return b"".join(struct.pack("<f", v)[2:] for v in values)


# Two bcomplex32 elements, 1 - 1j and 2 - 2j: (real, imaginary) bfloat16 pairs.
BCOMPLEX = bf16_bytes([1, -1, 2, -2])


# --- kDLBcomplex ---------------------------------------------------------------------


def test_a_bcomplex32_tensor_exports_as_code_18_with_32_bits():
    t = ext.from_bytes(BCOMPLEX, "bcomplex32", [2])
    assert (t.dtype, t.shape) == ("bcomplex32", (2,))
    for max_version in (None, (1, 3)):
        view = CapsuleView(t.__dlpack__(max_version=max_version))
        assert (view.dtype, view.shape, view.byte_offset) == ((18, 32, 1), (2,), 0)


def test_a_bcomplex32_tensor_imports_re_exports_and_pickles_bit_exact():
    h = HandMade(values=BCOMPLEX, dtype=(18, 32, 1), shape=(2,))
    d = ext.describe(h.capsule)
    assert (d["dtype"], d["shape"], d["nbytes"]) == ("bcomplex32", (2,), 8)
    assert h.deleted == 1
    h = HandMade(values=BCOMPLEX, dtype=(18, 32, 1), shape=(2,))
    again = ext.reexport(h.capsule)
    assert again.dtype == "bcomplex32"
    assert ext.describe(again)["data_ptr"] == ctypes.addressof(h.buffer)  # zero-copy
    copy = pickle.loads(pickle.dumps(again, protocol=5))
    d = ext.describe(copy)
    assert d["dtype"] == "bcomplex32" and ctypes.string_at(d["data_ptr"], 8) == BCOMPLEX
    del again, copy
    assert h.deleted == 1


@pytest.mark.parametrize(
    "dtype, message",
    [
        # Two bfloat16 parts are 32 bits: there is no "bcomplex64".
        ((18, 64, 1), "dtype bcomplex32 must have 32 bits per element, got 64"),
        ((18, 16, 1), "dtype bcomplex32 must have 32 bits per element, got 16"),
        ((18, 32, 2), "dtype bcomplex32x2 has 2 lanes: vector dtypes (lanes != 1) are not supported"),
        ((19, 32, 1), "unknown DLPack dtype code 19 (bits 32): this crate knows the codes of "
                      "DLPack 1.3 and bcomplex (18)"),
    ],
)
def test_bcomplex_widths_and_later_codes_are_refused_on_import(dtype, message):
    h = HandMade(values=BCOMPLEX, dtype=dtype, shape=(1,))
    with pytest.raises(ValueError) as info:
        ext.describe(h.capsule)
    assert str(info.value).startswith(message)
    assert h.deleted == 1


def test_bcomplex_widths_are_refused_on_export():
    with pytest.raises(ValueError, match="^unknown dtype \"bcomplex64\""):
        ext.from_bytes(bytes(8), "bcomplex64", [1])


def test_no_framework_imports_bcomplex32_over_dlpack_today(drops):
    t = ext.from_bytes(BCOMPLEX, "bcomplex32", [2])
    # NumPy 2.5 made its import errors BufferErrors (numpy PR #31000).
    numpy_error = BufferError if version_of(np) >= (2, 5) else RuntimeError
    with pytest.raises(numpy_error, match="^Unsupported dtype in DLTensor.$"):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match="^Unsupported code 18$"):
        torch.from_dlpack(t)
    with pytest.raises(Exception) as info:
        jax.dlpack.from_dlpack(t)
    assert type(info.value).__name__ in ("JaxRuntimeError", "XlaRuntimeError")
    assert "Unknown or invalid DLPack type code 18" in str(info.value)


@pytest.mark.skipif(not hasattr(torch, "bcomplex32"), reason="torch has no bcomplex32 dtype")
@pytest.mark.filterwarnings("ignore:BComplex32 support is experimental")
def test_torch_has_bcomplex32_but_does_not_export_it():
    t = torch.zeros(2, dtype=torch.bcomplex32)
    with pytest.raises(BufferError, match="^BComplex32 type is not supported by dlpack$"):
        t.__dlpack__(max_version=(1, 3))
    with pytest.raises(BufferError, match="BComplex32 type is not supported by dlpack"):
        ext.describe(t)


def test_numpy_buffer_and_array_refuse_bcomplex32_naming_it():
    t = ext.from_bytes(BCOMPLEX, "bcomplex32", [2])
    if BUFFER_PROTOCOL:  # not in an abi3 build for CPython < 3.11
        with pytest.raises(BufferError) as info:
            memoryview(t)
        assert str(info.value).startswith(
            "a bcomplex32 tensor has no buffer-protocol format: expected bool, int8 to int64, "
        )
    message = (
        "cannot make a NumPy array of a bcomplex32 tensor: NumPy has no such dtype; "
        "read it from Rust; no framework imports it over DLPack yet"
    )
    for convert in (np.asarray, np.array, lambda t: t.__array__()):
        with pytest.raises(BufferError) as info:
            convert(t)
        assert str(info.value) == message


@pytest.mark.parametrize(
    "framework, message",
    [
        ("numpy", "a numpy.ndarray cannot hold this bcomplex32 tensor on cpu:0: "
                  "NumPy has no such dtype; return it as a DLPackTensor"),
        ("torch", "a torch.Tensor cannot hold this bcomplex32 tensor on cpu:0: Unsupported code 18"),
        ("jax", "a jax.Array cannot hold this bcomplex32 tensor on cpu:0: JAX has no such dtype "
                "(complex32, bcomplex32, float6, float4 and multi-lane types); return it as a DLPackTensor"),
    ],
)
def test_native_results_refuse_bcomplex32_with_a_buffer_error(framework, message, drops):
    with pytest.raises(BufferError) as info:
        ext.native_arange(framework, "bcomplex32", 3)
    assert str(info.value) == message
    assert (drops.created, drops.dropped) == (1, 1)


@pytest.mark.parametrize("dtype", ["complex32", "bcomplex32", "float6_e2m3fn", "float6_e3m2fn",
                                   "float4_e2m1fn", "float4_e2m1fn_x2"])
def test_jax_arrays_of_dtypes_jax_lacks_are_buffer_errors_not_jaxlib_errors(dtype):
    # jaxlib raises JaxRuntimeError (UNIMPLEMENTED) for each of these.
    t = ext.from_bytes(bytes(8), dtype, [2])
    with pytest.raises(BufferError, match=f"^a jax.Array cannot hold this {dtype} tensor on cpu:0: "
                                          "JAX has no such dtype"):
        jax.numpy.asarray(t)


# --- kDLTPU and kDLTPUHost -----------------------------------------------------------


def test_tpu_pinned_host_memory_is_read_on_the_host_and_tpu_memory_is_not():
    # JAX (after 0.10) exports its TPU arrays in pinned_host memory as (20, hardware id).
    h = HandMade(device=(20, 1))
    d = ext.describe(h.capsule)
    assert d["device"] == (20, 1) and d["stream"] is None
    h = HandMade(device=(20, 1))
    assert ext.to_list(h.capsule, "int16") == [1, 2, 3, 4, 5, 6]
    assert h.deleted == 1
    h = HandMade(device=(19, 0))
    with pytest.raises(TypeError) as info:
        ext.to_list(h.capsule, "int16")
    assert str(info.value) == "expected a tensor on cpu:0, got one on tpu:0"
    assert h.deleted == 1


def test_tpu_devices_are_named_and_pinned_memory_exports_to_the_cpu(capsule_view):
    t = ext.on_device(3, 20, 1)  # host memory declared TPU pinned host memory
    assert (t.device, t.__dlpack_device__()) == ("tpu_host:1", (20, 1))
    view = capsule_view(t.__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=False))
    assert (view.device, view.data) == ((1, 0), t.data_ptr)
    t = ext.on_device(3, 19, 0)
    assert (t.device, t.__dlpack_device__()) == ("tpu:0", (19, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 3), dl_device=(1, 0))


@needs_buffer_protocol
def test_tpu_pinned_memory_has_the_buffer_protocol_and_device_memory_not():
    assert bytes(memoryview(ext.on_device(3, 20, 1))) == bytes(12)
    with pytest.raises(BufferError, match="^expected a tensor in host memory for the buffer protocol, got one on tpu:0"):
        memoryview(ext.on_device(3, 19, 0))


# --- the exchange table under DLPack 1.2's name --------------------------------------


IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (3.10+)
needs_immutable_legacy_type = pytest.mark.skipif(
    not ext.LegacyExchangeProducer.__flags__ & IMMUTABLE_TYPE,
    reason="the abi3-py39 build's types are mutable: their int is never read",
)


@needs_immutable_legacy_type
def test_an_int_exchange_table_is_used_where_the_capsule_is_absent():
    # LegacyExchangeProducer's type has only `__c_dlpack_exchange_api__`, the int address
    # of ExchangeProducer's table (what tvm-ffi wraps in the 1.3 capsule), and a
    # `__dlpack__` that counts and refuses: the import must take the table.
    assert not hasattr(ext.LegacyExchangeProducer, "__dlpack_c_exchange_api__")
    assert isinstance(ext.LegacyExchangeProducer.__c_dlpack_exchange_api__, int)
    values = np.arange(6, dtype=np.float32)
    before = ext.exchange_counts()
    p = ext.LegacyExchangeProducer(values.ctypes.data, [2, 3])
    d = ext.describe(p)
    assert (d["shape"], d["dtype"], d["data_ptr"]) == ((2, 3), "float32", values.ctypes.data)
    assert ext.to_list(p, "float32") == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    after = ext.exchange_counts()
    assert after["dlpack_calls"] == before["dlpack_calls"]
    assert after["exported"] == before["exported"] + 2
    assert after["deleted"] == before["deleted"] + 2


def test_an_int_from_a_class_written_in_python_is_never_read():
    # A class statement can write any int: reading it as a table address would crash.
    # Such a class takes `__dlpack__`, even with the address of a real table.
    calls = []

    class Claims:
        __c_dlpack_exchange_api__ = ext.LegacyExchangeProducer.__c_dlpack_exchange_api__

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            calls.append(kwargs)
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (1, 0)

    for bogus in (Claims, type("Bogus", (Claims,), {"__c_dlpack_exchange_api__": 1})):
        calls.clear()
        assert ext.to_list(bogus(np.arange(3, dtype=np.float32)), "float32") == [0.0, 1.0, 2.0]
        assert len(calls) == 1


# Metal (DLPack after 1.3): `data` is an `id<MTLBuffer>`, never an address.


def test_a_metal_tensor_at_its_handle_is_re_exported_with_the_handle_unchanged(capsule_view):
    h = HandMade(device=(8, 0))
    handle = ctypes.addressof(h.buffer)
    again = ext.reexport(h.capsule).__dlpack__(max_version=(1, 3))
    view = capsule_view(again)
    assert (view.data, view.byte_offset, view.device) == (handle, 0, (8, 0))


@pytest.mark.parametrize("layout", [dict(byte_offset=4), dict(strides=(-3, 1), byte_offset=6)])
def test_a_metal_tensor_off_its_handle_is_refused_not_re_exported_with_a_bad_handle(layout):
    h = HandMade(device=(8, 0), **layout)
    with pytest.raises(BufferError, match="cannot re-export this metal:0 tensor: its data is a "
                       "buffer handle, not an address"):
        ext.reexport(h.capsule)
    assert h.deleted == 1


def test_no_host_path_reads_a_metal_handle():
    for read in [lambda c: ext.to_list(c, "int16"), lambda c: ext.slice_values(c, "int16")]:
        h = HandMade(device=(8, 0))
        with pytest.raises(TypeError, match="expected a tensor on cpu:0, got one on metal:0"):
            read(h.capsule)
    t = ext.reexport(HandMade(device=(8, 0)).capsule)
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 3), dl_device=(1, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 3), copy=True)
    import pickle

    with pytest.raises(pickle.PicklingError, match="cannot pickle: a tensor on metal:0"):
        pickle.dumps(t)  # refused before a host copy would read the handle


def test_an_int_planted_on_a_mutable_extension_type_is_never_read():
    # PyO3's classes are mutable: Python code could delete the 1.3 capsule and plant any
    # int (this crashed the import); such an int is ignored, the import takes __dlpack__.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import dlpack_testext as m
        T = m.DLPackTensor
        del T.__dlpack_c_exchange_api__
        T.__c_dlpack_exchange_api__ = 0x1000
        print(m.describe(m.arange("float32", 3, "vec"))["shape"])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "(3,)\n"), done.stderr
