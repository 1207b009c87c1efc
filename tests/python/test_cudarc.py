"""cudarc (the extension's `cudarc` feature, built by `make gpu-bundle`):
`CudaSlice` exports and typed cudarc views of torch and CuPy CUDA tensors.
Marked `cuda`; skips without a GPU, or where the extension was built without
the feature (the main build)."""

import gc

import pytest
import torch

import dlpack_testext as ext

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU and torch with CUDA"),
    pytest.mark.skipif(not hasattr(ext, "cudarc_sum"), reason="extension built without cudarc"),
]


def test_a_cudarc_slice_reaches_torch_in_place_and_drops_once():
    created, dropped, _ = ext.drop_counts()
    tensor, address, _ = ext.cudarc_arange(1000)
    t = torch.from_dlpack(tensor)
    assert t.device == torch.device("cuda", 0) and t.dtype == torch.float32
    assert t.data_ptr() == address
    # The copy ran on the slice's own non-blocking stream: torch's stream was
    # made to wait for it, so every value is there.
    assert t.sum().item() == sum(range(1000))
    assert ext.drop_counts()[:2] == (created + 1, dropped)
    del tensor, t
    gc.collect()
    torch.cuda.synchronize()
    assert ext.drop_counts()[:2] == (created + 1, dropped + 1)


def test_a_cudarc_slice_reaches_cupy_in_place():
    cupy = pytest.importorskip("cupy")
    tensor, address, _ = ext.cudarc_arange(16)
    a = cupy.from_dlpack(tensor)
    assert a.data.ptr == address
    assert a.tolist() == list(range(16))


@pytest.mark.parametrize("stream_ordered", [False, True])
def test_a_cudarc_view_reads_a_torch_tensor_after_its_pending_work(stream_ordered):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        base = torch.ones(1 << 20, device="cuda")
        t = base * 3  # pending on the side stream
        total = ext.cudarc_sum(t, stream_ordered=stream_ordered)
    assert total == 3 * (1 << 20)


@pytest.mark.parametrize("stream_ordered", [False, True])
def test_a_mutable_cudarc_view_writes_in_place_before_torchs_next_work(stream_ordered):
    t = torch.zeros(1 << 20, device="cuda")
    address = t.data_ptr()
    ext.cudarc_fill(t, 2.5, stream_ordered=stream_ordered)
    # No synchronisation here: torch's stream was made to wait for the fill.
    assert t.data_ptr() == address
    assert (t == 2.5).all().item()


def test_a_cudarc_view_of_a_cupy_array():
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(10, dtype=cupy.float32)
    assert ext.cudarc_sum(a) == 45.0
    ext.cudarc_fill(a, 1.0)
    cupy.cuda.runtime.deviceSynchronize()
    assert a.tolist() == [1.0] * 10


def test_cudarc_views_check_what_host_views_check():
    on_gpu = torch.ones(4, device="cuda", dtype=torch.float64)
    assert ext.cudarc_view_error(on_gpu) == ("ValueError", "expected a float32 tensor, got float64")
    kind, message = ext.cudarc_view_error(torch.ones(4, 4, device="cuda").t())
    assert kind == "ValueError" and "contiguous" in message
    kind, message = ext.cudarc_view_error(torch.ones(4))
    assert (kind, message) == ("ValueError", "expected a tensor on cuda:0, got one on cpu:0")
    assert ext.cudarc_view_error(torch.ones(4, device="cuda")) is None
    assert ext.cudarc_view_error(torch.ones(4, device="cuda"), mutable=True) is None
    if torch.cuda.device_count() > 1:
        kind, message = ext.cudarc_view_error(torch.ones(4, device="cuda:1"))
        assert message == "expected a tensor on cuda:0, got one on cuda:1"
