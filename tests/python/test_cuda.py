"""CUDA: torch and CuPy device tensors through Rust, zero-copy. Marked `cuda`;
every test skips cleanly where torch sees no GPU (this machine, CI). On a GPU
machine: `make gpu-bundle`, then its run.sh (pyo3-dlpack/guide/testing.md, "On a GPU")."""

import gc

import numpy as np
import pytest
import torch

import dlpack_testext as ext

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU and torch with CUDA"),
]

CUDA = 2  # kDLCUDA


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.complex64, torch.bool])
def test_a_torch_cuda_tensor_is_imported_in_place(dtype):
    t = torch.arange(12, device="cuda").reshape(3, 4).to(dtype)
    d = ext.describe(t)
    assert d["device"] == (CUDA, t.device.index)
    assert d["data_ptr"] == t.data_ptr()
    assert d["shape"] == (3, 4) and d["strides"] == (4, 1)
    assert d["writability"] == "Writable"


def test_a_strided_cuda_view_keeps_its_layout():
    t = torch.arange(24, device="cuda", dtype=torch.float32).reshape(4, 6)[:, ::2]
    d = ext.describe(t)
    assert d["data_ptr"] == t.data_ptr()
    assert d["strides"] == t.stride()


def test_torch_cuda_through_rust_and_back_is_zero_copy_and_drops_once():
    t = torch.arange(8, device="cuda", dtype=torch.float32)
    back = torch.from_dlpack(ext.reexport(t))
    assert back.device == t.device and back.data_ptr() == t.data_ptr()
    back[0] = 42
    torch.cuda.synchronize()
    assert t[0].item() == 42


def test_a_cuda_export_asked_for_the_cpu_is_a_host_copy():
    t = torch.arange(24, device="cuda", dtype=torch.float32).reshape(4, 6)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t.mul_(2)  # pending on `s` when exported
    tensor = ext.reexport(t)
    a = np.from_dlpack(tensor, device="cpu")
    assert a.tolist() == (torch.arange(24, dtype=torch.float32).reshape(4, 6) * 2).tolist()
    strided = np.from_dlpack(ext.reexport(t[:, ::2].T), device="cpu")
    assert strided.tolist() == t[:, ::2].T.cpu().tolist()
    with pytest.raises(BufferError, match="not with copy=False"):
        tensor.__dlpack__(dl_device=(1, 0), copy=False, max_version=(1, 3))


def test_to_vec_of_a_cuda_import_copies_through_the_driver():
    t = torch.arange(12, device="cuda", dtype=torch.float32).reshape(3, 4)
    assert ext.to_list(t, "float32") == list(range(12))
    assert ext.to_list(t.T, "float32") == t.T.cpu().flatten().tolist()


def test_every_stream_the_spec_allows_for_cuda_is_accepted():
    t = torch.ones(4, device="cuda")
    s = torch.cuda.Stream()
    for stream in (None, 1, 2, s.cuda_stream):
        d = ext.import_with(t, stream=stream)
        assert d["data_ptr"] == t.data_ptr()


def test_cupy_through_rust_and_back_is_zero_copy(cupy):
    a = cupy.arange(10, dtype=cupy.float32)
    d = ext.describe(a)
    assert d["device"] == (CUDA, a.device.id) and d["data_ptr"] == a.data.ptr
    back = cupy.from_dlpack(ext.reexport(a))
    assert back.data.ptr == a.data.ptr
    np.testing.assert_array_equal(cupy.asnumpy(back), np.arange(10, dtype=np.float32))


def test_torch_and_cupy_share_through_rust(cupy):
    t = torch.arange(6, device="cuda", dtype=torch.float32)
    a = cupy.from_dlpack(ext.reexport(t))
    assert a.data.ptr == t.data_ptr()
    t2 = torch.from_dlpack(ext.reexport(a))
    assert t2.data_ptr() == t.data_ptr()


def test_outputs_allocated_by_torch_on_the_inputs_gpu():
    like = torch.zeros(1, device="cuda")
    out = ext.allocate_filled(like, [2, 3], "bfloat16")  # not filled: device memory
    assert type(out) is torch.Tensor and out.device == like.device
    assert out.shape == (2, 3) and out.dtype == torch.bfloat16


def test_a_numpy_result_of_device_memory_is_refused():
    with pytest.raises(BufferError, match="holds host memory only"):
        ext.native_arange("numpy", "float32", 3, device="cuda:0")
    gc.collect()


def test_both_stream_modes_import_a_torch_cuda_tensor_in_place():
    t = torch.arange(8, device="cuda", dtype=torch.float32)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        u = t * 2  # pending work on a side stream
        ordered = ext.import_with(u, stream_ordered=True)
        assert ordered["stream"] == side.cuda_stream, "the producer's current work stream"
        synced = ext.import_with(u)
        assert synced["stream"] == 1, "ready on the legacy default stream"
    assert ordered["data_ptr"] == synced["data_ptr"] == u.data_ptr()


def test_cuda_array_interface_producers_get_their_device_from_the_driver(cupy):
    x = cupy.arange(6, dtype=cupy.float32)

    class OnlyCai:
        __cuda_array_interface__ = x.__cuda_array_interface__

    d = ext.describe(OnlyCai())
    assert d["device"] == (CUDA, x.device.id)
    assert d["data_ptr"] == x.data.ptr
    back = torch.from_dlpack(ext.asdlpack(OnlyCai()))
    assert back.data_ptr() == x.data.ptr
    assert back.tolist() == list(range(6))


def test_a_cuda_export_offers_the_cuda_array_interface(cupy):
    t = ext.reexport(torch.arange(4, device="cuda", dtype=torch.float32))
    cai = t.__cuda_array_interface__
    assert cai["data"][0] == t.data_ptr and cai["stream"] == 1
    assert cupy.asarray(t).data.ptr == t.data_ptr
