"""A user's module over examples/typed-args, whose stub is generated from the extension
(`maturin generate-stubs`, feature experimental-inspect): calls with NumPy, torch and JAX values
type-check under mypy --strict and pyright with no error (tests/typing/typed_stubs.sh), and run."""

import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import torch
from typing_extensions import assert_type

import typed_args
from typed_args import DLPackTensor


def main() -> None:
    x: npt.NDArray[np.float64] = np.arange(4.0)
    t = torch.ones(4, dtype=torch.float64)
    j = jnp.ones((2, 3))
    # Typed arguments: NumPy arrays of the element type, torch tensors, JAX arrays.
    z = typed_args.axpy(2.0, x, t)
    assert isinstance(z, np.ndarray) and z.tolist() == [1.0, 3.0, 5.0, 7.0]
    typed_args.mult(3.0, t)
    typed_args.mult(3.0, x)
    assert typed_args.trace(np.eye(3)) == 3.0
    assert typed_args.head(np.array(["first", None], dtype=object)) == "first"
    assert typed_args.rows_dot(np.eye(2), np.arange(2.0)).tolist() == [0.0, 1.0]
    assert typed_args.conj(np.array([1j])).tolist() == [-1j]
    seconds = np.array([1, 2], dtype="timedelta64[s]")
    typed_args.add_minutes_to_seconds(seconds, np.array([1, 1], dtype="timedelta64[m]"))
    # A derived argument (float32, as JAX's default), and an enum of typed variants.
    shape, mean = typed_args.shape_of(j)
    assert_type(shape, tuple[int, int])
    assert shape == (2, 3) and mean == 1.0
    assert typed_args.polymorphic_add(np.arange(2), np.ones(2)).tolist() == [1.0, 2.0]
    # A derived export is a DLPackTensor, which the frameworks import.
    zeros = typed_args.zeros(3)
    assert_type(zeros, DLPackTensor)
    assert np.from_dlpack(zeros).tolist() == [0.0, 0.0, 0.0]
    assert torch.from_dlpack(zeros).data_ptr() == zeros.data_ptr
    # Its methods are typed in the generated stub too (no `Any`).
    assert_type(zeros.__array__(), np.ndarray)
    assert zeros.__array__(np.float64).dtype == np.float64
    assert jnp.sum(zeros.__jax_array__()) == 0.0
    # `__dlpack__` called directly, as a consumer written in Python calls it.
    capsule = zeros.__dlpack__(max_version=(1, 0))
    assert torch.from_dlpack(capsule).data_ptr() == zeros.data_ptr
    assert zeros.__dlpack__() is not None


if __name__ == "__main__":
    main()
