"""Derived types over real crates' memory and shapes (`Arc<Vec<T>>`, a mapped file,
`bytes::Bytes`, `shape = [...]` from scalar fields, an `inner` tensor), seen from NumPy and torch."""

import numpy as np
import pytest
import torch

import dlpack_testext as ext
from conftest import old_torch_refuses_read_only


def expected_pixels(height, width):
    return (np.arange(height * width * 3) % 256).astype("u1").reshape(height, width, 3)


def assert_read_only(x, a):
    """`x` says it is read-only, NumPy's view refuses writes, a legacy capsule is refused."""
    assert x.read_only
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1
    with pytest.raises(BufferError, match="read-only"):
        x.__dlpack__()


# --- read-only memory -----------------------------------------------------------


def test_shared_arc_vec_samples_are_read_only_float32_without_a_copy(drops):
    x, address = ext.shared_samples(6)
    assert (x.shape, x.dtype, x.data_ptr) == ((6,), "float32", address)
    a = np.from_dlpack(x)
    assert a.ctypes.data == a.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(a, np.arange(6, dtype="f4") / 2)
    assert_read_only(x, a)
    old_torch_refuses_read_only(torch, x)
    t = torch.from_dlpack(x)
    assert (t.data_ptr(), t.dtype, tuple(t.shape)) == (address, torch.float32, (6,))
    assert t.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    del x, a
    assert drops.dropped == 0, "the consumers still hold the samples"
    del t
    assert (drops.created, drops.dropped) == (1, 1)


def test_a_mapped_file_is_read_only_float32_at_the_mapping(drops):
    x, address = ext.mapped_weights(3, 4)
    assert (x.shape, x.dtype, x.data_ptr) == ((3, 4), "float32", address)
    a = np.from_dlpack(x)
    assert a.ctypes.data == address
    np.testing.assert_array_equal(a, np.arange(12, dtype="f4").reshape(3, 4))
    assert_read_only(x, a)
    old_torch_refuses_read_only(torch, x)
    t = torch.from_dlpack(x)
    assert (t.data_ptr(), tuple(t.shape), float(t[2, 3])) == (address, (3, 4), 11.0)
    del x, a, t
    assert (drops.created, drops.dropped) == (1, 1)


def test_shared_bytes_are_read_only_float32_without_a_copy(drops):
    x, address = ext.received_floats(5)
    assert (x.shape, x.dtype, x.data_ptr) == ((5,), "float32", address)
    a = np.from_dlpack(x)
    assert a.ctypes.data == address
    np.testing.assert_array_equal(a, np.arange(5, dtype="f4"))
    assert_read_only(x, a)
    old_torch_refuses_read_only(torch, x)
    t = torch.from_dlpack(x)
    assert (t.data_ptr(), t.tolist()) == (address, [0.0, 1.0, 2.0, 3.0, 4.0])
    del x, a, t
    assert (drops.created, drops.dropped) == (1, 1)


# --- shapes from fields and inner tensors ----------------------------------------


def test_shape_from_scalar_fields_is_height_width_channels(drops):
    # The struct declares width, channels, height: the attribute's order wins.
    x, address = ext.hwc_image_fields(2, 5)
    assert (x.shape, x.dtype, x.read_only) == ((2, 5, 3), "uint8", False)
    a, t = np.from_dlpack(x), torch.from_dlpack(x)
    assert a.ctypes.data == t.data_ptr() == address
    np.testing.assert_array_equal(a, expected_pixels(2, 5))
    assert tuple(t.shape) == (2, 5, 3)
    a[1, 4, 2] = 7
    assert int(t[1, 4, 2]) == 7, "the same memory"
    del x, a
    assert drops.dropped == 0
    del t
    assert (drops.created, drops.dropped) == (1, 1)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_a_struct_deriving_both_exports_its_import_as_it_came(library):
    # Transposed: the export keeps the import's strides, at the same address.
    stored = np.arange(24, dtype="u1").reshape(4, 2, 3)
    if library == "numpy":
        src = stored.transpose(1, 0, 2)
    else:
        src = torch.from_numpy(stored).permute(1, 0, 2)
    address = src.ctypes.data if library == "numpy" else src.data_ptr()
    x, extents = ext.hwc_frame_roundtrip(src)
    assert extents == (2, 4, 3)
    assert (x.shape, x.dtype, x.data_ptr) == ((2, 4, 3), "uint8", address)
    a = np.from_dlpack(x)
    assert a.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(a, np.asarray(src))
    with pytest.raises(TypeError, match="expected a 3-dimensional tensor, got 2 dimensions"):
        ext.hwc_frame_roundtrip(np.zeros((2, 4), dtype="u1"))
    overflow = r"extent 2 of the imported shape, for the field `channels`, must be an integer in range \[0, 255\], got 256"
    with pytest.raises(OverflowError, match=overflow):
        ext.hwc_frame_roundtrip(np.zeros((1, 1, 256), dtype="u1"))


def test_an_inner_field_is_the_tensor_and_is_dropped_once(drops):
    x, address = ext.labelled_image(3, 2, "cat")
    assert (x.shape, x.dtype, x.data_ptr, x.read_only) == ((3, 2, 3), "uint8", address, False)
    a, t = np.from_dlpack(x), torch.from_dlpack(x)
    assert a.__array_interface__["data"][0] == t.data_ptr() == address
    np.testing.assert_array_equal(t.numpy(), expected_pixels(3, 2))
    assert a.flags.writeable
    del x, a
    assert drops.dropped == 0
    del t
    assert (drops.created, drops.dropped) == (1, 1)
