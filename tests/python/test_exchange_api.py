"""The DLPack C exchange API: torch tensors imported without a Python call."""

import gc

import numpy as np
import pytest
import torch

import dlpack_testext as ext

pytestmark = pytest.mark.skipif(
    not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"), reason="torch < 2.10 has no exchange API"
)


def tensors():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return {
        "contiguous": base,
        "sliced": base[1:3, 2:5],
        "transposed": base.T,
        "expanded": torch.arange(3, dtype=torch.float32).expand(2, 3),
        "zero-d": torch.tensor(2.5),
        "empty": torch.empty(0, 3),
        "bfloat16": torch.ones(5, dtype=torch.bfloat16),
    }


@pytest.mark.parametrize("name", list(tensors()))
def test_owned_exchange_import_matches_the_dlpack_path(name):
    t = tensors()[name]
    via_exchange = ext.describe(t)  # plain options: the exchange API
    via_dlpack = ext.import_with(t, dl_device=(1, 0))  # options: __dlpack__
    assert via_exchange == via_dlpack
    assert via_exchange["data_ptr"] == (t.data_ptr() if t.numel() else via_exchange["data_ptr"])


@pytest.mark.parametrize("name", list(tensors()))
def test_borrowed_view_matches_the_owned_import(name):
    t = tensors()[name]
    borrowed = ext.describe_borrowed(t)
    owned = ext.describe(t)
    for key in ("shape", "strides", "dtype", "device", "data_ptr", "numel", "contiguous"):
        assert borrowed[key] == owned[key], key
    assert borrowed["read_only"] is False


def test_borrowed_values_and_fallback_for_other_producers():
    t = torch.arange(10, dtype=torch.float32)[::2]
    assert ext.sum_borrowed(t) == 0 + 2 + 4 + 6 + 8
    a = np.arange(4, dtype="f4")  # no exchange API: an ordinary import
    assert ext.sum_borrowed(a) == 6.0
    assert ext.describe_borrowed(a)["version"] == (1, 0)


def test_owned_exchange_imports_release_the_tensor():
    t = torch.ones(1000)
    storage = t.untyped_storage()._weak_ref()
    for _ in range(100):
        ext.consume(t)
        ext.consume_borrowed(t)
    del t
    gc.collect()
    assert torch.Storage._expired(storage), "every import released its reference"


def test_producer_errors_surface_unchanged():
    sparse = torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,))
    for importer in (ext.describe, ext.describe_borrowed):
        with pytest.raises(RuntimeError, match="doesn't have storage"):
            importer(sparse)


def test_the_c_path_accepts_tensors_that_require_grad():
    # torch's C exchange API exports them (kernels inside autograd functions
    # need that); its Python __dlpack__ refuses. Reading is what an import does.
    t = torch.arange(3.0, requires_grad=True)
    with pytest.raises(BufferError):
        t.__dlpack__()
    assert ext.describe(t)["shape"] == (3,)
    assert ext.sum_borrowed(t) == 3.0


def test_writes_through_an_exchange_import_reach_torch():
    t = torch.zeros(3, dtype=torch.float64)
    ext.fill(t, 4.0)
    assert t.tolist() == [4.0] * 3
