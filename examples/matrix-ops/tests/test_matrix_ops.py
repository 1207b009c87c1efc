"""FromDLPack arguments from NumPy, PyTorch and JAX; clear errors for the rest."""

import numpy as np
import pytest
import torch

import matrix_ops


def test_trace_from_every_framework():
    import jax.numpy as jnp

    assert matrix_ops.trace(np.eye(3, dtype="f4") * 2) == 6.0
    assert matrix_ops.trace(torch.eye(4)) == 4.0
    assert matrix_ops.trace(jnp.eye(2, dtype=jnp.float32)) == 2.0


def test_matvec_returns_a_tensor_and_takes_strided_vectors():
    m = np.arange(6, dtype="f4").reshape(2, 3)
    v = torch.tensor([1.0, 0.0, 2.0, 9.0])[:3]
    out = np.from_dlpack(matrix_ops.matvec(m, v))
    np.testing.assert_array_equal(out, m @ v.numpy())
    reversed_v = np.array([2.0, 0.0, 1.0], dtype="f4")[::-1]
    np.testing.assert_array_equal(np.from_dlpack(matrix_ops.matvec(m, reversed_v)), m @ reversed_v)


def test_scale_in_place():
    t = torch.ones(2, 2)
    matrix_ops.scale_(t, 3.0)
    assert t.tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: matrix_ops.trace(np.eye(2)), "expected a float32 tensor, got float64"),
        (lambda: matrix_ops.trace(np.ones(3, dtype="f4")), "^expected a 2-dimensional tensor, got 1 dimension\nwhile processing 'm'$"),
        (lambda: matrix_ops.trace(torch.ones(3, 2).T), "expected a contiguous"),
    ],
)
def test_tensors_that_do_not_fit_are_type_errors(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_values_that_do_not_agree_are_value_errors():
    with pytest.raises(ValueError, match="3 columns but the vector has 2"):
        matrix_ops.matvec(np.ones((2, 3), "f4"), np.ones(2, "f4"))


def test_read_only_input_cannot_be_scaled():
    a = np.ones((2, 2), dtype="f4")
    a.flags.writeable = False
    with pytest.raises(TypeError, match="expected a writable tensor, got a read-only one"):
        matrix_ops.scale_(a, 2.0)


def test_non_tensors_are_type_errors():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        matrix_ops.trace([[1.0, 0.0], [0.0, 1.0]])


def test_the_argument_at_fault_is_named_in_a_note():
    # PyO3 adds the argument's name to every extraction error as a note
    # (Python 3.11+), which the traceback prints under the message.
    with pytest.raises(TypeError) as excinfo:
        matrix_ops.matvec(np.ones((2, 3), "f4"), np.ones((3, 1), "f4"))
    assert str(excinfo.value) == "expected a 1-dimensional tensor, got 2 dimensions"
    assert excinfo.value.__notes__ == ["while processing 'v'"]
