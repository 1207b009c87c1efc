"""Type stub of the image_buffer extension (maturin ships it in the wheel, with py.typed).

The DLPackTensor class below (with its imports) is pyo3_dlpack::DLPackTensor::PYI, pasted as is
(tests/test_image_buffer.py checks that it is current).
"""

__all__ = ["DLPackTensor", "gradient", "sine"]

from typing import Any, SupportsIndex

from typing_extensions import CapsuleType, Self, disjoint_base

@disjoint_base
class DLPackTensor:
    """A tensor exported from Rust, shared with every DLPack consumer without a copy."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Extents, as a tuple of ints."""
    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements, as a tuple of ints."""
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
    @property
    def dtype(self) -> str:
        """Element type name, such as "float32" or "bfloat16"."""
    @property
    def device(self) -> str:
        """Device, such as "cpu:0" or "cuda:1"."""
    @property
    def read_only(self) -> bool:
        """Whether consumers get a read-only tensor."""
    @property
    def data_ptr(self) -> int:
        """Address of the first element."""
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """A DLPack capsule ("dltensor" or "dltensor_versioned") sharing the memory."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """(device_type, device_id) as DLPack codes, e.g. (1, 0) for the CPU."""
    __dlpack_c_exchange_api__: object
    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        """The CUDA array interface (version 3) of a CUDA tensor; AttributeError otherwise."""
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """numpy.asarray(t) where the buffer protocol cannot serve it: a numpy.ndarray over the
        host memory (zero-copy unless a copy or another dtype is asked for); BufferError for
        device memory and for dtypes NumPy lacks (bfloat16, float8, ...)."""
    def __reduce_ex__(self, protocol: SupportsIndex, /) -> str | tuple[Any, ...]:
        """Pickling, every protocol (protocol 5: the bytes as a pickle.PickleBuffer, out of
        band when the pickler takes buffers); the unpickled tensor has the same dtype, shape,
        device and read-only flag, in any process that can import the extension."""
    def __reduce__(self) -> tuple[Any, ...]:
        """As __reduce_ex__(2)."""
    def __copy__(self) -> Self:
        """copy.copy(t): an independent copy, as NumPy's."""
    def __deepcopy__(self, memo: Any, /) -> Self:
        """copy.deepcopy(t): as copy.copy(t)."""
    def __jax_array__(self) -> Any:
        """jax.numpy.asarray(t): the tensor as a jax.Array, zero-copy where JAX does not copy."""
    def __buffer__(self, flags: int, /) -> memoryview:
        """The buffer protocol (host tensors): memoryview(t), bytes(t), numpy.asarray(t).

        Declared on every Python version, as typeshed declares it (Python shows the method from
        3.12, PEP 688; earlier versions have the protocol without the method)."""

def gradient(height: int, width: int, channels_first: bool = False) -> DLPackTensor:
    """A horizontal red ramp, a vertical green ramp and a constant blue."""

def sine(n: int, cycles: float) -> DLPackTensor:
    """`n` samples of a sine wave with `cycles` periods, as float32."""
