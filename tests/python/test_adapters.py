"""The adapters to safetensors, nalgebra and image (features of pyo3-dlpack):
zero-copy exports (pointer identity), drop counts, exact values and errors."""

import gc
import json
import struct

import numpy as np
import pytest
import torch

import dlpack_testext as ext
from conftest import old_torch_refuses_read_only, version_of


def write_safetensors(path, entries, metadata=None, align=64):
    """Writes a safetensors file by hand: the 8-byte little-endian header
    length, the JSON header (padded with spaces so that the data starts at a
    multiple of `align` bytes), then each tensor's bytes. `entries` maps a
    name to (dtype, shape, chunks), chunks being an iterable of bytes-like
    pieces. Returns the offset of the data section and each tensor's
    (begin, end) offsets in it."""
    entries = {name: (dtype, shape, list(chunks)) for name, (dtype, shape, chunks) in entries.items()}
    header, offset, offsets = {}, 0, {}
    for name, (dtype, shape, chunks) in entries.items():
        size = sum(memoryview(c).nbytes for c in chunks)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offsets[name] = (offset, offset + size)
        offset += size
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % align)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, chunks in entries.values():
            for chunk in chunks:
                f.write(chunk)
    return 8 + len(text), offsets


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def mapped(path):
    with open("/proc/self/maps") as f:
        return str(path) in f.read()


BIG = 26_214_400  # int32 elements: 100 MiB


def big_chunks(chunk=1 << 20):
    """`arange(BIG)` as int32, written a chunk at a time (never 100 MiB in this process)."""
    for start in range(0, BIG, chunk):
        yield np.arange(start, min(start + chunk, BIG), dtype=np.int32).tobytes()


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("safetensors") / "model.safetensors"
    small = np.array([[0.5, -1.25], [3.0, 1e-3]], dtype=np.float32)
    data_start, offsets = write_safetensors(
        path,
        {"big": ("I32", [BIG // 1024, 1024], big_chunks()), "small": ("F32", [2, 2], [small.tobytes()])},
        metadata={"format": "pt"},
    )
    return path, data_start, offsets


def test_a_100_mib_safetensors_file_reaches_torch_and_numpy_with_no_byte_copied(big_file):
    path, data_start, offsets = big_file
    assert path.stat().st_size > 100 * 2**20
    # Warm up what a first import allocates once (torch's and NumPy's own caches).
    torch.from_dlpack(ext.nalgebra_matrix(1, 1)), np.from_dlpack(ext.nalgebra_matrix(1, 1))
    gc.collect()
    before = rss_bytes()
    weights = ext.safetensors_open(path)
    old_torch_refuses_read_only(torch, weights.tensor("big"))
    t = torch.from_dlpack(weights.tensor("big"))
    a = np.from_dlpack(weights.tensor("big"))
    grown = rss_bytes() - before
    assert grown < 2**20, f"RSS grew by {grown} bytes"

    expected = weights.base_address() + data_start + offsets["big"][0]
    assert t.data_ptr() == expected
    assert a.ctypes.data == expected
    assert (t.shape, t.dtype, a.shape, a.dtype) == ((BIG // 1024, 1024), torch.int32, (BIG // 1024, 1024), np.int32)
    assert not a.flags.writeable
    # Exact values, read from the map (a few pages).
    assert (int(t[0, 0]), int(t[1234, 567]), int(t[-1, -1])) == (0, 1234 * 1024 + 567, BIG - 1)
    assert int(a[25_000, 17]) == 25_000 * 1024 + 17
    assert weights.metadata() == [("format", "pt")]
    assert sorted(weights.names()) == ["big", "small"]
    assert np.from_dlpack(weights.tensor("small")).tolist() == [[0.5, -1.25], [3.0, np.float32(1e-3)]]

    # The map lives as long as any view: the handle and the NumPy array go first.
    del weights, a
    gc.collect()
    assert mapped(path)
    assert int(t[-1, -1]) == BIG - 1
    del t
    gc.collect()
    assert not mapped(path)


def test_jax_reads_the_same_weights(big_file):
    jnp = pytest.importorskip("jax.numpy")
    path, data_start, offsets = big_file
    weights = ext.safetensors_open(path)
    # JAX asks for legacy capsules, which cannot say read-only: refused, as NumPy refuses.
    with pytest.raises(BufferError, match="^the tensor is read-only and the legacy"):
        jnp.from_dlpack(weights.tensor("small"))
    # Native::jax hands it over (JAX's arrays are immutable), with no copy: 64-byte aligned.
    big = weights.jax("big")
    assert isinstance(big, jnp.ndarray)
    assert big.unsafe_buffer_pointer() == weights.base_address() + data_start + offsets["big"][0]
    assert int(big[-1, -1]) == BIG - 1
    assert weights.jax("small").tolist() == [[0.5, -1.25], [3.0, float(np.float32(1e-3))]]


@pytest.mark.parametrize("how", ["read", "counted"])
def test_files_read_into_memory_give_the_same_tensors(big_file, how, tmp_path):
    path = tmp_path / "small.safetensors"
    data_start, offsets = write_safetensors(path, {"v": ("I16", [3], [np.array([1, -2, 3], np.int16).tobytes()])})
    weights = ext.safetensors_open(path, how=how)
    old_torch_refuses_read_only(torch, weights.tensor("v"))
    t = torch.from_dlpack(weights.tensor("v"))
    assert t.tolist() == [1, -2, 3]
    assert t.data_ptr() == weights.base_address() + data_start
    if how == "read":
        assert weights.base_address() % 64 == 0


def test_the_files_bytes_are_dropped_once_when_the_last_consumer_lets_go(tmp_path, drops):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"w": ("F64", [2], [np.array([2.5, -1.0]).tobytes()])})
    weights = ext.safetensors_open(path, how="counted")
    assert drops.created == 1
    a = np.from_dlpack(weights.tensor("w"))
    old_torch_refuses_read_only(torch, weights.tensor("w"))
    t = torch.from_dlpack(weights.tensor("w"))
    del weights
    assert drops.dropped == 0
    assert a.tolist() == [2.5, -1.0]
    del a
    assert drops.dropped == 0
    assert t.tolist() == [2.5, -1.0]
    del t
    assert (drops.created, drops.dropped) == (1, 1)


def test_a_safetensor_view_is_the_data_field_of_a_derived_type(tmp_path, drops):
    path = tmp_path / "w.safetensors"
    data_start, offsets = write_safetensors(path, {"w": ("U8", [2, 3], [bytes(range(6))])})
    weights = ext.safetensors_open(path, how="counted")
    derived = weights.weights("w")
    a = np.from_dlpack(derived)
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert a.ctypes.data == weights.base_address() + data_start
    assert not a.flags.writeable
    del weights, derived
    assert drops.dropped == 0
    del a
    assert (drops.created, drops.dropped) == (2, 2)  # the file's bytes and the derived value


# (safetensors dtype, torch dtype): the float8 codes of DLPack 1.3, as torch reads them.
TORCH_DTYPES = [
    ("F8_E4M3", "float8_e4m3fn"),
    ("F8_E5M2", "float8_e5m2"),
    ("F8_E8M0", "float8_e8m0fnu"),
    ("F8_E4M3FNUZ", "float8_e4m3fnuz"),
    ("F8_E5M2FNUZ", "float8_e5m2fnuz"),
    ("BF16", "bfloat16"),
    ("F16", "float16"),
    ("C64", "complex64"),
    ("BOOL", "bool"),
    ("U64", "uint64"),
]


@pytest.mark.parametrize("st_dtype,torch_dtype", TORCH_DTYPES)
def test_torch_reads_every_dtype_it_has(tmp_path, st_dtype, torch_dtype):
    dtype = getattr(torch, torch_dtype, None)
    if dtype is None:
        pytest.skip(f"torch {torch.__version__} has no {torch_dtype}")
    if dtype == torch.bool:
        values = torch.tensor([True, False, True, True])
    elif dtype.is_complex:
        values = torch.tensor([1 + 2j, -0.5j, 3, 0], dtype=dtype)
    else:
        values = torch.tensor([1.0, 2.0, 0.5, 4.0]).to(dtype)
    raw = values.view(torch.uint8)  # the bytes, as safetensors stores them
    path = tmp_path / "d.safetensors"
    write_safetensors(path, {"x": (st_dtype, [4], [raw.numpy().tobytes()])})
    weights = ext.safetensors_open(path)
    old_torch_refuses_read_only(torch, weights.tensor("x"))
    if torch_dtype.startswith("float8") and version_of(torch)[:2] < (2, 10):
        # torch imports DLPack's float8 codes from 2.10.
        with pytest.raises(BufferError, match="^Unsupported code 1[0-4]$"):
            torch.from_dlpack(weights.tensor("x"))
        return
    t = torch.from_dlpack(weights.tensor("x"))
    assert (t.dtype, t.shape) == (dtype, (4,))
    assert torch.equal(t.view(torch.uint8), raw)
    assert t.data_ptr() == weights.base_address() + path.stat().st_size - raw.numel()


def test_safetensors_errors_name_what_was_expected(tmp_path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"w": ("U8", [1], [b"\x01"]), "mask": ("BOOL", [2], [b"\x01\x07"])})
    weights = ext.safetensors_open(path)
    with pytest.raises(ValueError) as err:
        weights.tensor("v")
    assert str(err.value) == 'expected a tensor named "v" in the safetensors file, which holds "mask", "w"'
    with pytest.raises(ValueError) as err:
        weights.tensor("mask")
    assert str(err.value) == 'expected bytes 0 or 1 in the bool tensor "mask", got 7 at byte 1'
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ValueError) as err:
        ext.safetensors_open(bad)
    assert str(err.value) == "expected a safetensors file, got bytes that are not one: invalid header length"


# nalgebra


def test_a_dmatrix_is_a_column_major_tensor(drops):
    a = np.from_dlpack(ext.nalgebra_matrix(2, 3))
    assert a.tolist() == [[0, 1, 2], [10, 11, 12]]
    assert a.strides == (8, 16) and a.flags.f_contiguous and a.flags.writeable
    t = torch.from_dlpack(ext.nalgebra_matrix(3, 2))
    assert t.stride() == (1, 3)
    assert t.tolist() == [[0, 1], [10, 11], [20, 21]]
    assert drops.created == 2
    del a, t
    assert drops.dropped == 2


def test_imports_are_viewed_with_their_strides():
    a = np.arange(6.0).reshape(2, 3)
    assert ext.nalgebra_view(a) == ((2, 3), (3, 1), [0, 1, 2, 3, 4, 5])
    assert ext.nalgebra_view(a.T) == ((3, 2), (1, 3), [0, 3, 1, 4, 2, 5])
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4)[:, ::2]
    assert ext.nalgebra_view(t) == ((3, 2), (4, 2), [0, 2, 4, 6, 8, 10])
    assert ext.nalgebra_view(np.from_dlpack(ext.nalgebra_matrix(2, 2))) == ((2, 2), (1, 2), [0, 1, 10, 11])


def test_layouts_nalgebra_cannot_express_are_refused():
    with pytest.raises(TypeError) as err:
        ext.nalgebra_view(np.arange(6.0).reshape(2, 3)[::-1])
    assert str(err.value) == (
        "nalgebra::DMatrixView<float64> cannot hold shape [2, 3] with strides [-3, 1]: "
        "expected strides of 0 or more (nalgebra steps forward only)"
    )
    with pytest.raises(TypeError, match=r"^expected a 2-dimensional tensor, got 1 dimension$"):
        ext.nalgebra_view(np.zeros(3))
    with pytest.raises(TypeError, match=r"^expected a float64 tensor, got float32$"):
        ext.nalgebra_view(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError) as err:
        ext.nalgebra_scale(torch.zeros(3, 1).expand(3, 4), 2.0)
    assert str(err.value) == (
        "a mutable view needs distinct elements, but shape [3, 4] with strides [1, 0] reaches some twice"
    )


def test_a_mutable_view_writes_the_producers_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    ext.nalgebra_scale(a.T, 2.0)
    assert a.tolist() == [[0, 2, 4], [6, 8, 10]]
    t = torch.ones(2, 2)
    ext.nalgebra_scale(t, -1.5)
    assert t.tolist() == [[-1.5, -1.5], [-1.5, -1.5]]


# image


def test_an_image_buffer_is_an_hwc_tensor(drops):
    x = ext.image_rgb(4, 3)
    img = np.from_dlpack(x)
    assert (img.shape, img.dtype, img.flags.writeable) == ((3, 4, 3), np.uint8, True)
    assert img[2, 1].tolist() == [1, 2, 3]  # pixel (x=1, y=2)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == img.ctypes.data
    img[0, 0, 0] = 200
    assert int(t[0, 0, 0]) == 200
    PIL = pytest.importorskip("PIL.Image")
    assert PIL.fromarray(img).size == (4, 3)
    del x, img, t
    assert (drops.created, drops.dropped) == (1, 1)


def test_an_import_is_copied_into_an_image_buffer(drops):
    hwc = np.from_dlpack(ext.image_rgb(5, 2))
    chw = np.ascontiguousarray(hwc.transpose(2, 0, 1))
    back, pixel = ext.image_copy_rgb8(chw.transpose(1, 2, 0), 3, 1)  # strided HWC
    assert list(pixel) == [3, 1, 4]
    copied = np.from_dlpack(back)
    assert np.array_equal(copied, hwc)
    assert copied.ctypes.data != hwc.ctypes.data
    del back, copied, hwc
    assert drops.created == drops.dropped == 2


def test_a_contiguous_import_is_viewed_in_place():
    a = np.arange(12, dtype=np.uint16).reshape(3, 4)
    assert ext.image_view_luma16(a) == (4, 3, a.ctypes.data, 66)
    assert ext.image_view_luma16(a.reshape(3, 4, 1)) == (4, 3, a.ctypes.data, 66)
    t = torch.full((2, 2, 3), 0.25)
    ext.image_invert_f32(t)
    assert t.flatten().tolist() == [0.75] * 12


def test_images_of_another_layout_are_refused():
    with pytest.raises(TypeError) as err:
        ext.image_copy_rgb8(np.zeros((2, 2, 4), np.uint8), 0, 0)
    assert str(err.value) == (
        "image::ImageBuffer<image::color::Rgb<u8>> cannot hold shape [2, 2, 4] with strides [8, 4, 1]: "
        "expected 3 channels in the last dimension (height, width, channels)"
    )
    with pytest.raises(TypeError, match=r"^expected a 3-dimensional tensor, got 1 dimension$"):
        ext.image_copy_rgb8(np.zeros(3, np.uint8), 0, 0)
    with pytest.raises(TypeError, match=r"^expected a uint8 tensor, got float32$"):
        ext.image_copy_rgb8(np.zeros((2, 2, 3), np.float32), 0, 0)
    with pytest.raises(TypeError) as err:
        ext.image_view_luma16(np.zeros((3, 4), np.uint16)[:, ::2])
    assert str(err.value) == "expected a contiguous (row-major) tensor, got shape [3, 2] with strides [4, 2]"
    with pytest.raises(TypeError, match=r"^expected a writable tensor, got a read-only one$"):
        frozen = np.zeros((1, 1, 3), np.float32)
        frozen.flags.writeable = False
        ext.image_invert_f32(frozen)
