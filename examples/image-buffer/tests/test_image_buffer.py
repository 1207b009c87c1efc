"""The image-buffer example: what its README promises, checked."""

import pathlib

import numpy as np
import pytest

import image_buffer

import torch


def test_gradient_is_shared_with_numpy_and_torch():
    image = image_buffer.gradient(4, 5)
    a = np.from_dlpack(image)
    t = torch.from_dlpack(image)
    assert a.shape == (4, 5, 3) and a.dtype == np.uint8
    assert a.ctypes.data == t.data_ptr() == image.data_ptr
    assert list(a[0, :, 0]) == [0, 63, 127, 191, 255]  # red ramps across
    assert list(a[:, 0, 1]) == [0, 85, 170, 255]  # green ramps down
    assert (a[..., 2] == 128).all()
    a[1, 1, 2] = 7
    assert t[1, 1, 2] == 7


def test_channels_first_is_a_strided_view_of_the_same_layout():
    hwc = np.from_dlpack(image_buffer.gradient(3, 4))
    chw = torch.from_dlpack(image_buffer.gradient(3, 4, channels_first=True))
    assert tuple(chw.shape) == (3, 3, 4)
    assert chw.stride() == (1, 12, 3)
    np.testing.assert_array_equal(chw.numpy(), hwc.transpose(2, 0, 1))


def test_sine_is_a_float32_vector():
    s = np.from_dlpack(image_buffer.sine(4, 1.0))
    assert s.dtype == np.float32
    np.testing.assert_allclose(s, [0, 1, 0, -1], atol=1e-6)


def test_jax_imports_the_aligned_image_without_copying():
    import jax.numpy as jnp
    image = image_buffer.gradient(8, 8)
    j = jnp.from_dlpack(image)
    assert j.addressable_data(0).unsafe_buffer_pointer() == image.data_ptr


def test_the_wheel_ships_a_current_type_stub_and_names_the_class():
    package = pathlib.Path(image_buffer.__file__).parent
    assert (package / "py.typed").exists()
    installed = (package / "__init__.pyi").read_text()
    crate_stub = pathlib.Path(__file__).parents[3] / "pyo3-dlpack" / "src" / "export" / "tensor.pyi"
    if not crate_stub.exists():
        pytest.skip("the crate's sources are not here (the GPU bundle)")
    assert crate_stub.read_text() in installed
    img = image_buffer.gradient(2, 3)
    assert type(img) is image_buffer.DLPackTensor
    assert type(img).__module__ == "image_buffer.image_buffer"
