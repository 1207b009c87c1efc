"""TensorFlow, paddle and mlx, both ways: our tensors into each framework and the framework's
tensors into Rust, with exact values and drop counts. Each part skips without its framework
(`make test-matrix` runs this file in a venv per framework: tests/matrix/).

What each framework does differently is encoded here with its version, never skipped:
- TensorFlow 2.21 imports a bare legacy capsule only (`tf.experimental.dlpack.from_dlpack`),
  and aborts the whole process (`Check failed: IsAligned()`) on an import that is not 64-byte
  aligned, so only `AlignedBuffer`-backed exports are given to it here (a `Vec`-backed export
  must never go to TensorFlow).
- paddle 3.3.1 imports zero-copy but never calls the producer's deleter (every import of our
  tensors leaks its value), reports `(1, None)` as its CPU `__dlpack_device__`, and reads the
  DLPack uint16 type as its own `bfloat16` (paddle's old bfloat16 storage type). Its tensors
  reach Rust through its DLPack 1.3 C exchange table; where that cannot be used, its
  `(1, None)` is refused.
- mlx 0.32 copies every CPU import (`copy=False` is refused) and frees the producer at once."""

import ctypes
import gc

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import numpy_arange

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def version(module):
    return tuple(int(part) for part in module.__version__.split("+")[0].split(".")[:3])


def expected(dtype, n):
    return numpy_arange(dtype, n).tolist()


def read_back(tensor, dtype):
    """The elements as Rust reads them (a bool tensor is viewed as u8)."""
    if dtype == "bool":
        return [bool(v) for v in ext.to_list(tensor, "uint8")]
    if dtype.startswith("complex"):
        return [complex(*v) for v in ext.to_list(tensor, dtype)]
    return ext.to_list(tensor, dtype)


# --- TensorFlow ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorflow_imports_aligned_exports_zero_copy_and_frees_them_once(tf, dtype, drops):
    x = ext.arange(dtype, 7, "aligned")
    pointer = x.data_ptr
    t = tf.experimental.dlpack.from_dlpack(x.__dlpack__())
    assert t.numpy().tolist() == expected(dtype, 7)
    # TensorFlow's own export of the same tensor points at our memory.
    assert ext.describe(tf.experimental.dlpack.to_dlpack(t))["data_ptr"] == pointer
    del x
    assert drops.dropped == 0, "TensorFlow's tensor keeps the value alive"
    del t
    assert drops.dropped == 1


def test_tensorflow_shapes_from_aligned_exports(tf, drops):
    for shape in [(), (0,), (2, 3, 4)]:
        source = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
        t = tf.experimental.dlpack.from_dlpack(
            ext.from_bytes(source.tobytes(), "int32", list(shape)).__dlpack__()
        )
        assert t.shape == shape and (t.numpy() == source).all()
        del t
    assert drops.dropped == 3


def test_tensorflow_tensors_into_rust(tf):
    t = tf.constant([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]], dtype=tf.float64)
    capsule = tf.experimental.dlpack.to_dlpack(t)
    d = ext.describe(capsule)
    assert (d["shape"], d["dtype"], d["device"], d["version"]) == ((2, 3), "float64", (1, 0), None)
    assert ext.to_list(tf.experimental.dlpack.to_dlpack(t), "float64") == [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]
    for dtype in ["bool", "int8", "int32", "int64", "uint8", "float32", "complex128"]:
        source = tf.constant(numpy_arange(dtype, 5))
        assert read_back(tf.experimental.dlpack.to_dlpack(source), dtype) == expected(dtype, 5)


def test_tensorflow_tensors_through_rust_and_back_to_tensorflow(tf):
    t = tf.constant(np.arange(12, dtype="f4").reshape(3, 4))
    again = ext.reexport(tf.experimental.dlpack.to_dlpack(t))
    # TensorFlow's memory is 64-byte aligned, so handing it back is safe.
    assert again.data_ptr % 64 == 0
    back = tf.experimental.dlpack.from_dlpack(again.__dlpack__())
    assert back.numpy().tolist() == t.numpy().tolist()


# --- paddle --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paddle():
    return pytest.importorskip("paddle")


def paddle_calls_deleters(paddle):
    # paddle 3.3.1 never calls a foreign capsule's deleter; a later release is expected
    # to, and this guard then fails until checked again.
    return version(paddle) > (3, 3, 1)


@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_paddle_imports_zero_copy(paddle, dtype, drops):
    x = ext.arange(dtype, 7, "vec")
    y = paddle.from_dlpack(x)
    if dtype == "bfloat16":
        assert y.astype("float32").numpy().tolist() == list(range(7))
    elif dtype == "uint16":
        # paddle reads (kDLUInt, 16) as its bfloat16; the bits are ours.
        assert str(y.dtype) == "paddle.bfloat16"
        assert np.from_dlpack(x).tolist() == expected(dtype, 7)
    else:
        assert str(y.dtype) == f"paddle.{dtype}"
        assert y.numpy().tolist() == expected(dtype, 7)
    if dtype not in ("bool", "bfloat16", "uint16"):
        np.from_dlpack(x)[1] = 5
        assert y.numpy()[1] == 5, "paddle shares our memory"
    del x, y
    assert drops.dropped == (1 if paddle_calls_deleters(paddle) else 0)


def test_paddle_strided_exports_and_bare_capsules(paddle, drops):
    t = ext.from_bytes(np.arange(6, dtype="f4").tobytes(), "float32", [3, 2], strides=[1, 3])
    assert paddle.from_dlpack(t).numpy().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    y = paddle.utils.dlpack.from_dlpack(ext.arange("int32", 4).__dlpack__())
    assert y.numpy().tolist() == [0, 1, 2, 3]
    del t, y
    assert drops.dropped == (2 if paddle_calls_deleters(paddle) else 0)


def test_paddle_tensors_into_rust(paddle):
    a = paddle.arange(6, dtype="float32").reshape([2, 3])
    # paddle's CPU device id is None; the capsule's is 0.
    assert tuple(a.__dlpack_device__())[0] == 1
    d = ext.describe(a)
    assert (d["shape"], d["strides"], d["dtype"], d["device"]) == ((2, 3), (3, 1), "float32", (1, 0))
    assert d["writability"] == "Writable"
    assert ext.slice_values(a, "float32") == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ext.to_list(a.T, "float32") == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    b = paddle.arange(4, dtype="float64")
    ext.fill(b, 2.5)
    assert b.numpy().tolist() == [2.5] * 4, "a writable paddle tensor is written in place"
    for dtype in ["bool", "int8", "int64", "uint8", "float64", "complex64"]:
        source = paddle.to_tensor(numpy_arange(dtype, 5))
        assert read_back(source, dtype) == expected(dtype, 5)


def test_paddle_tensors_through_rust_and_back_to_paddle(paddle):
    a = paddle.arange(5, dtype="int64")
    back = paddle.from_dlpack(ext.reexport(a))
    assert back.numpy().tolist() == [0, 1, 2, 3, 4]
    assert ext.describe(back)["data_ptr"] == ext.describe(a)["data_ptr"]


def capsule_pointer(capsule, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def test_paddle_publishes_the_exchange_table_as_a_dlpack_1_3_capsule(paddle):
    # paddle 3.3.1 sets both names on `paddle.Tensor` (a heap type Python code can change:
    # paddle itself sets them with setattr): the 1.3 capsule, and tvm-ffi 0.1.0-0.1.4's
    # `__c_dlpack_exchange_api__`, the same table as a capsule too, or as an int only when a
    # tvm-ffi <= 0.1.3 is installed. Our import reads the 1.3 capsule first. A later release
    # is expected to drop the tvm-ffi name (paddle marks it for removal); this guard then
    # fails until checked again.
    tensor = paddle.Tensor
    assert type(paddle.arange(2)) is tensor
    assert tensor.__flags__ & (1 << 9), "a heap type"
    assert not tensor.__flags__ & (1 << 8), "not Py_TPFLAGS_IMMUTABLETYPE"
    api = tensor.__dict__["__dlpack_c_exchange_api__"]
    assert type(api).__name__ == "PyCapsule"
    table = capsule_pointer(api, b"dlpack_exchange_api")
    major, minor = (ctypes.c_uint32 * 2).from_address(table)
    assert (major, minor) == (1, 3)
    if version(paddle) <= (3, 3, 1):
        legacy = tensor.__dict__["__c_dlpack_exchange_api__"]
        if isinstance(legacy, int):
            assert legacy == table
        else:
            assert capsule_pointer(legacy, b"dlpack_exchange_api") == table
    else:
        assert "__c_dlpack_exchange_api__" not in tensor.__dict__


def test_paddle_tensors_are_imported_through_the_exchange_table(paddle, monkeypatch):
    calls = []

    def recording(name, fixed=None):
        original = getattr(paddle.Tensor, name)

        def method(self, *args, **kwargs):
            calls.append(name)
            return fixed if fixed is not None else original(self, *args, **kwargs)

        return method

    a = paddle.arange(6, dtype="float32")
    ext.describe(a)  # the type's table is looked up (and cached) once
    monkeypatch.setattr(paddle.Tensor, "__dlpack__", recording("__dlpack__"))
    monkeypatch.setattr(paddle.Tensor, "__dlpack_device__", recording("__dlpack_device__"))
    d = ext.describe(a)
    assert (d["version"], d["device"], d["data_ptr"]) == ((1, 3), (1, 0), a.data_ptr())
    assert ext.describe_borrowed(a)["data_ptr"] == a.data_ptr()
    assert ext.slice_values(a, "float32") == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    b = paddle.arange(4, dtype="float64")
    ext.fill(b, 1.5)
    assert b.numpy().tolist() == [1.5] * 4
    assert calls == [], "no Python call: paddle's table exports the tensor"
    # The recording sees our Python path: options the table cannot honour ask paddle itself
    # (given a device id, see the next test).
    monkeypatch.setattr(
        paddle.Tensor, "__dlpack_device__", recording("__dlpack_device__", fixed=(1, 0))
    )
    assert ext.import_with(a, copy=False)["data_ptr"] == a.data_ptr()
    assert calls == ["__dlpack_device__", "__dlpack__"]


def test_paddle_tensors_are_imported_through_dlpack_where_the_table_cannot_be_used(paddle):
    # paddle 3.3.1's CPU `__dlpack_device__` is `(kDLCPU, None)`, which NumPy reads as CPU 0
    # (`from_dlpack(x, copy=False)`, `device="cpu"`), and so do we: options the table cannot
    # honour (`copy`, `dl_device`, a stream) and a subclass overriding `__dlpack__` take the
    # producer's `__dlpack__`. A later release is expected to give the device id; the first
    # assertion then fails until checked again.
    a = paddle.arange(3, dtype="float32")
    assert tuple(a.__dlpack_device__())[1] is None

    class Own(paddle.Tensor):
        def __dlpack__(self, *args, **kwargs):
            return super().__dlpack__(*args, **kwargs)

    class Plain(paddle.Tensor):
        pass

    assert ext.describe(Plain(a))["data_ptr"] == a.data_ptr(), "through paddle's table"
    assert ext.import_with(a, copy=False)["data_ptr"] == a.data_ptr()
    assert ext.import_with(a, dl_device=(1, 0))["device"] == (1, 0)
    assert ext.describe(Own(a))["data_ptr"] == a.data_ptr()
    assert ext.to_list(Own(a), "float32") == [0.0, 1.0, 2.0]


# --- mlx -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_mlx_imports_a_copy_and_frees_our_value_at_once(mx, dtype, drops):
    y = mx.from_dlpack(ext.arange(dtype, 7, "vec"))
    assert drops.dropped == 1, "mlx copies CPU imports and frees the producer at once"
    if dtype == "bfloat16":
        assert np.array(y.astype(mx.float32)).tolist() == list(range(7))
        return
    # mlx has no 64-bit floats on its CPU path: float64 and complex128 become 32-bit.
    narrowed = {"float64": "float32", "complex128": "complex64"}.get(dtype, dtype)
    assert y.dtype == getattr(mx, "bool_" if narrowed == "bool" else narrowed)
    assert np.array(y).tolist() == expected(dtype, 7)


def test_mlx_refuses_a_zero_copy_cpu_import(mx, drops):
    with pytest.raises(ValueError, match="without a copy"):
        mx.from_dlpack(ext.arange("float32", 3), copy=False)
    assert drops.dropped == 1


def test_mlx_keeps_strides(mx):
    t = ext.from_bytes(np.arange(6, dtype="f4").tobytes(), "float32", [3, 2], strides=[1, 3])
    assert np.array(mx.from_dlpack(t)).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_mlx_arrays_into_rust(mx):
    a = mx.arange(6, dtype=mx.float32).reshape(2, 3)
    d = ext.describe(a)
    assert (d["shape"], d["strides"], d["dtype"], d["device"]) == ((2, 3), (3, 1), "float32", (1, 0))
    # mlx exports legacy capsules, which cannot say whether the memory may be written.
    assert (d["version"], d["writability"]) == (None, "Unknown")
    assert ext.slice_values(a, "float32") == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ext.to_list(a.T, "float32") == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    for dtype in ["bool", "int8", "int64", "uint16", "float16", "complex64"]:
        source = mx.array(numpy_arange(dtype, 5))
        assert read_back(source, dtype) == expected(dtype, 5)
    # Unknown writability: no mutable view.
    with pytest.raises(ValueError, match="cannot say whether it may be written"):
        ext.fill(mx.array(np.zeros(3, dtype="u1")), 1.0, "uint8")


def test_mlx_arrays_through_rust_and_back_to_mlx(mx):
    a = mx.arange(4, dtype=mx.int32)
    assert np.array(mx.from_dlpack(ext.reexport(a))).tolist() == [0, 1, 2, 3]
