"""rust-numpy's simple, linalg and parallel examples, ported to typed tensor arguments: the same
calls with NumPy, and with torch and JAX values too; wrong dtypes and ranks are a TypeError that
names the argument, raised while PyO3 converts it."""

import numpy as np
import pytest
import torch

import typed_args


def notes(err: pytest.ExceptionInfo[BaseException]) -> list[str]:
    return getattr(err.value, "__notes__", [])


def test_axpy_takes_every_framework_and_returns_a_numpy_array():
    import jax.numpy as jnp

    x = np.arange(6.0).reshape(2, 3)
    z = typed_args.axpy(3.0, x, np.ones((2, 3)))
    assert type(z) is np.ndarray and z.dtype == np.float64
    np.testing.assert_array_equal(z, 3.0 * x + 1.0)
    t = torch.ones(4, dtype=torch.float64)
    np.testing.assert_array_equal(typed_args.axpy(2.0, t, np.arange(4.0)), 2.0 + np.arange(4.0))
    j = jnp.arange(4.0)
    if j.dtype == jnp.float64:  # JAX with x64 enabled
        np.testing.assert_array_equal(typed_args.axpy(1.0, j, j), 2 * np.arange(4.0))
    # Any strides: a transposed and a reversed view.
    np.testing.assert_array_equal(typed_args.axpy(1.0, x.T, x.T[::-1]), x.T + x.T[::-1])


def test_mult_writes_the_callers_memory():
    a = np.arange(4.0).reshape(2, 2)
    typed_args.mult(3.0, a)
    np.testing.assert_array_equal(a, 3.0 * np.arange(4.0).reshape(2, 2))
    t = torch.ones(3, dtype=torch.float64)
    typed_args.mult(2.0, t)
    assert t.tolist() == [2.0, 2.0, 2.0]


def test_mult_refuses_a_read_only_array_naming_it():
    a = np.ones(2)
    a.flags.writeable = False
    with pytest.raises(TypeError) as err:
        typed_args.mult(2.0, a)
    assert str(err.value) == "expected a writable tensor, got a read-only one"
    assert notes(err) == ["while processing 'x'"]


def test_conj_of_complex128():
    z = np.array([1 + 2j, -3j])
    np.testing.assert_array_equal(typed_args.conj(z), np.conj(z))
    np.testing.assert_array_equal(
        typed_args.conj(torch.tensor([1 - 1j], dtype=torch.complex128)), [1 + 1j])
    with pytest.raises(TypeError) as err:
        typed_args.conj(torch.tensor([1 - 1j]))  # torch's default: complex64
    assert str(err.value) == "expected a complex128 tensor, got complex64"


def test_a_wrong_dtype_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError) as err:
        typed_args.axpy(1.0, np.ones(2), np.ones(2, dtype=np.float32))
    assert str(err.value) == "expected a float64 tensor, got float32"
    assert notes(err) == ["while processing 'y'"]


def test_a_wrong_rank_is_a_type_error_with_the_crates_message():
    with pytest.raises(TypeError) as err:
        typed_args.inv(np.ones(3))
    assert str(err.value) == "expected a 2-dimensional tensor, got 1 dimension"
    assert notes(err) == ["while processing 'x'"]
    with pytest.raises(TypeError) as err:
        typed_args.rows_dot(np.eye(2), np.eye(2))
    assert str(err.value) == "expected a 1-dimensional tensor, got 2 dimensions"
    assert notes(err) == ["while processing 'y'"]


def test_head_and_extract():
    # rust-numpy's head: the first element of an array of Python objects, which DLPack cannot
    # carry (the array stays a Python object); numbers work too.
    assert typed_args.head(np.array(["first", None, 42], dtype=object)) == "first"
    assert typed_args.head(np.array([4.0, 5.0])) == 4.0
    with pytest.raises(IndexError):
        typed_args.head(np.zeros(0))
    assert typed_args.extract({"x": np.arange(4.0)}) == 6.0
    with pytest.raises(KeyError):
        typed_args.extract({})


def test_an_object_array_names_its_dtype_and_the_way_out():
    with pytest.raises(TypeError) as err:
        typed_args.axpy(1.0, np.array([1.0, None], dtype=object), np.ones(2))
    assert str(err.value).startswith(
        "expected a tensor, got a NumPy array of dtype object, which DLPack cannot carry: ")
    assert notes(err) == ["while processing 'x'"]


def test_timedeltas_are_read_as_int64_counts_of_their_unit():
    seconds = np.array([10, 20, 30], dtype="timedelta64[s]")
    minutes = np.array([1, 2, 3], dtype="timedelta64[m]")
    typed_args.add_minutes_to_seconds(seconds, minutes)
    assert seconds.tolist() == [np.timedelta64(70, "s"), np.timedelta64(140, "s"),
                                np.timedelta64(210, "s")]
    # Another unit is refused, no count converted or written.
    with pytest.raises(TypeError) as err:
        typed_args.add_minutes_to_seconds(minutes, seconds)
    assert str(err.value) == "expected a NumPy timedelta64[s] array, got one of dtype timedelta64[m]"
    with pytest.raises(TypeError) as err:
        typed_args.add_minutes_to_seconds(seconds, np.array([1], dtype="datetime64[m]"))
    assert str(err.value) == "expected a NumPy timedelta64[m] array, got one of dtype datetime64[m]"
    with pytest.raises(TypeError) as err:
        typed_args.add_minutes_to_seconds(seconds.view("int64"), minutes)
    assert str(err.value) == "expected a NumPy timedelta64[s] array, got one of dtype int64"
    frozen = np.array([1], dtype="timedelta64[s]")
    frozen.flags.writeable = False
    with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one$"):
        typed_args.add_minutes_to_seconds(frozen, minutes[:1])
    assert minutes.tolist() == [np.timedelta64(1, "m"), np.timedelta64(2, "m"),
                                np.timedelta64(3, "m")]


def test_polymorphic_add_keeps_the_dtype_when_both_agree():
    z = typed_args.polymorphic_add(np.array([1, 2, 3]), np.array([3, 3, 3]))
    assert z.dtype == np.int64 and z.tolist() == [4, 5, 6]
    z = typed_args.polymorphic_add(np.array([1.0, 2.0]), np.array([0.5, 0.5]))
    assert z.dtype == np.float64 and z.tolist() == [1.5, 2.5]
    for x, y in [(np.array([1.0, 2.0]), np.array([3, 3])), (np.array([3, 3]), np.array([1.0, 2.0]))]:
        z = typed_args.polymorphic_add(x, y)
        assert z.dtype == np.float64 and z.tolist() == [4.0, 5.0]
    # torch tensors, and a raw capsule, take the same variants.
    z = typed_args.polymorphic_add(torch.tensor([1, 2]), np.arange(2).__dlpack__())
    assert z.dtype == np.int64 and z.tolist() == [1, 3]
    with pytest.raises(TypeError):
        typed_args.polymorphic_add(np.array([1j]), np.ones(1))


def test_inv_of_every_framework():
    import jax.numpy as jnp

    m = np.array([[4.0, 7.0], [2.0, 6.0]])
    np.testing.assert_allclose(typed_args.inv(m), np.linalg.inv(m))
    np.testing.assert_allclose(typed_args.inv(torch.from_numpy(m.T).T), np.linalg.inv(m))
    assert typed_args.inv(np.eye(3)).tolist() == np.eye(3).tolist()
    with pytest.raises(TypeError) as err:
        typed_args.inv(jnp.eye(2))  # JAX's default float32
    assert str(err.value) == "expected a float64 tensor, got float32"
    with pytest.raises(ValueError, match="^inv: the matrix is singular$"):
        typed_args.inv(np.ones((2, 2)))
    with pytest.raises(ValueError, match="^inv: expected a square matrix, got 2x3$"):
        typed_args.inv(np.ones((2, 3)))


def test_rows_dot_runs_in_parallel_on_any_producer():
    x = np.arange(12.0).reshape(4, 3)
    y = np.array([1.0, 0.5, -1.0])
    np.testing.assert_allclose(typed_args.rows_dot(x, y), x @ y)
    np.testing.assert_allclose(typed_args.rows_dot(torch.from_numpy(x), y[::-1].copy()), x @ y[::-1])
    with pytest.raises(ValueError, match="^rows_dot: x has 3 columns but y has 2 entries$"):
        typed_args.rows_dot(x, np.ones(2))


def test_derived_types_stay_for_structs_of_several_fields():
    import jax.numpy as jnp

    assert typed_args.shape_of(np.ones((2, 3), dtype=np.float32)) == ((2, 3), 1.0)
    assert typed_args.shape_of(jnp.ones((3, 2))) == ((3, 2), 1.0)
    with pytest.raises(TypeError) as err:  # a derive's constraint: TypeError, as a typed argument's
        typed_args.shape_of(np.ones((2, 3)))
    assert str(err.value) == "expected a float32 tensor, got float64"
    assert notes(err) == ["while processing 'image'"]
    z = typed_args.zeros(5)
    assert type(z).__name__ == "DLPackTensor"
    assert np.from_dlpack(z).ctypes.data == z.data_ptr == torch.from_dlpack(z).data_ptr()
