"""Derived types: returned from and taken by #[pyfunction]s, checked against real frameworks."""

import re

import numpy as np
import pytest
import torch

import dlpack_testext as ext
from conftest import NOT_A_TENSOR, READ_ONLY, old_torch_refuses_read_only



# --- #[derive(IntoDLPack)] -----------------------------------------------------


def expected_pixels(height, width):
    return (np.arange(height * width * 3) % 256).astype("u1").reshape(height, width, 3)


def test_a_derived_value_returned_from_a_pyfunction_is_a_dlpack_tensor():
    x = ext.derived_image(4, 5)
    assert isinstance(x, ext.DLPackTensor)
    assert (x.shape, x.dtype, x.device, x.read_only) == ((4, 5, 3), "uint8", "cpu:0", False)


def test_numpy_torch_and_jax_import_it_zero_copy():
    jnp = pytest.importorskip("jax.numpy")

    x = ext.derived_image(4, 5)
    a, t, j = np.from_dlpack(x), torch.from_dlpack(x), jnp.from_dlpack(x)
    np.testing.assert_array_equal(a, expected_pixels(4, 5))
    assert a.ctypes.data == t.data_ptr() == j.addressable_data(0).unsafe_buffer_pointer() == x.data_ptr
    assert a.flags.writeable
    a[0, 0, 0] = 200
    assert t[0, 0, 0] == 200


def test_strides_from_a_field():
    x = ext.derived_image(2, 3, channels_first=True)
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (3, 2, 3)
    assert t.stride() == (1, 9, 3)
    np.testing.assert_array_equal(t.numpy(), expected_pixels(2, 3).transpose(2, 0, 1))


def test_read_only_from_a_field(capsule_view):
    x = ext.derived_image(2, 2, frozen=True)
    assert capsule_view(x.__dlpack__(max_version=(1, 0))).flags == READ_ONLY
    assert not np.from_dlpack(x).flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        x.__dlpack__()


def test_runtime_dtype_and_device_from_fields(capsule_view):
    x = ext.derived_raw(16, "bfloat16", [2, 4], 1, 0)
    t = torch.from_dlpack(x)
    assert (t.dtype, tuple(t.shape)) == (torch.bfloat16, (2, 4))
    gpu = ext.derived_raw(16, "float32", [4], 2, 3)
    assert gpu.__dlpack_device__() == (2, 3)
    assert capsule_view(gpu.__dlpack__(stream=None)).device == (2, 3)


def test_a_shape_that_does_not_fit_fails_in_the_pyfunction():
    with pytest.raises(ValueError, match=r"shape \[4\] of float64 needs 32 bytes, but the buffer holds 16 bytes"):
        ext.derived_raw(16, "float64", [4], 1, 0)


EXPECTED_ARRAY = np.fromfunction(lambda i, j, k: 100 * i + 10 * j + k, (2, 3, 4)).astype("f4")


@pytest.mark.parametrize("layout", ["c", "f", "reversed", "sliced"])
def test_an_array_field_is_exported_with_its_own_layout(layout, drops):
    jnp = pytest.importorskip("jax.numpy")
    x, first = ext.derived_array(layout)
    assert x.shape == (2, 3, 4)
    assert x.data_ptr == first
    a = np.from_dlpack(x)
    np.testing.assert_array_equal(a, EXPECTED_ARRAY)
    assert a.__array_interface__["data"][0] == first
    if layout != "reversed":  # torch has no negative strides: it refuses them
        t = torch.from_dlpack(x)
        np.testing.assert_array_equal(t.numpy(), EXPECTED_ARRAY)
        assert t.data_ptr() == first
        del t
    del x, a
    assert (drops.created, drops.dropped) == (1, 1)
    if layout in ("c", "f"):  # JAX takes compact strides only: it refuses the others
        np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(ext.derived_array(layout)[0])), EXPECTED_ARRAY)


def test_derived_values_are_dropped_once(drops):
    x = ext.derived_image(3, 3)
    t = torch.from_dlpack(x)
    del x
    assert drops.dropped == 0
    del t
    assert (drops.created, drops.dropped) == (1, 1)


# --- #[derive(FromDLPack)] -----------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(9, dtype="f4").reshape(3, 3),
        lambda: torch.arange(9, dtype=torch.float32).reshape(3, 3),
    ],
    ids=["numpy", "torch"],
)
def test_a_derived_argument_accepts_numpy_and_torch(make):
    m = make()
    assert ext.add_to_diagonal(m, 10.0) == 0 + 4 + 8
    assert [float(m[i, i]) for i in range(3)] == [10.0, 14.0, 18.0], "written in place"


def test_jax_arrays_are_read_only_so_writable_refuses_them():
    # JAX >= 0.12 flags its exports read-only; older JAX sends legacy capsules,
    # which are read-only on import because they cannot say otherwise.
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    x = jnp.eye(2, dtype=jnp.float32)
    legacy = jax.__version_info__ < (0, 12)
    # The legacy capsule cannot say; the array's type can: JAX arrays are immutable.
    message = ("got a jax.Array, which cannot be written: JAX arrays are immutable "
               "(return a new array instead)") if legacy else "got a read-only one"
    with pytest.raises(TypeError) as err:
        ext.add_to_diagonal(x, 1.0)
    assert str(err.value) == "expected a writable tensor, " + message
    assert ext.derived_describe(x)[4] is True


@pytest.mark.parametrize(
    "value, message",
    [
        (np.eye(2), "expected a float32 tensor, got float64"),
        (torch.eye(2, dtype=torch.int32), "expected a float32 tensor, got int32"),
        (np.zeros(3, dtype="f4"), "expected a 2-dimensional tensor, got 1 dimension"),
        (torch.zeros(2, 2, 2), "expected a 2-dimensional tensor, got 3 dimensions"),
        (np.zeros((3, 2), dtype="f4").T, r"expected a contiguous \(row-major\) tensor, got shape \[2, 3\] with strides \[1, 2\]"),
    ],
    ids=["numpy-f64", "torch-i32", "rank-1", "rank-3", "transposed"],
)
def test_constraint_failures_are_type_errors_naming_expected_and_found(value, message):
    with pytest.raises(TypeError) as excinfo:
        ext.add_to_diagonal(value, 1.0)
    assert re.fullmatch(message, str(excinfo.value))
    # The argument's name: PyO3's note on every argument extraction error
    # (Python 3.11+, where exceptions have notes), shown under the message.
    assert excinfo.value.__notes__ == ["while processing 'm'"]


def test_read_only_input_fails_writable():
    a = np.eye(2, dtype="f4")
    a.flags.writeable = False
    with pytest.raises(TypeError, match="expected a writable tensor, got a read-only one"):
        ext.add_to_diagonal(a, 1.0)


def test_device_constraint():
    # `device = "cpu"` takes any index: the message names no index of its own.
    with pytest.raises(TypeError, match="expected a tensor on cpu, got one on cuda:0"):
        ext.add_to_diagonal(ext.derived_raw(16, "float32", [2, 2], 2, 0), 1.0)


@pytest.mark.parametrize("value", [[[1.0, 0.0], [0.0, 1.0]], "eye", 3.0, None])
def test_non_tensors_are_type_errors(value):
    with pytest.raises(TypeError, match="^"+NOT_A_TENSOR):
        ext.add_to_diagonal(value, 1.0)


def test_every_field_kind_is_filled():
    a = np.arange(6, dtype="i2").reshape(2, 3)[:, ::-1]
    a.flags.writeable = False
    shape, strides, device, dtype, read_only, same_address = ext.derived_describe(a)
    assert (shape, strides, device, dtype, read_only, same_address) == ([2, 3], [3, -1], "cpu:0", "int16", True, True)


# --- the #[pyclass] pattern ---------------------------------------------------------


def test_a_pyclass_extending_dlpack_tensor(drops):
    s = ext.Spectrum(5)
    assert isinstance(s, ext.DLPackTensor)
    assert s.total() == 10.0, "its own methods read the shared value"
    a = np.from_dlpack(s)
    old_torch_refuses_read_only(torch, s)
    t = torch.from_dlpack(s)
    assert a.ctypes.data == t.data_ptr() == s.data_ptr
    assert s.read_only and not a.flags.writeable, "shared with Rust methods: read-only"
    assert s.shape == (5,) and repr(s).startswith("DLPackTensor(shape=(5,)")
    del s, a
    assert drops.dropped == 0
    del t
    assert drops.dropped == 1


def test_a_pyclass_opting_into_writable_sharing():
    s = ext.Spectrum(3, writable=True)
    a = np.from_dlpack(s)
    assert a.flags.writeable
    a[0] = 100.0
    assert s.total() == 103.0, "Rust sees the consumer's write"


def test_a_hand_written_from_dlpack_is_an_argument_through_impl_from_pyobject():
    a = np.arange(3.0)
    assert ext.hand_vector_head(a) == (3, 0.0)
    assert ext.hand_vector_head(torch.zeros(0, dtype=torch.float64)) == (0, None)
    with pytest.raises(TypeError, match="^expected a float64 tensor, got float32"):
        ext.hand_vector_head(np.ones(2, dtype="f4"))
    with pytest.raises(TypeError, match="^expected a 1-dimensional tensor, got 2 dimensions"):
        ext.hand_vector_head(np.ones((2, 2)))
    with pytest.raises(TypeError, match="^" + NOT_A_TENSOR + ", got str"):
        ext.hand_vector_head("abc")
