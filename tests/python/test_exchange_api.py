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
    if t.numel():  # torch exports NULL data for empty tensors
        assert via_exchange["data_ptr"] == t.data_ptr()


@pytest.mark.parametrize("name", list(tensors()))
def test_borrowed_view_matches_the_owned_import(name):
    t = tensors()[name]
    borrowed = ext.describe_borrowed(t)
    owned = ext.describe(t)
    for key in ("shape", "strides", "dtype", "device", "data_ptr", "numel", "contiguous"):
        assert borrowed[key] == owned[key], key
    assert borrowed["read_only"] is False


def test_borrowed_views_give_metadata_not_elements():
    t = torch.arange(10, dtype=torch.float32)[::2]
    assert ext.describe_borrowed(t)["shape"] == (5,)
    # A borrowed view holds no reference to the memory: reading it is refused.
    with pytest.raises(ValueError, match="holds no reference to the memory"):
        ext.sum_borrowed(t)
    a = np.arange(4, dtype="f4")  # no exchange API: an ordinary (owned) import
    assert ext.sum_borrowed(a) == 6.0
    assert ext.describe_borrowed(a)["version"] == (1, 0)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: torch.tensor([1 + 2j, 3 - 4j]).conj(), "conjugate bit"),
        (lambda: torch.tensor([1 + 2j]).conj().imag, "negative bit"),
    ],
    ids=["conj", "neg"],
)
def test_lazy_torch_bits_are_refused_not_exported_unresolved(make, message):
    t = make()
    assert t.is_conj() or t.is_neg()
    for importer in (ext.describe, ext.describe_borrowed):
        with pytest.raises(BufferError, match=f"lazy {message}.*call .resolve_"):
            importer(t)
    resolved = t.resolve_conj().resolve_neg()
    assert ext.to_list(resolved, str(resolved.dtype).removeprefix("torch.")) == [
        (v.real, v.imag) if resolved.is_complex() else v for v in resolved.tolist()
    ]


def test_a_subclass_overriding_dlpack_is_asked_through_python():
    calls = []

    class Logged(torch.Tensor):
        def __dlpack__(self, *args, **kwargs):
            calls.append(kwargs)
            return super().__dlpack__(*args, **kwargs)

    t = torch.arange(3.0).as_subclass(Logged)
    assert ext.describe(t)["shape"] == (3,)
    assert calls, "its own __dlpack__ ran"


def test_owned_exchange_imports_release_the_tensor():
    t = torch.ones(1000)
    storage = t.untyped_storage()._weak_ref()
    for _ in range(100):
        ext.consume(t)
        ext.consume_borrowed(t)
    del t
    gc.collect()
    assert torch.Storage._expired(storage), "every import released its reference"


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.ones(1000, requires_grad=True),
        lambda: torch.ones(1000, dtype=torch.complex64).conj().imag,
    ],
    ids=["requires_grad", "negative_bit"],
)
def test_refused_exchange_imports_release_the_tensor(make):
    t = make()
    storage = t.untyped_storage()._weak_ref()
    for _ in range(100):
        for importer in (ext.describe, ext.describe_borrowed):
            with pytest.raises(BufferError):
                importer(t)
    del t
    gc.collect()
    assert torch.Storage._expired(storage), "every refused import released its reference"


def importers():
    """Every way a tensor is imported: owned, borrowed, as a derived argument."""
    return {
        "from_pyany": ext.describe,
        "with_borrowed": ext.describe_borrowed,
        "derived": lambda t: dict(zip(("shape", "same_address"), ext.derived_describe(t)[::5])),
    }


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), check_invariants=True),
            "Can't export tensors with layout other than torch.strided",
        ),
        (lambda: torch.ones(3, device="meta"), "Cannot pack tensors on meta"),
        (
            lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8),
            "QUInt/QInt types are not supported by dlpack",
        ),
    ],
    ids=["sparse", "meta", "quantized"],
)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_what_torch_cannot_export_raises_torchs_own_buffer_error(make, message):
    t = make()
    with pytest.raises(BufferError, match=f"^{message}$"):
        t.__dlpack__(max_version=(1, 3))
    for importer in (ext.describe, ext.describe_borrowed):
        with pytest.raises(BufferError) as excinfo:
            importer(t)
        assert str(excinfo.value) == message, "one line, no C++ backtrace"


REQUIRES_GRAD = "Can't export tensors that require gradient, use tensor.detach()"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize("path", ["from_pyany", "with_borrowed", "derived"])
def test_tensors_that_require_grad_are_refused_as_torch_refuses_them(dtype, path):
    t = torch.ones(3, dtype=dtype, requires_grad=True)
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient"):
        t.__dlpack__()
    with pytest.raises(BufferError) as excinfo:
        importers()[path](t)
    assert str(excinfo.value) == REQUIRES_GRAD
    # Non-leaf results of autograd too; torch's advice works.
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient"):
        importers()[path](t * 2)
    detached = importers()[path](t.detach())
    assert detached.get("data_ptr", t.data_ptr()) == t.data_ptr()
    assert detached.get("same_address", True)


def test_a_tensor_that_requires_grad_is_never_written_from_rust():
    leaf = torch.ones(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient"):
        ext.fill(leaf, 5.0)
    assert leaf.tolist() == [1.0, 1.0, 1.0]
    (leaf * leaf).sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0, 2.0]


def read_only_tensor_wrapper():
    """torch's `ReadOnlyTensorWrapper` (a `torch.Tensor` subclass that exports read-only
    capsules); not every torch has it (2.10 does not), and without it there is nothing to test."""
    wrapper = getattr(torch.utils.dlpack, "ReadOnlyTensorWrapper", None)
    if wrapper is None:
        pytest.skip(f"torch {torch.__version__} has no torch.utils.dlpack.ReadOnlyTensorWrapper")
    return wrapper


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.complex64, torch.bfloat16, torch.int32, torch.bool]
)
def test_read_only_tensor_wrappers_import_read_only_on_every_path(dtype):
    ReadOnlyTensorWrapper = read_only_tensor_wrapper()

    source = torch.arange(4).to(dtype)
    wrapper = ReadOnlyTensorWrapper(source)
    with pytest.raises(RuntimeError, match="only supports DLPack export"):
        wrapper.is_neg()
    owned = ext.describe(wrapper)
    assert (owned["writability"], owned["read_only"]) == ("ReadOnly", True)
    assert owned["data_ptr"] == source.data_ptr()
    assert ext.describe_borrowed(wrapper)["data_ptr"] == source.data_ptr()
    name = "uint8" if dtype == torch.bool else str(dtype).removeprefix("torch.")
    expected = source.to(torch.uint8) if dtype == torch.bool else source
    values = [(v.real, v.imag) if dtype.is_complex else v for v in expected.tolist()]
    assert ext.to_list(wrapper, name) == values
    assert source.tolist() == torch.arange(4).to(dtype).tolist()
    doubles = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(TypeError, match="^expected a writable tensor, got a read-only one$"):
        ext.fill(ReadOnlyTensorWrapper(doubles), 1.0)
    assert doubles.tolist() == [0.0, 0.0]


def test_a_read_only_wrapper_of_a_tensor_that_requires_grad_is_refused():
    ReadOnlyTensorWrapper = read_only_tensor_wrapper()

    wrapper = ReadOnlyTensorWrapper(torch.ones(3, requires_grad=True))
    for importer in importers().values():
        with pytest.raises(BufferError) as excinfo:
            importer(wrapper)
        assert str(excinfo.value) == REQUIRES_GRAD


def test_plain_subclasses_import_through_their_own_dlpack():
    class Plain(torch.Tensor):
        pass

    t = torch.arange(3.0, dtype=torch.float64).as_subclass(Plain)
    assert ext.describe(t)["data_ptr"] == t.data_ptr()
    ext.fill(t, 2.0)
    assert t.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient"):
        ext.describe(torch.ones(2, requires_grad=True).as_subclass(Plain))


def test_writes_through_an_exchange_import_reach_torch():
    t = torch.zeros(3, dtype=torch.float64)
    ext.fill(t, 4.0)
    assert t.tolist() == [4.0] * 3


# --- our own table: DLPackTensor.__dlpack_c_exchange_api__ ----------------------

import ctypes  # noqa: E402

from conftest import DLManagedTensorVersioned, DLTensor  # noqa: E402

SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)


class ExchangeAPI(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("prev_api", ctypes.c_void_p),
        ("allocator", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, SET_ERROR)),
        ("from_py", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))),
        ("to_py", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.py_object))),
        ("dltensor_from_py", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))),
        ("current_work_stream", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))),
    ]


def take(obj):
    """The object a C function stored in a ctypes py_object, owning its reference.

    ctypes never releases a reference written into a py_object from C, so the
    extra one is dropped here (otherwise the object would leak).
    """
    value = obj.value
    ctypes.pythonapi.Py_DecRef.argtypes = [ctypes.py_object]
    ctypes.pythonapi.Py_DecRef(value)
    return value


def our_table():
    capsule = ext.DLPackTensor.__dlpack_c_exchange_api__
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    assert api.PyCapsule_GetName(capsule) == b"dlpack_exchange_api"
    return ExchangeAPI.from_address(api.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api"))


def test_our_table_is_advertised_on_the_type():
    table = our_table()
    assert (table.major, table.minor, table.prev_api) == (1, 3, None)
    for name in ("allocator", "from_py", "to_py", "dltensor_from_py", "current_work_stream"):
        assert getattr(table, name), name
    assert isinstance(ext.Spectrum.__dlpack_c_exchange_api__, type(ext.DLPackTensor.__dlpack_c_exchange_api__))


def test_owned_and_borrowed_exports_through_the_table(drops):
    table = our_table()
    x = ext.arange("float32", 6)
    out = ctypes.c_void_p()
    assert table.from_py(x, ctypes.byref(out)) == 0
    managed = DLManagedTensorVersioned.from_address(out.value)
    assert (managed.version.major, managed.version.minor) == (1, 3)
    assert managed.dl_tensor.data == x.data_ptr
    view = DLTensor()
    assert table.dltensor_from_py(x, ctypes.byref(view)) == 0
    assert (view.data, view.ndim, view.shape[0], view.strides[0]) == (x.data_ptr, 1, 6, 1)
    # The consumer owns the managed tensor: its deleter releases our share.
    del x
    assert drops.dropped == 0
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(out.value)
    assert drops.dropped == 1


def test_allocator_and_to_py_object_round_trip():
    table = our_table()
    errors = []
    on_error = SET_ERROR(lambda ctx, kind, message: errors.append((kind, message)))
    shape = (ctypes.c_int64 * 2)(2, 3)
    prototype = DLTensor()
    prototype.device.device_type, prototype.device.device_id = 1, 0
    prototype.ndim = 2
    prototype.dtype.code, prototype.dtype.bits, prototype.dtype.lanes = 2, 32, 1
    prototype.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    out = ctypes.c_void_p()
    assert table.allocator(ctypes.byref(prototype), ctypes.byref(out), None, on_error) == 0
    assert errors == []
    obj = ctypes.py_object()
    assert table.to_py(out.value, ctypes.byref(obj)) == 0
    tensor = take(obj)
    assert isinstance(tensor, ext.DLPackTensor)
    a = np.from_dlpack(tensor)
    assert a.shape == (2, 3) and a.dtype == np.float32 and not a.any()
    a[1, 2] = 5.0
    assert np.from_dlpack(tensor)[1, 2] == 5.0
    # A device the allocator cannot serve is reported through SetError.
    prototype.device.device_type = 2
    assert table.allocator(ctypes.byref(prototype), ctypes.byref(out), None, on_error) == -1
    assert errors == [(b"BufferError", b"DLPackTensor allocates CPU tensors only, not cuda:0")]
    stream = ctypes.c_void_p(1)
    assert table.current_work_stream(1, 0, ctypes.byref(stream)) == 0
    assert stream.value is None


def test_to_py_object_failure_leaves_the_tensor_with_the_caller():
    from handmade import HandMade

    table = our_table()
    bad = HandMade(dtype=(2, 32, 2))  # float32x2: lanes != 1, refused on import
    obj = ctypes.py_object()
    with pytest.raises(ValueError, match="2 lanes"):
        table.to_py(ctypes.addressof(bad.managed), ctypes.byref(obj))
    assert bad.deleted == 0, "not ours to delete after a failure"
    good = HandMade()
    assert table.to_py(ctypes.addressof(good.managed), ctypes.byref(obj)) == 0
    tensor = take(obj)
    assert np.from_dlpack(tensor).tolist() == [[1, 2, 3], [4, 5, 6]]
    del tensor, obj
    gc.collect()
    assert good.deleted == 1


def make_prototype(shape, dtype=(2, 32, 1), device=(1, 0), null_shape=False):
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    prototype = DLTensor()
    prototype.device.device_type, prototype.device.device_id = device
    prototype.ndim = len(shape)
    prototype.dtype.code, prototype.dtype.bits, prototype.dtype.lanes = dtype
    if not null_shape:
        prototype.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    return prototype, dims


@pytest.mark.parametrize(
    "shape, dtype, null_shape, message",
    [
        ((2, 2), (2, 32, 1), True, b"a prototype of 2 dimensions with a NULL shape"),
        ((2**40, 2**40), (2, 32, 1), False, b"size overflow"),
        ((2,), (2, 32, 4), False, b"cannot allocate a tensor of float32x4"),
        ((-1,), (2, 32, 1), False, b"negative extent -1"),
    ],
)
def test_allocator_refuses_bad_prototypes_through_set_error(shape, dtype, null_shape, message):
    table = our_table()
    errors = []
    on_error = SET_ERROR(lambda ctx, kind, text: errors.append((kind, text)))
    prototype, _dims = make_prototype(shape, dtype, null_shape=null_shape)
    out = ctypes.c_void_p()
    assert table.allocator(ctypes.byref(prototype), ctypes.byref(out), None, on_error) == -1
    assert len(errors) == 1 and errors[0][0] == b"BufferError" and message in errors[0][1]


def test_allocated_bool_tensors_and_reexports_allow_mutable_views():
    table = our_table()
    on_error = SET_ERROR(lambda ctx, kind, text: None)
    prototype, _dims = make_prototype((3,), dtype=(6, 8, 1))
    out = ctypes.c_void_p()
    assert table.allocator(ctypes.byref(prototype), ctypes.byref(out), None, on_error) == 0
    obj = ctypes.py_object()
    assert table.to_py(out.value, ctypes.byref(obj)) == 0
    assert np.from_dlpack(take(obj)).tolist() == [False] * 3
    prototype, _dims = make_prototype((4,), dtype=(2, 64, 1))
    assert table.allocator(ctypes.byref(prototype), ctypes.byref(out), None, on_error) == 0
    assert table.to_py(out.value, ctypes.byref(obj)) == 0
    tensor = take(obj)
    ext.fill(tensor, 2.0)  # the re-exported PyTensor does not block this view
    assert np.from_dlpack(tensor).tolist() == [2.0] * 4


def test_copies_of_bool_tensors():
    x = ext.arange("bool", 4)
    a = np.from_dlpack(x, copy=True)
    assert a.tolist() == [False, True, False, True]
    assert a.ctypes.data != x.data_ptr


def test_a_read_only_tensor_refuses_the_borrowed_c_view():
    table = our_table()
    x = ext.from_bytes(bytes(8), "float32", [2], read_only=True)
    view = DLTensor()
    with pytest.raises(BufferError, match="read-only, which a borrowed DLTensor cannot say"):
        table.dltensor_from_py(x, ctypes.byref(view))


def test_an_unknown_writability_is_handed_on_through_the_table():
    table = our_table()
    source = torch.arange(4, dtype=torch.float32)
    x = ext.reexport(torch.utils.dlpack.to_dlpack(source))  # legacy: unknown
    view = DLTensor()
    assert table.dltensor_from_py(x, ctypes.byref(view)) == 0, "flagless, as it came"
    assert view.data == source.data_ptr()
    out = ctypes.c_void_p()
    assert table.from_py(x, ctypes.byref(out)) == 0
    managed = DLManagedTensorVersioned.from_address(out.value)
    assert managed.flags == 1, "READ_ONLY in a versioned tensor"
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(out.value)


def test_our_importer_uses_our_table(drops):
    x = ext.arange("int32", 5)
    assert ext.describe(x)["data_ptr"] == x.data_ptr
    assert ext.describe_borrowed(x)["data_ptr"] == x.data_ptr
    assert ext.to_list(x, "int32") == [0, 1, 2, 3, 4]
    del x
    assert drops.dropped == 1


def test_tvm_ffi_imports_our_tensors_through_the_table():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    x = ext.arange("float32", 8)
    t = tvm_ffi.from_dlpack(x)
    back = np.from_dlpack(t)
    assert back.ctypes.data == x.data_ptr
    np.testing.assert_array_equal(back, np.arange(8, dtype="f4"))


def raw(function, *argtypes):
    """A table function called with raw pointers (to pass NULL where ctypes would not)."""
    address = ctypes.cast(function, ctypes.c_void_p).value
    return ctypes.PYFUNCTYPE(ctypes.c_int, *argtypes)(address)


@pytest.mark.parametrize("name", ["from_py", "dltensor_from_py", "current_work_stream"])
def test_null_out_pointers_raise_and_write_nothing(name, capfd, drops):
    table = our_table()
    x = ext.arange("float32", 6)
    if name == "current_work_stream":
        call = raw(table.current_work_stream, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)
        args = (1, 0, None)
    else:
        call = raw(getattr(table, name), ctypes.py_object, ctypes.c_void_p)
        args = (x, None)
    with pytest.raises(BufferError, match="^the DLPack exchange API was called with a NULL out pointer$"):
        call(*args)
    del x, args
    gc.collect()
    assert drops.dropped == 1, "nothing was exported or kept"
    assert capfd.readouterr().err == ""


def test_to_py_object_refuses_null_tensor_and_null_out(capfd):
    from handmade import HandMade

    table = our_table()
    call = raw(table.to_py, ctypes.c_void_p, ctypes.c_void_p)
    with pytest.raises(BufferError, match="^a NULL managed tensor$"):
        call(None, ctypes.addressof(ctypes.py_object()))
    good = HandMade()
    with pytest.raises(BufferError, match="NULL out pointer"):
        call(ctypes.addressof(good.managed), None)
    assert good.deleted == 0, "not adopted: still the caller's"
    assert capfd.readouterr().err == ""


def test_a_null_object_is_a_type_error_not_a_crash(capfd):
    table = our_table()
    call = raw(table.from_py, ctypes.c_void_p, ctypes.c_void_p)
    out = ctypes.c_void_p()
    with pytest.raises(TypeError, match="^the DLPackTensor exchange API got a NULL object$"):
        call(None, ctypes.addressof(out))
    assert out.value is None
    assert capfd.readouterr().err == ""


def test_the_allocator_refuses_null_pointers_through_set_error():
    table = our_table()
    errors = []
    on_error = SET_ERROR(lambda ctx, kind, text: errors.append((kind, text)))
    call = raw(table.allocator, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, SET_ERROR)
    prototype, _dims = make_prototype((2,))
    out = ctypes.c_void_p()
    assert call(None, ctypes.addressof(out), None, on_error) == -1
    assert call(ctypes.addressof(prototype), None, None, on_error) == -1
    assert errors == [
        (b"BufferError", b"the DLPack exchange API was called with a NULL prototype pointer"),
        (b"BufferError", b"the DLPack exchange API was called with a NULL out pointer"),
    ]
    assert out.value is None


def test_torch_tensors_take_the_c_path_and_subclasses_their_own_dlpack(monkeypatch):
    ReadOnlyTensorWrapper = read_only_tensor_wrapper()

    calls = []

    def recording(cls):
        original = cls.__dlpack__

        def __dlpack__(self, *args, **kwargs):
            calls.append(cls.__name__)
            return original(self, *args, **kwargs)

        return __dlpack__

    t = torch.ones(2)
    ext.describe(t)  # the type's table is looked up (and cached) once
    with monkeypatch.context() as patch:
        patch.setattr(torch.Tensor, "__dlpack__", recording(torch.Tensor))
        for dtype in (torch.float32, torch.complex64, torch.int64):
            t = torch.ones(2, dtype=dtype)
            assert ext.describe(t)["data_ptr"] == t.data_ptr()
            ext.describe_borrowed(t)
    assert calls == [], "torch.Tensor itself: no Python call"
    monkeypatch.setattr(
        ReadOnlyTensorWrapper, "__dlpack__", recording(ReadOnlyTensorWrapper)
    )
    wrapper = ReadOnlyTensorWrapper(torch.ones(2))
    assert ext.describe(wrapper)["read_only"] is True
    ext.describe_borrowed(wrapper)
    assert calls == ["ReadOnlyTensorWrapper"] * 2
