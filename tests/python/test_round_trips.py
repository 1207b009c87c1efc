"""Every producer → Rust (`PyTensor`) → `DLPackTensor` → every consumer, for
every dtype both frameworks have, contiguous and strided, writable and
read-only: values, zero-copy, and writability as the three-valued rules say."""

import re

import ml_dtypes
import numpy as np
import pyarrow as pa
import pytest
import torch

import dlpack_testext as ext
from conftest import version_of

jax = pytest.importorskip("jax")
jnp = jax.numpy
xp = pytest.importorskip("array_api_strict")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]

# What each framework can make and take (JAX without x64: no 64-bit types;
# the array API has no float16 or bfloat16; NumPy's from_dlpack no bfloat16;
# pyarrow makes primitive numeric arrays only, and consumes nothing).
SUPPORTS = {
    "numpy": set(DTYPES) - {"bfloat16"},
    "torch": set(DTYPES),
    "jax": set(DTYPES) - {"int64", "uint64", "float64", "complex128"},
    "array_api_strict": set(DTYPES) - {"float16", "bfloat16"},
    "pyarrow": set(DTYPES) - {"bool", "bfloat16", "complex64", "complex128"},
}
PRODUCERS = list(SUPPORTS)
CONSUMERS = ["numpy", "torch", "jax", "array_api_strict"]


def reference(dtype, n=12):
    """The values, as a NumPy array (ml_dtypes for bfloat16)."""
    if dtype == "bool":
        return np.arange(n) % 3 == 0
    if dtype == "bfloat16":
        return np.arange(n).astype(ml_dtypes.bfloat16)
    if dtype.startswith("complex"):
        return (np.arange(n) + 1j * np.arange(n)[::-1]).astype(dtype)
    return np.arange(n).astype(dtype)


def make(producer, dtype, strided, read_only):
    """(object, its data pointer, the values it holds as NumPy)."""
    ref = reference(dtype, 24 if strided else 12)
    if producer == "numpy":
        a = ref.copy()
        if strided:
            a = a[::2]
        a.flags.writeable = not read_only
        return a, a.__array_interface__["data"][0], np.array(a)
    if producer == "torch":
        t = torch.from_numpy(ref.view(np.uint16)).view(torch.bfloat16) if dtype == "bfloat16" \
            else torch.from_numpy(ref.copy())
        if strided:
            t = t[::2]
        return t, t.data_ptr(), ref[::2] if strided else ref
    if producer == "jax":
        x = jnp.asarray(ref)
        return x, x.unsafe_buffer_pointer(), np.asarray(x)
    if producer == "array_api_strict":
        x = xp.asarray(ref)
        return x, x._array.__array_interface__["data"][0], ref
    if producer == "pyarrow":
        arr = pa.array(ref)
        return arr, arr.buffers()[1].address, ref
    raise AssertionError(producer)


def consume(consumer, obj):
    """(consumer's array, its data pointer, its values as NumPy, writable or
    None where the consumer has no such flag: torch shares read-only memory
    as a tensor, exactly as `torch.from_dlpack` of the producer itself does)."""
    if consumer == "numpy":
        y = np.from_dlpack(obj)
        return y, y.__array_interface__["data"][0], y, y.flags.writeable
    if consumer == "torch":
        y = torch.from_dlpack(obj)
        values = y.view(torch.uint16).numpy().view(ml_dtypes.bfloat16) \
            if y.dtype == torch.bfloat16 else y.numpy()
        return y, y.data_ptr(), values, None
    if consumer == "jax":
        y = jnp.from_dlpack(obj)
        return y, y.unsafe_buffer_pointer(), np.asarray(y), None
    if consumer == "array_api_strict":
        y = xp.from_dlpack(obj)
        return y, y._array.__array_interface__["data"][0], y._array, y._array.flags.writeable
    raise AssertionError(consumer)


CASES = [(p, c, d, strided, ro)
         for p in PRODUCERS for c in CONSUMERS for d in DTYPES
         for strided in (False, True) for ro in (False, True)
         if d in SUPPORTS[p] and d in SUPPORTS[c]
         and (not strided or p in ("numpy", "torch"))
         and (not ro or p == "numpy")]


@pytest.mark.parametrize("producer, consumer, dtype, strided, read_only", CASES)
def test_round_trip_through_rust(producer, consumer, dtype, strided, read_only):
    obj, pointer, values = make(producer, dtype, strided, read_only)
    described = ext.describe(obj)
    assert described["data_ptr"] == pointer
    legacy_consumer = consumer == "jax" or (consumer == "torch" and version_of(torch)[:2] < (2, 9))
    if legacy_consumer and described["writability"] == "ReadOnly":
        # JAX 0.10 (and torch before 2.9) asks for a legacy capsule, which cannot say
        # read-only: a tensor its producer declared read-only is refused, as NumPy refuses
        # its own read-only arrays (pyarrow would hand one over regardless).
        with pytest.raises(BufferError, match="the tensor is read-only and the legacy"):
            consume(consumer, ext.reexport(obj))
        return
    if consumer == "jax" and strided:
        # JAX refuses non-compact strides; through Rust it refuses them alike.
        refusal = "Only DLPack tensors with trivial (compact) striding are supported"
        for source in (obj, ext.reexport(obj)):
            with pytest.raises(Exception, match=re.escape(refusal)) as info:
                consume(consumer, source)
            # JAX 0.4 names it XlaRuntimeError.
            assert type(info.value).__name__ in ("JaxRuntimeError", "XlaRuntimeError")
        return
    y, y_pointer, y_values, writable = consume(consumer, ext.reexport(obj))
    np.testing.assert_array_equal(np.asarray(y_values), values)
    assert str(np.asarray(y_values).dtype) == str(values.dtype)
    if consumer != "jax" or pointer % 64 == 0:
        # JAX copies buffers that are not 64-byte aligned; everyone else shares.
        assert y_pointer == pointer
    # Writability: a legacy producer (JAX 0.10 asks for no max_version and so
    # gets a legacy capsule) says nothing, and a versioned consumer then gets
    # READ_ONLY; a read-only producer stays read-only; a writable one writable.
    expected = {
        "numpy": "ReadOnly" if read_only else "Writable",
        "torch": "Writable",
        "jax": "Unknown",
        "array_api_strict": "Writable",
        # pyarrow 18.1 exports legacy capsules only, which say nothing (26.0: versioned).
        "pyarrow": "ReadOnly" if described["version"] is not None else "Unknown",
    }[producer]
    assert described["writability"] == expected
    if writable is not None:
        assert writable == (expected == "Writable")
