"""Device tensors that travel, against the stand-in CUDA driver (standin.py): a CUDA tensor
pickles as a host copy made after its stream (never a device pointer, never host bytes
labelled as a device), and is restored on its device through the driver, in memory of its
own that is freed with it; without a driver, unpickling fails naming the device."""

import pickle
import subprocess
import sys

from standin import needs_standin, run

pytestmark = needs_standin


def test_a_cuda_tensor_pickles_as_a_host_copy_after_its_stream_and_comes_back_on_its_device():
    out = run(
        """
        import copy, pickle
        memory = cuda.standin_alloc(1, 64, 0)  # device memory of device 1: PROT_NONE
        producer = cuda.standin_stream_create(1)
        write(producer, memory, range(16))  # pending until something orders it
        t = ext.over_memory(memory, 64, 2, 1, [4, 4], stream=producer)
        for protocol in (2, 5):
            data = pickle.dumps(t, protocol=protocol)
            assert memory.to_bytes(8, "little") not in data, "a device pointer in the pickle"
            u = pickle.loads(data)
            assert (u.device, u.shape, u.dtype, u.read_only) == ("cuda:1", (4, 4), "float32", False)
            assert u.data_ptr != memory and cuda.standin_allocated(u.data_ptr) == 1
            assert device_floats(u.data_ptr, 16) == list(range(16))
            address = u.data_ptr
            del u
            assert cuda.standin_allocated(address) == 0, "freed with the tensor"
        assert cuda.standin_syncs(producer) == 2, "each host copy waited for the stream"
        c = copy.deepcopy(t)
        assert (c.device, c.data_ptr != memory) == ("cuda:1", True)
        assert device_floats(c.data_ptr, 16) == list(range(16))
        assert_clean()
        print("ok")
        """
    )
    assert out == "ok\n"


def test_a_strided_read_only_cuda_tensor_is_gathered_and_stays_read_only():
    out = run(
        """
        import pickle
        memory = cuda.standin_alloc(0, 24, 0)
        producer = cuda.standin_stream_create(0)
        write(producer, memory, range(6))
        t = ext.over_memory(memory, 24, 2, 0, [3, 2], strides=[1, 3], stream=producer,
                            read_only=True)
        u = pickle.loads(pickle.dumps(t, protocol=5))
        assert (u.device, u.read_only, u.strides) == ("cuda:0", True, (2, 1))
        print([float(x) for x in device_floats(u.data_ptr, 6)])
        assert_clean()
        """
    )
    assert out == "[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]\n"


def test_pinned_and_managed_tensors_come_back_as_pinned_and_managed_memory():
    out = run(
        """
        import pickle
        for kind, device_type in [(1, 3), (2, 13)]:  # pinned host, managed
            memory = cuda.standin_alloc(0, 32, kind)
            producer = cuda.standin_stream_create(0)
            write(producer, memory, range(8))
            t = ext.over_memory(memory, 32, device_type, 0, [8], stream=producer)
            u = pickle.loads(pickle.dumps(t, protocol=5))
            assert u.device == t.device and u.data_ptr != memory, (u, t)
            assert cuda.standin_allocated(u.data_ptr) == 1
            print(u.device, [float(x) for x in floats(u.data_ptr, 8)])
            address = u.data_ptr
            del u
            assert cuda.standin_allocated(address) == 0, "freed with the tensor"
        assert_clean()
        """
    )
    assert out == (
        "cuda_host:0 [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]\n"
        "cuda_managed:0 [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]\n"
    )


def test_without_a_driver_unpickling_a_cuda_tensor_fails_naming_the_device(tmp_path):
    path = tmp_path / "cuda.pickle"
    out = run(
        f"""
        import pickle
        memory = cuda.standin_alloc(1, 16, 0)
        t = ext.over_memory(memory, 16, 2, 1, [4])
        open({str(path)!r}, "wb").write(pickle.dumps(t, protocol=5))
        """
    )
    assert out == ""
    # A process whose driver cannot be loaded (a library that does not exist).
    code = f"""
import pickle
try:
    pickle.loads(open({str(path)!r}, "rb").read())
except pickle.UnpicklingError as err:
    print(err)
"""
    env = {"PYO3_DLPACK_CUDA_DRIVER": str(tmp_path / "no-such-libcuda.so")}
    import os

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, **env), timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(
        "cannot unpickle a DLPackTensor: restoring a tensor on cuda:1 failed: "
    ), done.stdout
    assert "no-such-libcuda.so" in done.stdout
