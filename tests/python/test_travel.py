"""Tensors that travel: pickling (every protocol, protocol 5 out of band), copies, and
unpickling in a fresh process, of `DLPackTensor`s (DESIGN, "Tensors that travel").

A pickle carries the dtype, shape, device, read-only flag and the row-major bytes; an
out-of-band buffer aligned for the dtype becomes the unpickled tensor's memory (its address
is the buffer's), else it is copied once. Forged payloads are errors, never wrong data."""

import copy
import ctypes
import os
import pickle
import struct

import numpy as np
import pytest

import dlpack_testext as ext
from conftest import BUFFER_PROTOCOL, needs_buffer_protocol, run_fresh

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)
# NumPy imports read-only tensors from 2.1 (versioned capsules) and writes into its imports
# from 2.2; before that the memory is written here through ctypes.
NUMPY = np.lib.NumpyVersion(np.__version__)
VERSIONED_NUMPY = NUMPY >= "2.1.0"


def write_float32(t, index, value):
    ctypes.c_float.from_address(t.data_ptr + 4 * index).value = value


def read_float32(t, index):
    return ctypes.c_float.from_address(t.data_ptr + 4 * index).value

# Every dtype the crate exchanges, with its storage bytes for `n` elements.
DTYPES = {
    "bool": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
    "complex32": 32, "complex64": 64, "complex128": 128,
    "float8_e3m4": 8, "float8_e4m3": 8, "float8_e4m3b11fnuz": 8, "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8, "float8_e5m2": 8, "float8_e5m2fnuz": 8, "float8_e8m0fnu": 8,
    "float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4, "float4_e2m1fn_x2": 8,
}


def storage(dtype, n):
    return (DTYPES[dtype] * n + 7) // 8


def raw(t, nbytes):
    """The `nbytes` bytes at the host tensor's address."""
    return ctypes.string_at(t.data_ptr, nbytes) if nbytes else b""


def tricky_bytes(dtype, n):
    """Bytes for `n` elements of `dtype` that a lossy round trip would change: NaN payloads,
    negative zeros, every byte value (bool: 0 and 1 only)."""
    if dtype == "bool":
        return bytes(i % 2 for i in range(n))
    data = bytearray(os.urandom(storage(dtype, n)))
    if dtype == "float32" and n >= 4:
        data[:16] = struct.pack("<IIII", 0x7FC00001, 0xFFA00002, 0x80000000, 0x7F800000)
    if dtype == "float64" and n >= 2:
        data[:16] = struct.pack("<QQ", 0x7FF0000000000123, 0x8000000000000000)
    return bytes(data)


def round_trip(t, protocol, out_of_band=False):
    if not out_of_band:
        return pickle.loads(pickle.dumps(t, protocol=protocol))
    buffers = []
    data = pickle.dumps(t, protocol=protocol, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=buffers)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_every_dtype_round_trips_bit_exactly(dtype, protocol):
    n = 10
    data = tricky_bytes(dtype, n)
    if dtype == "bool":  # bytes may not be exported as bool: Rust's own bools
        t = ext.arange("bool", n)
    else:
        t = ext.from_bytes(data, dtype, [2, 5] if DTYPES[dtype] >= 8 else [n])
    u = round_trip(t, protocol)
    assert (u.dtype, u.shape, u.device, u.read_only) == (t.dtype, t.shape, "cpu:0", False)
    assert raw(u, len(data)) == data
    assert u.data_ptr != t.data_ptr


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_values_shape_and_flags_survive_every_protocol(protocol):
    t = ext.arange("float32", 12)
    u = round_trip(t, protocol)
    assert type(u) is type(t)
    assert np.from_dlpack(u).tolist() == list(range(12))
    assert (u.shape, u.strides, u.dtype, u.read_only) == ((12,), (1,), "float32", False)
    r = round_trip(ext.from_bytes(bytes(8), "float32", [2], read_only=True), protocol)
    assert r.read_only
    if VERSIONED_NUMPY:
        assert not np.from_dlpack(r).flags.writeable


@needs_buffer_protocol
def test_protocol_5_hands_the_tensors_own_memory_out_of_band():
    t = ext.arange("int64", 1000)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert len(data) < 600, "the bytes are not in the stream"
    (buffer,) = buffers
    assert isinstance(buffer, pickle.PickleBuffer)
    view = buffer.raw()
    assert (view.nbytes, view.readonly) == (8000, False)
    assert ctypes.addressof(ctypes.c_char.from_buffer(view)) == t.data_ptr
    u = pickle.loads(data, buffers=buffers)
    # Kept without a copy (as NumPy's unpickled array shares an out-of-band buffer).
    assert u.data_ptr == t.data_ptr
    ctypes.c_int64.from_address(u.data_ptr).value = -5
    assert np.from_dlpack(t)[0] == -5


@needs_buffer_protocol
@pytest.mark.parametrize("read_only", [False, True])
def test_protocol_5_in_band_writes_the_bytes_once(read_only):
    n = 1 << 16
    t = ext.from_bytes(bytes(4 * n), "float32", [n], read_only=read_only)
    data = pickle.dumps(t, protocol=5)
    assert 4 * n < len(data) < 4 * n + 600
    u = pickle.loads(data)
    assert (u.read_only, u.shape) == (read_only, (n,))


def test_older_protocols_carry_the_bytes_once_and_restore_writable_copies():
    n = 1 << 16
    t = ext.arange("float32", n)
    for protocol in (2, 3, 4):
        data = pickle.dumps(t, protocol=protocol)
        if protocol > 2:  # protocol 2 spells bytes as latin-1 text, NumPy's arrays too
            assert 4 * n < len(data) < 4 * n + 600
        u = pickle.loads(data)
        assert not u.read_only  # writable, as NumPy's unpickled arrays are
        write_float32(u, 0, 42)
        assert read_float32(t, 0) == 0


def bytes_address(b):
    return ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_in_band_bytes_become_the_writable_tensors_memory_as_numpys_do(protocol):
    # Found measuring the worker path: protocol 4 (multiprocessing's default) copied the
    # unpickled bytes once more than NumPy, which keeps them as a writable array's memory.
    import tracemalloc

    n = 1 << 16
    t = ext.arange("float32", n)
    data = pickle.dumps(t, protocol=protocol)
    tracemalloc.start()
    try:
        u = pickle.loads(data)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept >= 4 * n, "the unpickled bytes object is the tensor's memory"
    assert not u.read_only and u.data_ptr % 16 == 0
    write_float32(u, 0, 42)
    assert (read_float32(u, 0), read_float32(t, 0)) == (42, 0)
    # The same, by address: the state's bytes object (held by the state tuple only).
    reducer, (state,) = t.__reduce_ex__(protocol)
    address = bytes_address(state[-1])
    u = reducer(state)
    assert u.data_ptr == address and not u.read_only


def test_bytes_held_elsewhere_small_or_for_a_read_only_tensor_are_not_written():
    n = 1 << 16
    t = ext.arange("float32", n)
    reducer, (state,) = t.__reduce_ex__(4)
    # Held by two more than the state tuple (the unpickler's memo is one, and the most a
    # genuine pickle's bytes have): copied for a writable tensor.
    held, also = state[-1], [state[-1]]
    u = reducer(state)
    assert u.data_ptr != bytes_address(held) and u.data_ptr % 64 == 0 and not u.read_only
    write_float32(u, 0, 42)
    assert held[:4] == bytes(4) and also[0] is held
    del held, also
    small = ext.arange("float32", 250)  # 1000 bytes: copied, as NumPy copies them
    reducer, (state,) = small.__reduce_ex__(4)
    address = bytes_address(state[-1])
    assert reducer(state).data_ptr != address
    frozen = ext.from_bytes(bytes(4 * n), "float32", [n], read_only=True)
    reducer, (state,) = frozen.__reduce_ex__(4)
    held = state[-1]  # kept without a copy, read-only
    r = reducer(state)
    assert r.read_only and r.data_ptr == bytes_address(held)


def test_a_strided_view_is_gathered_once_and_restored_row_major():
    values = np.arange(12, dtype=np.int32)
    # (4, 3) with element strides (1, 4): the transpose of a row-major (3, 4).
    t = ext.from_bytes(values.tobytes(), "int32", [4, 3], strides=[1, 4])
    expected = values.reshape(3, 4).T.tolist()
    for protocol in (2, 5):
        data = pickle.dumps(t, protocol=protocol)
        assert len(data) < 48 + 600
        u = pickle.loads(data)
        assert (u.shape, u.strides) == ((4, 3), (3, 1))
        assert np.from_dlpack(u).tolist() == expected


@needs_buffer_protocol
def test_an_aligned_out_of_band_buffer_is_kept_and_a_misaligned_one_copied_once():
    t = ext.arange("float64", 8)
    reducer, (state,) = t.__reduce_ex__(5)
    backing = np.zeros(8 * 8 + 64 + 8, dtype=np.uint8)
    start = (-backing.ctypes.data) % 64
    for offset, kept in [(0, True), (8, True), (1, False), (4, False)]:
        window = backing[start + offset : start + offset + 64]
        window[:] = np.frombuffer(np.arange(8, dtype=np.float64).tobytes(), np.uint8)
        u = reducer(state[:-1] + (memoryview(window),))
        assert (u.data_ptr == window.ctypes.data) is kept, offset
        if not kept:
            assert u.data_ptr % 64 == 0, "copied into an aligned buffer"
        assert np.from_dlpack(u).tolist() == list(range(8))


@needs_buffer_protocol
def test_a_read_only_out_of_band_buffer_gives_a_read_only_tensor_without_a_copy():
    t = ext.arange("float32", 16)
    reducer, (state,) = t.__reduce_ex__(5)
    store = np.arange(16, dtype=np.float32)
    store.flags.writeable = False
    u = reducer(state[:-1] + (memoryview(store),))
    assert u.read_only and u.data_ptr == store.ctypes.data
    a = np.from_dlpack(u)
    assert not a.flags.writeable and a.ctypes.data == store.ctypes.data


@needs_buffer_protocol
def test_the_pickle_buffer_keeps_the_tensor_alive(drops):
    t = ext.arange("float32", 4)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    del t
    assert drops.dropped == 0, "the buffer still holds the memory"
    u = pickle.loads(data, buffers=buffers)
    del buffers
    assert drops.dropped == 0, "the unpickled tensor holds it now"
    assert np.from_dlpack(u).tolist() == [0, 1, 2, 3]
    del u
    assert (drops.created, drops.dropped) == (1, 1)


def test_pickling_keeps_no_reference(drops):
    t = ext.arange("float32", 1000)
    copies = [pickle.loads(pickle.dumps(t, protocol=p)) for p in PROTOCOLS]
    del t
    assert (drops.created, drops.dropped) == (1, 1)
    assert all(np.from_dlpack(u)[999] == 999 for u in copies)


def test_ten_thousand_round_trips_leak_nothing(drops):
    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    t = ext.arange("float32", 1 << 14)  # 64 KiB: a leak of each copy is 640 MB
    for protocol in (4, 5):
        for _ in range(200):
            pickle.loads(pickle.dumps(t, protocol=protocol))
    before = rss()
    for i in range(10_000):
        assert pickle.loads(pickle.dumps(t, protocol=4 + i % 2)).shape == (1 << 14,)
    assert rss() - before < 16 << 20
    del t
    assert (drops.created, drops.dropped) == (1, 1)


def test_a_class_in_its_module_is_the_pickles_reconstructor_and_no_lookup_runs():
    # Found measuring the worker path: out-of-band loads spent 17,000 of its 49,000
    # instructions on the lookup of the module's reconstructor (importlib, ctypes), which a
    # class pickle finds by name (dlpack_testext calls DLPackTensor::add_to_module) needs not.
    t = ext.arange("float32", 4)
    reducer, _ = t.__reduce_ex__(5)
    assert reducer.__self__ is ext.DLPackTensor and reducer.__name__ == "_pyo3_dlpack_0_4_restore_v1"
    for protocol in PROTOCOLS:
        data = pickle.dumps(t, protocol=protocol)
        assert b"ctypes" not in data and b"install" not in data and b"importlib" not in data
        assert b"DLPackTensor" in data and b"_pyo3_dlpack_0_4_restore_v1" in data
        assert np.from_dlpack(pickle.loads(data)).tolist() == [0, 1, 2, 3]


def test_a_pickle_of_many_tensors_names_the_reconstructor_once():
    ts = [ext.arange("uint8", 3) for _ in range(50)]
    one, fifty = len(pickle.dumps(ts[:1], protocol=5)), len(pickle.dumps(ts, protocol=5))
    assert fifty - one < 49 * 80
    restored = pickle.loads(pickle.dumps([ts[0], ts[0]], protocol=5))
    assert restored[0] is restored[1], "pickle's memo keeps identity, as for NumPy arrays"


# Copies


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_copies_are_independent_and_keep_dtype_shape_and_flags(copier):
    t = ext.arange("int16", 6)
    c = copier(t)
    assert type(c) is type(t)
    assert (c.dtype, c.shape, c.read_only) == ("int16", (6,), False)
    assert c.data_ptr != t.data_ptr
    ctypes.c_int16.from_address(c.data_ptr).value = 99
    assert np.from_dlpack(t)[0] == 0 and np.from_dlpack(c)[0] == 99
    r = copier(ext.from_bytes(bytes(4), "bfloat16", [2], read_only=True))
    assert (r.dtype, r.read_only) == ("bfloat16", True)
    strided = copier(ext.from_bytes(np.arange(6, dtype=np.int32).tobytes(), "int32", [3, 2],
                                    strides=[1, 3]))
    assert np.from_dlpack(strided).tolist() == [[0, 3], [1, 4], [2, 5]]
    assert strided.strides == (2, 1)


def test_deepcopy_of_a_container_copies_each_tensor_once():
    t = ext.arange("float32", 3)
    a, b = copy.deepcopy([t, t])
    assert a is b and a.data_ptr != t.data_ptr


def test_deepcopy_takes_any_memo_as_numpys_does():
    t = ext.arange("float32", 3)
    for memo in ({}, None):
        c = t.__deepcopy__(memo)
        assert np.from_dlpack(c).tolist() == [0.0, 1.0, 2.0] and c.data_ptr != t.data_ptr
    np.arange(3).__deepcopy__(None)  # NumPy's own takes it too


def test_a_subclass_with_state_of_its_own_is_refused_not_silently_truncated():
    s = ext.Spectrum(4)
    for attempt in [lambda: pickle.dumps(s), lambda: copy.copy(s), lambda: copy.deepcopy(s)]:
        with pytest.raises(TypeError, match="cannot (pickle|copy) 'Spectrum' object: it extends "
                           "DLPackTensor with state of its own"):
            attempt()


# Forged payloads: the state is input.


def forged_cases():
    good = (1, (2, 32, 1), (2,), (1, 0), False)
    data = bytes(8)
    return [
        ("not a tuple", [1], "expected the state to be a tuple, got list"),
        ("too short", good, "expected a state of 6 items, got 5"),
        ("later format", (2,) + good[1:] + (data,), "expected payload format 1, got 2"),
        ("format not an int", ("1",) + good[1:] + (data,), "expected the payload format, got str"),
        ("unknown dtype code", (1, (99, 8, 1)) + good[2:] + (data,), "99"),
        ("bool of 16 bits", (1, (6, 16, 1)) + good[2:] + (data,), "bits"),
        ("vector of floats", (1, (2, 32, 4)) + good[2:] + (data,), "lanes"),
        ("negative extent", (1, (2, 32, 1), (2, -1)) + good[3:] + (data,),
         "expected extents >= 0, got -1 in shape [2, -1]"),
        ("size overflows", (1, (2, 32, 1), (2**62, 2**62)) + good[3:] + (data,),
         "does not fit in memory"),
        ("extent not an int", (1, (2, 32, 1), ("2",)) + good[3:] + (data,),
         "expected the shape (a tuple of ints), got tuple"),
        ("too many dimensions", (1, (2, 32, 1), (1,) * 1025) + good[3:] + (data,),
         "expected at most 1024 dimensions, got 1025"),
        ("short bytes", good + (bytes(7),),
         "expected 8 bytes for a float32 tensor of shape [2], got 7"),
        ("long bytes", good + (bytes(9),),
         "expected 8 bytes for a float32 tensor of shape [2], got 9"),
        ("no buffer", good + (12345,), "expected the tensor's bytes as a buffer, got int"),
        ("negative device index", good[:3] + ((1, -1), False, data),
         "expected a device index >= 0, got -1"),
        ("a CPU but the first", good[:3] + ((1, 5), False, data),
         "expected the CPU as cpu:0, got cpu:5"),
        ("empty, other extents overflowing", (1, (2, 64, 1), (0, 2**40, 2**40)) + good[3:] + (b"",),
         "does not fit in memory"),
        ("device it cannot restore", good[:3] + ((10, 0), False, data),
         "a tensor on rocm:0 cannot be restored here"),
    ]


@pytest.mark.parametrize("name, state, message", forged_cases(), ids=[c[0] for c in forged_cases()])
def test_a_forged_payload_is_an_unpickling_error_naming_what_is_wrong(name, state, message):
    reducer, _ = ext.arange("float32", 2).__reduce_ex__(5)
    if name == "no buffer" and not BUFFER_PROTOCOL:
        message = "expected the tensor's bytes as a buffer, got int"
    with pytest.raises(pickle.UnpicklingError, match="cannot unpickle a DLPackTensor: ") as err:
        reducer(state)
    assert message in str(err.value)


def test_a_forged_payload_fails_the_same_way_through_pickle_loads():
    t = ext.from_bytes(bytes(8), "float32", [2])
    data = pickle.dumps(t, protocol=4)
    forged = data.replace(b"\x85\x94", b"\x86\x94", 0)  # unchanged: the reference
    assert pickle.loads(forged).shape == (2,)
    # The shape (2,) pickled as a BININT1 2 in a TUPLE1: make it 3 (12 bytes wanted).
    marker = b"K\x02\x85"
    assert data.count(marker) == 1
    with pytest.raises(pickle.UnpicklingError, match="expected 12 bytes for a float32 tensor "
                       r"of shape \[3\], got 8"):
        pickle.loads(data.replace(marker, b"K\x03\x85"))
    with pytest.raises((pickle.UnpicklingError, EOFError)):
        pickle.loads(data[:-20])


@needs_buffer_protocol
def test_a_non_contiguous_buffer_is_refused():
    reducer, (state,) = ext.arange("uint8", 4).__reduce_ex__(5)
    strided = memoryview(bytes(8))[::2]
    with pytest.raises(pickle.UnpicklingError, match="one contiguous buffer"):
        reducer(state[:-1] + (strided,))


# Other processes


def test_a_fresh_process_unpickles_without_having_imported_the_extensions(tmp_path):
    # matrix_ops never calls DLPackTensor::add_to_module; dlpack_testext does.
    matrix_ops = pytest.importorskip("matrix_ops", reason="the matrix-ops example is not built")
    made = matrix_ops.matvec(np.eye(2, dtype=np.float32), np.array([3, 4], dtype=np.float32))
    assert type(made).__module__ == "pyo3_dlpack"
    tensors = [ext.arange("float32", 3), made, ext.from_bytes(bytes(2), "bfloat16", [1])]
    for protocol in (2, 5):
        path = tmp_path / f"tensors-{protocol}.pickle"
        path.write_bytes(pickle.dumps(tensors, protocol=protocol))
        out = run_fresh(
            f"""
            import pickle, sys
            assert not any(m.startswith(("dlpack_testext", "matrix_ops")) for m in sys.modules)
            ts = pickle.loads(open({str(path)!r}, "rb").read())
            import numpy as np
            print([np.from_dlpack(t).tolist() for t in ts[:2]], ts[2].dtype)
            print(type(ts[0]) is type(ts[1]), sorted(type(t).__module__ for t in ts))
            """,
            silent=True,
        )
        assert out == (
            "[[0.0, 1.0, 2.0], [3.0, 4.0]] bfloat16\nFalse "
            "['dlpack_testext.dlpack_testext', 'dlpack_testext.dlpack_testext', 'pyo3_dlpack']\n"
        )


def test_a_stray_install_call_and_lazy_modules_do_not_derail_pickling(tmp_path):
    # Found by review: the install function trusted the module it was named (one stray
    # call pointed every later pickle at `json`), and finding the extension module read
    # every module's `__file__` (running a lazy module's import) and opened every file.
    lazy = tmp_path / "lazy_mod.py"
    lazy.write_text("print('LAZY MODULE EXECUTED')\n")
    out = run_fresh(
        f"""
        import ctypes, importlib.util, pickle, sys
        sys.path.insert(0, {str(tmp_path)!r})
        spec = importlib.util.find_spec("lazy_mod")
        spec.loader = importlib.util.LazyLoader(spec.loader)
        lazy = importlib.util.module_from_spec(spec)
        sys.modules["lazy_mod"] = lazy
        spec.loader.exec_module(lazy)
        import dlpack_testext as ext
        library = ctypes.pydll[sys.modules["dlpack_testext.dlpack_testext"].__file__]
        try:
            library.pyo3_dlpack_0_4_install_v1(b"json")
        except ImportError as err:
            print("refused:", err)
        t = pickle.loads(pickle.dumps(ext.arange("float32", 3), protocol=5))
        print(t.shape)
        """,
        silent=True,
    )
    assert out == (
        "refused: module json does not hold the pyo3-dlpack code this pickle names\n(3,)\n"
    )


def test_a_forged_bool_byte_reads_as_true_in_a_conversion_copy():
    # Found by review: the conversion copy took a bool's byte as its value (2 -> 2.0).
    reducer, _ = ext.arange("float32", 2).__reduce_ex__(5)
    t = reducer((1, (6, 8, 1), (2,), (1, 0), False, bytearray(b"\x02\x00")))
    assert ext.cast_f64(t) == ([1.0, 0.0], [2])


def test_a_tensor_no_process_could_restore_is_refused_when_pickled_and_copied():
    # Found by review: rocm_host and tpu_host tensors pickled, but never loaded.
    memory = np.arange(4, dtype=np.float32)
    for device_type, name in [(11, "rocm_host:0"), (20, "tpu_host:0")]:
        t = ext.over_memory(memory.ctypes.data, 16, device_type, 0, [4])
        with pytest.raises(pickle.PicklingError, match=f"cannot pickle: a tensor on {name} "
                           "cannot be restored here"):
            pickle.dumps(t)
        with pytest.raises(BufferError, match=f"cannot copy: a tensor on {name}"):
            copy.copy(t)


def test_a_replaced_unpickling_error_is_no_panic(monkeypatch):
    # The error class is looked up as Python code raises it; one replaced by a non-class
    # gave a PanicException (a `cast_into().expect`).
    reducer, _ = ext.arange("float32", 2).__reduce_ex__(5)
    monkeypatch.setattr(pickle, "UnpicklingError", 5)
    with pytest.raises(TypeError):
        reducer((1, (2, 32, 1), (2,), (1, 0), False, bytes(7)))


def test_memory_of_unknown_length_is_not_read_to_pickle_or_copy():
    # Found by review: pickling and copy.copy read raw memory that reports no length
    # (a user's TensorData whose byte_len is None), which copy=True refuses to read.
    t = ext.unmeasured(4)
    assert np.from_dlpack(t).tolist() == [0.0, 1.0, 2.0, 3.0]  # exported as described
    message = "^cannot read this tensor's bytes: the length of its memory is unknown"
    for protocol in (5, 4):
        with pytest.raises(BufferError, match=message):
            pickle.dumps(t, protocol=protocol)
    with pytest.raises(BufferError, match=message):
        copy.copy(t)

