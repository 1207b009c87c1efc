"""Writability on import: writable, read-only, or unknown (a legacy capsule),
and a re-export that hands it on as it came."""

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import READ_ONLY, version_of

import torch

JAX_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")

    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", False)


def jax_pointer(array):
    return array.addressable_data(0).unsafe_buffer_pointer()


@pytest.mark.parametrize("dtype", JAX_DTYPES)
def test_jax_through_rust_and_back_to_jax_is_zero_copy(jax, dtype):
    jnp = jax.numpy
    x = jnp.arange(6).reshape(2, 3).astype(dtype)
    described = ext.describe(x)
    assert (described["version"], described["writability"]) == (None, "Unknown")
    assert described["read_only"] is True
    y = jnp.from_dlpack(ext.reexport(x))
    assert jax_pointer(y) == jax_pointer(x)
    assert y.dtype == x.dtype and y.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_an_unknown_tensor_goes_to_versioned_consumers_read_only(jax, capsule_view):
    x = jax.numpy.arange(4.0)
    out = ext.reexport(x)
    assert out.read_only
    assert repr(out).endswith("read_only=True)")
    view = capsule_view(out.__dlpack__(max_version=(1, 3)))
    assert (view.name, view.version, view.flags) == ("dltensor_versioned", (1, 3), READ_ONLY)
    assert view.data == jax_pointer(x)
    legacy = capsule_view(out.__dlpack__())
    assert (legacy.name, legacy.data) == ("dltensor", jax_pointer(x))
    # NumPy makes read-only arrays of both.
    a = np.from_dlpack(out)
    assert not a.flags.writeable
    np.testing.assert_array_equal(a, [0, 1, 2, 3])


def test_a_bare_legacy_torch_capsule_goes_through_rust_and_back_to_torch(capsule_view):
    t = torch.arange(5, dtype=torch.float32)
    out = ext.reexport(torch.utils.dlpack.to_dlpack(t))
    assert ext.import_with(out, max_version=(0, 8))["writability"] == "Unknown"
    assert ext.describe(out)["writability"] == "ReadOnly"
    # Legacy consumer: a legacy capsule.
    back = torch.utils.dlpack.from_dlpack(out.__dlpack__())
    assert back.data_ptr() == t.data_ptr()
    assert torch.equal(back, t)
    # Versioned consumer: READ_ONLY (torch ignores the flag).
    assert capsule_view(out.__dlpack__(max_version=(1, 0))).flags == READ_ONLY
    again = torch.from_dlpack(out)
    assert again.data_ptr() == t.data_ptr()


def test_known_writability_is_kept_on_reexport(capsule_view):
    writable = np.arange(3.0)
    out = ext.reexport(writable)
    assert ext.describe(writable)["writability"] == "Writable"
    assert not out.read_only
    assert capsule_view(out.__dlpack__(max_version=(1, 0))).flags == 0
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    assert ext.describe(frozen)["writability"] == "ReadOnly"
    out = ext.reexport(frozen)
    assert capsule_view(out.__dlpack__(max_version=(1, 0))).flags == READ_ONLY
    # A producer's known read-only keeps NumPy's rule: no legacy capsule.
    with pytest.raises(BufferError, match="^the tensor is read-only and the legacy"):
        out.__dlpack__()
    copied = capsule_view(out.__dlpack__(copy=True))
    assert copied.name == "dltensor"


def test_our_own_shared_values_still_refuse_legacy_capsules():
    x = ext.arange("float32", 4, storage="arc")
    assert x.read_only
    with pytest.raises(
        BufferError,
        match=r"^the tensor is read-only and the legacy \(unversioned\) DLPack capsule cannot say so",
    ):
        x.__dlpack__()


def test_a_legacy_numpy_capsule_is_writable_when_the_array_is():
    # NumPy exports legacy capsules only of writable arrays (before 2.1, the
    # only kind it exports; the abi3 suite runs NumPy 2.0.2 for real).
    a = np.arange(3.0)
    assert ext.import_with(a, max_version=(0, 8))["writability"] == "Writable"
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    with pytest.raises(BufferError, match="^Cannot export readonly array"):
        ext.import_with(frozen, max_version=(0, 8))
    # A subclass may export what it likes: its legacy capsule says nothing.
    class Sub(np.ndarray):
        pass

    assert ext.import_with(a.view(Sub), max_version=(0, 8))["writability"] == "Unknown"
    # A bare legacy capsule has no producer object to ask.
    assert ext.describe(a.__dlpack__())["writability"] == "Unknown"


def test_writing_a_legacy_import_names_the_legacy_capsule():
    t = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(
        TypeError,
        match=r"^expected a writable tensor, got one from a legacy DLPack capsule, which cannot "
        r"say whether it may be written \(a producer of DLPack 1\.0 or later can\)$",
    ):
        ext.fill(torch.utils.dlpack.to_dlpack(t), 1.0)
    assert t.sum() == 0


def test_a_torch_tensor_from_a_legacy_capsule_is_writable_as_torch_has_no_read_only_tensors():
    # torch before 2.9 takes no max_version, so all its capsules are legacy: asked for one here.
    t = torch.zeros(3)
    d = ext.import_with(t, max_version=(0, 8))
    assert (d["version"], d["writability"]) == (None, "Writable")

    class Wrapper(torch.Tensor):
        pass

    # A subclass may have rules of its own (torch's ReadOnlyTensorWrapper): it cannot say.
    assert ext.import_with(t.as_subclass(Wrapper), max_version=(0, 8))["writability"] == "Unknown"


@pytest.mark.parametrize("options", [{"max_version": (0, 8)}, {"dl_device": (1, 0)}], ids=["legacy", "dl_device"])
def test_torchs_lazy_negative_bit_is_refused_through_dlpack_too(options):
    # torch's own __dlpack__ exports the negative bit's memory as is (its values negated).
    x = torch.tensor([1 + 2j, 3 + 4j]).conj().imag
    assert x.is_neg()
    if "dl_device" in options and version_of(torch)[:2] < (2, 9):
        # torch's __dlpack__ takes max_version (which dl_device needs) from 2.9.
        with pytest.raises(TypeError, match="max_version"):
            ext.import_with(x, **options)
        return
    with pytest.raises(BufferError, match="^the torch tensor has its lazy negative bit set"):
        ext.import_with(x, **options)
    assert ext.import_with(x.resolve_neg(), **options)["shape"] == (2,)


def test_native_torch_results_are_never_writable_aliases_of_read_only_values(drops):
    # Here, not in test_native.py (which needs JAX), so that the torch entries of `make
    # test-matrix` run it. torch has no read-only tensors, so a read-only value must not
    # become one (torch ignores DLPack's READ_ONLY flag on import). The same refusal on
    # every torch version: through torch's exchange table (2.10+), and before it ahead of
    # torch.from_dlpack (torch 2.9 took the versioned capsule and ignored its read-only
    # flag: a writable alias; 2.5 refused the legacy export).
    with pytest.raises(BufferError) as info:
        ext.native_arange("torch", "float32", 3, read_only=True)
    assert str(info.value) == (
        "a torch.Tensor cannot hold this float32 tensor on cpu:0: torch has no read-only "
        "tensors, and this value may not be written; export it writable, or return a copy"
    )
    del info
    assert (drops.created, drops.dropped) == (1, 1)


def test_writing_a_jax_array_names_jaxs_immutability_not_a_newer_producer(jax):
    # JAX before 0.12 sends a legacy capsule, which cannot say; the array's type says JAX.
    x = jax.numpy.zeros(3, dtype=jax.numpy.float64)
    with pytest.raises(TypeError) as err:
        ext.fill(x, 1.0)
    if jax.__version_info__ < (0, 12):
        assert str(err.value) == (
            "expected a writable tensor, got a jax.Array, which cannot be written: "
            "JAX arrays are immutable (return a new array instead)")
    else:
        assert str(err.value) == "expected a writable tensor, got a read-only one"
    # What an import reports is unchanged: the capsule could not say (it is re-exported so).
    assert ext.describe(x)["read_only"] is True
