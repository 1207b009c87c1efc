"""
The Python module: every function of the three ports.
"""

from collections.abc import Callable
from jax import Array
from numpy import complex128, float32, float64, generic, int64, ndarray
from numpy.typing import DTypeLike, NDArray
from torch import Tensor
from types import CapsuleType
from typing import Any, Final, SupportsFloat, SupportsIndex
from typing_extensions import disjoint_base

__all__ = ["DLPackTensor", "add_minutes_to_seconds", "axpy", "conj", "extract", "head", "inv", "mult", "polymorphic_add", "rows_dot", "shape_of", "trace", "zeros"]

@disjoint_base
class DLPackTensor:
    """
    A tensor exported from Rust, shared with NumPy, PyTorch, JAX, CuPy and every
    other DLPack consumer without a copy.

    Pass it to `numpy.from_dlpack`, `torch.from_dlpack`, `jax.numpy.from_dlpack`,
    `cupy.from_dlpack` or any array-API library's `from_dlpack`: the array they
    return shares this tensor's memory. It can be imported any number of times;
    the memory lives until this object and every array made from it are gone.
    Arrays made from a read-only tensor are read-only.

    Attributes: `shape` and `strides` (tuples of ints, strides in elements),
    `ndim`, `dtype` (a name such as `"float32"`), `device` (such as `"cpu:0"`),
    `read_only`, and `data_ptr` (the address of the first element).

    Methods: `__dlpack__(*, stream=None, max_version=None, dl_device=None,
    copy=None)` and `__dlpack_device__()`, as the DLPack Python specification
    defines them.
    """
    __dlpack__: Final[Callable[..., CapsuleType]]
    """
    `__dlpack__(*, stream=None, max_version=None, dl_device=None,
    copy=None)`: exports the tensor as a DLPack capsule, as the DLPack
    Python specification defines it.
    """
    __dlpack_c_exchange_api__: Final[CapsuleType]
    """
    The DLPack C exchange API table of this type (DLPack 1.3): consumers
    such as tvm-ffi import `DLPackTensor`s through it without a Python call.
    """
    def __array__(self, /, dtype: DTypeLike | None = None, copy: bool | None = None) -> ndarray:
        """
        `numpy.asarray(t)` and `numpy.array(t)` where the buffer protocol
        does not serve them (NumPy asks it first): the host memory through
        `numpy.from_dlpack`, zero-copy unless a copy or another `dtype` is
        asked for. `BufferError` for memory the host cannot read (device
        memory: import it with that device's framework) and for dtypes NumPy
        lacks (bfloat16, float8, …), never a 0-d object array.
        """
    def __copy__(self, /) -> DLPackTensor:
        """
        `copy.copy(t)`: an independent copy (dtype, shape, device and
        read-only flag kept), as NumPy's.
        """
    @property
    def __cuda_array_interface__(self, /) -> dict:
        """
        The interface dict of a CUDA tensor (version 3, for Numba and other
        consumers that read only that); `AttributeError` on other devices.
        """
    def __deepcopy__(self, /, memo: dict) -> DLPackTensor:
        """
        `copy.deepcopy(t)`: as `copy.copy(t)`.
        """
    def __dlpack_device__(self, /) -> tuple[int, int]:
        """
        `(device_type, device_id)` as DLPack codes, e.g. `(1, 0)` for the CPU.
        """
    def __jax_array__(self, /) -> Array:
        """
        `jax.numpy.asarray(t)` and every `jax.numpy` function given `t`: the
        tensor as a `jax.Array`, as `Native::jax` makes it (the array
        `jax.dlpack.from_dlpack` returns), zero-copy
        where JAX does not copy (64-byte-aligned host buffers), read-only
        tensors included (JAX arrays are immutable).
        """
    def __reduce__(self, /) -> tuple:
        """
        As `__reduce_ex__(2)`.
        """
    def __reduce_ex__(self, /, protocol: SupportsIndex) -> str | tuple:
        """
        Pickling, every protocol: the dtype, shape, device and read-only
        flag, and the bytes (protocol 5: a `pickle.PickleBuffer` over this
        tensor's memory, out of band when the pickler takes buffers). The
        unpickled tensor is a `DLPackTensor` of its own memory (an aligned
        out-of-band buffer kept without a copy), in any process that can
        import this module. Device tensors travel as host copies and are
        restored on their device.
        """
    def __repr__(self, /) -> str: ...
    @classmethod
    def _pyo3_dlpack_0_4_restore_v1(cls, /, state: Any) -> Any:
        """
        Unpickling's entry point where pickle finds this class by its name
        (after `add_to_module`): the tensor a pickled state describes.
        """
    @property
    def data_ptr(self, /) -> int:
        """
        Address of the first element, to compare with a consumer's (zero-copy checks).
        """
    @property
    def device(self, /) -> str:
        """
        Device, such as `"cpu:0"` or `"cuda:1"`.
        """
    @property
    def dtype(self, /) -> str:
        """
        Element type name, such as `"float32"` or `"bfloat16"`.
        """
    @property
    def ndim(self, /) -> int:
        """
        Number of dimensions.
        """
    @property
    def read_only(self, /) -> bool:
        """
        Whether consumers get a read-only tensor.
        """
    @property
    def shape(self, /) -> tuple:
        """
        Extents, as a tuple of ints.
        """
    @property
    def strides(self, /) -> tuple:
        """
        Strides in elements, as a tuple of ints.
        """

def add_minutes_to_seconds(x: Any, y: Any) -> None:
    """
    Adds minutes to seconds in place: `x` is a `timedelta64[s]` array, `y`
    a `timedelta64[m]` one (rust-numpy's `Timedelta<units::Seconds>` and
    `Timedelta<units::Minutes>`). DLPack has no time dtype: each is read as
    its int64 counts, its unit checked (another unit is a `TypeError`).
    """

def axpy(a: SupportsFloat | SupportsIndex, x: NDArray[float64] | Tensor | Array, y: NDArray[float64] | Tensor | Array) -> NDArray[generic] | Tensor | Array:
    """
    `a * x + y` as a new NumPy array (any producer, float64, any rank).
    """

def conj(x: NDArray[complex128] | Tensor | Array) -> NDArray[generic] | Tensor | Array:
    """
    The complex conjugate, through the re-exported `num_complex`.
    """

def extract(d: dict) -> float:
    """
    The sum of the float64 vector `d["x"]`: a typed tensor extracted from a
    dictionary, as any PyO3 value is.
    """

def head(x: Any) -> Any:
    """
    The first element of an array of Python objects (rust-numpy's `head`,
    `head(np.array(["first", None, 42]))`). DLPack carries numbers only, so an
    object array is no tensor: it stays a Python object, indexed as one.
    """

def inv(x: NDArray[float64] | Tensor | Array) -> NDArray[generic] | Tensor | Array:
    """
    The inverse of a square float64 matrix, as a NumPy array; a singular or
    non-square matrix is a `ValueError`.
    """

def mult(a: SupportsFloat | SupportsIndex, x: NDArray[float64] | Tensor) -> None:
    """
    Multiplies `x` by `a` in place (the caller's NumPy array or torch tensor).
    """

def polymorphic_add(x: NDArray[float64] | Tensor | Array | NDArray[int64], y: NDArray[float64] | Tensor | Array | NDArray[int64]) -> Any:
    """
    `x + y` in the arguments' dtype when they agree (int64 + int64 stays
    int64), as float64 when they differ (the int64 one converted).
    """

def rows_dot(x: NDArray[float64] | Tensor | Array, y: NDArray[float64] | Tensor | Array) -> NDArray[generic] | Tensor | Array:
    """
    `x @ y`, one row per task, without holding the interpreter: the typed
    views are plain `ndarray` views, `Send` and `Sync`.
    """

def shape_of(image: NDArray[float32] | Tensor | Array) -> tuple[tuple[int, int], float]:
    """
    The shape of a float32 image and its mean (a derived argument).
    """

def trace(m: NDArray[float64] | Tensor | Array) -> float:
    """
    The trace of a square float64 matrix.
    """

def zeros(n: SupportsIndex) -> DLPackTensor:
    """
    `n` float64 zeros, as a `DLPackTensor` any framework imports.
    """
