"""DLPackTensors in distributed engines, for real: a local Ray cluster and a Dask
LocalCluster of worker processes, each started here (on the loopback address only). Remote
tasks call the Rust extension and return its tensors; `ray.put`/`ray.get` and
`scatter`/`gather` round trips; and the zero-copy proof: a tensor Ray returns lies in the
object store's shared memory, read-only, shared with NumPy, and that memory goes back to the
store when the last reference is dropped."""

import os

import numpy as np
import pytest

import dlpack_testext as ext
import travel_work

HERE = os.path.dirname(os.path.abspath(__file__))


def mapping_of(address):
    """The file /proc/self/maps names for the mapping holding `address` ('' if anonymous)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(end, 16) for end in fields[0].split("-"))
            if low <= address < high:
                return " ".join(fields[5:])
    raise AssertionError(f"{address:#x} is in no mapping")


@pytest.fixture(scope="module")
def ray():
    ray = pytest.importorskip("ray", reason="Ray is not installed for this interpreter")
    # Workers import travel_work: they inherit the environment the cluster starts with.
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, saved]))
    try:
        ray.init(
            num_cpus=2,
            object_store_memory=96 << 20,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    yield ray
    ray.shutdown()


def test_a_ray_task_returns_a_tensor_made_in_rust(ray):
    make, double = ray.remote(travel_work.make), ray.remote(travel_work.double)
    t = ray.get(make.remote(5))
    assert type(t) is ext.DLPackTensor
    assert np.from_dlpack(t).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    # A tensor as a task's argument, and a task's result as the next one's.
    doubled = ray.get(double.remote(make.remote(3)))
    assert np.from_dlpack(doubled).tolist() == [0.0, 2.0, 4.0]
    assert ray.get(ray.remote(travel_work.total).remote(ext.arange("float32", 4))) == 6.0


def test_ray_get_maps_the_object_stores_memory_read_only_without_a_copy(ray):
    t = ext.arange("float32", 1 << 20)  # 4 MiB: in shared memory, not inlined
    u = ray.get(ray.put(t))
    assert u.data_ptr != t.data_ptr
    assert mapping_of(u.data_ptr).startswith("/dev/shm/plasma"), mapping_of(u.data_ptr)
    assert u.read_only and (u.dtype, u.shape) == ("float32", (1 << 20,))
    a = np.from_dlpack(u)
    assert a.ctypes.data == u.data_ptr and not a.flags.writeable
    assert a[123456] == 123456


def test_the_store_gets_its_memory_back_when_the_last_reference_goes(ray):
    t = ext.arange("float32", 2 << 20)  # 8 MiB
    # 40 tensors of 8 MiB through a 96 MiB store: each in the store's shared memory, which
    # works only if each one's memory went back when it was dropped.
    for _ in range(40):
        u = ray.get(ray.put(t))
        assert mapping_of(u.data_ptr).startswith("/dev/shm/plasma")
        del u
    # The control: kept alive, the store fills, and Ray falls back to memory outside it.
    kept = [ray.get(ray.put(t)) for _ in range(16)]
    assert not all(mapping_of(u.data_ptr).startswith("/dev/shm/plasma") for u in kept)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="Dask is not installed here")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_a_dask_task_returns_a_tensor_made_in_rust(dask_client):
    t = dask_client.submit(travel_work.make, 6).result()
    assert type(t) is ext.DLPackTensor
    assert np.from_dlpack(t).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    big = dask_client.submit(travel_work.make, 1 << 20).result()
    assert np.from_dlpack(big)[-1] == (1 << 20) - 1


def test_dask_scatter_and_gather_round_trip_a_tensor(dask_client):
    t = ext.from_bytes(np.arange(12, dtype=np.int64).tobytes(), "int64", [3, 4])
    [remote] = dask_client.scatter([t])
    assert dask_client.submit(travel_work.total, remote).result() == 66.0
    back = dask_client.gather(remote)
    assert (back.shape, back.dtype) == ((3, 4), "int64")
    assert np.from_dlpack(back).tolist() == np.arange(12).reshape(3, 4).tolist()
