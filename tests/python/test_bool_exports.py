"""Rust `bool`s are exported read-only (DESIGN, invariant 7): a consumer may write any byte
into memory it may write, and a `bool` other than 0 or 1 is undefined behaviour for the Rust
code that reads it afterwards (a `Drop`, the value handed back). Consumers that read masks
still import them; an owner who never reads the memory as bool again vouches with the
`unsafe` `TensorInfoBuilder::writable_bool`."""

import numpy as np
import pytest

import dlpack_testext as ext

NUMPY = np.lib.NumpyVersion(np.__version__)
needs_versioned_numpy = pytest.mark.skipif(
    NUMPY < "2.1.0", reason="NumPy < 2.1 imports no read-only tensor (legacy capsules only)"
)


@needs_versioned_numpy
def test_a_hand_written_exporter_of_rust_bools_exports_them_read_only():
    t = ext.unvouched_mask(6)
    assert t.read_only
    a = np.from_dlpack(t)
    assert a.tolist() == [False] * 6 and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a.view(np.uint8)[:] = 2


@needs_versioned_numpy
def test_a_value_that_is_the_buffer_itself_stays_writable():
    # DLPackTensor::new(Vec<bool>) and Native::numpy(Vec<bool>): no Rust code can reach the
    # bools again, so consumers that write masks keep working.
    t = ext.plain_mask(3)
    assert not t.read_only
    np.from_dlpack(t)[:] = True
    a = ext.native_mask(2)
    assert isinstance(a, np.ndarray) and a.flags.writeable and a.tolist() == [True, True]


@needs_versioned_numpy
def test_a_derived_mask_whose_drop_reads_it_cannot_be_written(drops):
    t = ext.derived_mask(5)
    a = np.from_dlpack(t)
    assert not a.flags.writeable and a.tolist() == [False, True, False, True, False]
    with pytest.raises(ValueError, match="read-only"):
        a.view(np.uint8)[0] = 2
    del t, a
    assert drops.dropped == 1
    assert ext.mask_bits_set_at_drop() == 2


def test_the_legacy_capsule_of_a_bool_export_is_refused_with_the_way_out():
    with pytest.raises(BufferError, match=r"read-only and the legacy \(unversioned\)"):
        ext.unvouched_mask(2).__dlpack__()


def test_torch_reads_a_read_only_mask():
    torch = pytest.importorskip("torch")
    x = torch.from_dlpack(ext.derived_mask(4))
    assert x.dtype == torch.bool and x.tolist() == [False, True, False, True]


@needs_versioned_numpy
def test_an_owner_who_vouches_exports_its_bools_writable():
    t = ext.vouched_mask(4)
    assert not t.read_only
    a = np.from_dlpack(t)
    a.view(np.uint8)[:] = 2  # any byte: nothing in Rust reads it as bool
    assert a.view(np.uint8).tolist() == [2, 2, 2, 2]


def test_copies_and_pickles_of_a_bool_export_keep_it_read_only():
    import copy
    import pickle

    t = ext.unvouched_mask(4)
    for u in [copy.copy(t), pickle.loads(pickle.dumps(t, protocol=5))]:
        assert (u.dtype, u.read_only) == ("bool", True)
