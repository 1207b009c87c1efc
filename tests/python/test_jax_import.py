"""Imports of `jax.Array`s: an array of jaxlib's own type on one device is exported by the
C++ function JAX's `__dlpack__` ends in, without JAX's Python `__dlpack__` and
`__dlpack_device__`; everything else (other options, sharded arrays, objects that only
claim to be JAX's) takes the `__dlpack__` path, with JAX's own errors."""

import pytest

import dlpack_testext as ext

from conftest import run_fresh

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture
def dlpack_calls():
    """Counts calls of `ArrayImpl.__dlpack__` and `__dlpack_device__` (JAX defines both in
    Python on its C++ type), restored after the test."""
    array_type = type(jnp.zeros(1))
    calls = {"__dlpack__": 0, "__dlpack_device__": 0}
    originals = {name: array_type.__dict__[name] for name in calls}

    def counting(name):
        original = originals[name]

        def method(self, *args, **kwargs):
            calls[name] += 1
            return original(self, *args, **kwargs)

        return method

    for name in calls:
        setattr(array_type, name, counting(name))
    try:
        yield calls
    finally:
        for name, original in originals.items():
            setattr(array_type, name, original)


def test_a_jax_array_is_imported_in_place_without_its_python_methods(dlpack_calls):
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    d = ext.describe(x)
    assert dlpack_calls == {"__dlpack__": 0, "__dlpack_device__": 0}
    assert d["data_ptr"] == x.unsafe_buffer_pointer()
    assert (d["shape"], d["dtype"], d["device"]) == ((3, 4), "float32", (1, 0))
    # A legacy capsule (JAX before 0.12 makes no other): writability unknown, read-only here.
    assert d["version"] is None and d["read_only"] is True
    assert ext.to_list(x, "float32") == list(range(12))


def test_every_import_of_the_same_array_sees_the_same_memory(dlpack_calls):
    x = jnp.arange(5, dtype=jnp.int32) * 3
    pointers = {ext.describe(x)["data_ptr"] for _ in range(3)}
    assert pointers == {x.unsafe_buffer_pointer()}
    assert ext.to_list(x, "int32") == [0, 3, 6, 9, 12]
    assert dlpack_calls["__dlpack__"] == 0


def test_options_other_than_the_defaults_go_through_dlpack(dlpack_calls):
    x = jnp.arange(4, dtype=jnp.float32)
    d = ext.import_with(x, copy=False)
    assert d["data_ptr"] == x.unsafe_buffer_pointer()
    assert dlpack_calls["__dlpack__"] == 1


@pytest.mark.skipif(not hasattr(jnp, "float4_e2m1fn"), reason="JAX without float4_e2m1fn (0.4.38 has none)")
def test_jax_float4_is_read_a_byte_per_element_as_jax_stores_it():
    # JAX exports float4_e2m1fn as (17, 4, 1) without the padded flag, a byte
    # per element; read packed (3 bytes for 6 elements) the bytes were misread.
    values = [0.5, 1.0, 1.5, 2.0, 3.0, -1.0]
    a = jnp.array(values, dtype=jnp.float4_e2m1fn)
    for described in [ext.describe(a), ext.import_with(a, max_version=(1, 0))]:
        assert (described["numel"], described["nbytes"]) == (6, 6)
        assert described["data_ptr"] == a.unsafe_buffer_pointer()
    # Our export packs sub-byte types only: refused, not misread.
    with pytest.raises(ValueError, match="float4_e2m1fn elements are padded to a byte each"):
        ext.reexport(a)

    class ClaimsToBeJax:
        """Hands on JAX's capsule: not a jax.Array, so the capsule is read as it says."""

        def __dlpack__(self, **kwargs):
            return a.__dlpack__()

    assert ext.describe(ClaimsToBeJax())["nbytes"] == 3


def test_a_deleted_array_raises_jaxlib_error():
    x = jnp.ones(4)
    x.delete()
    with pytest.raises(RuntimeError, match="deleted array"):
        ext.describe(x)


SHARDED = """
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import dlpack_testext as ext

    assert len(jax.devices()) == 2
    mesh = Mesh(np.array(jax.devices()), ("i",))
    for spec in (P("i"), P()):  # split over both devices, and replicated on both
        z = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, spec))
        try:
            ext.describe(z)
        except BufferError as err:
            print("refused:", err)
        else:
            print("imported")
    one = jax.device_put(jnp.arange(8.0), jax.devices()[1])
    print("device 1:", ext.describe(one)["shape"], ext.to_list(one, "float32") == list(range(8)))
"""


def test_arrays_on_several_devices_are_refused_as_jax_refuses_them():
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = run_fresh(SHARDED, env=env).splitlines()
    # The C++ export alone would hand over the first shard, (4,) of (8,).
    assert out[:2] == ["refused: __dlpack__ only supported for unsharded arrays."] * 2
    assert out[2] == "device 1: (8,) True"


# A class that calls itself jaxlib's array, in a module that calls itself jaxlib, whose
# "export" returns no capsule, or a capsule of another array: the first falls back to the
# object's `__dlpack__`, the second is read as the capsule it is; no crash either way.
FAKE_JAXLIB = """
    import sys, types
    import numpy as np
    import dlpack_testext as ext

    real = np.arange(6, dtype=np.float32)
    fake_module = types.ModuleType("jaxlib.fake")
    sys.modules["jaxlib.fake"] = fake_module

    class ArrayImpl:
        sharding = None
        def __dlpack__(self, **kwargs):
            return real.__dlpack__(**kwargs)
        def __dlpack_device__(self):
            return (1, 0)

    class SingleDeviceSharding:
        pass

    ArrayImpl.__module__ = "jaxlib.fake"
    fake_module.ArrayImpl = ArrayImpl
    fake_module.SingleDeviceSharding = SingleDeviceSharding
    export = [lambda obj: 42]
    fake_module.buffer_to_dlpack_managed_tensor = lambda obj: export[0](obj)
    print(ext.to_list(ArrayImpl(), "float32"))
    ArrayImpl.sharding = SingleDeviceSharding()
    print(ext.to_list(ArrayImpl(), "float32"))
    other = np.full(3, 7, dtype=np.float32)
    export[0] = lambda obj: other.__dlpack__()
    print(ext.to_list(ArrayImpl(), "float32"))
"""


def test_a_fake_jaxlib_gets_no_more_than_its_own_dlpack():
    out = run_fresh(FAKE_JAXLIB).splitlines()
    assert out == [str([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])] * 2 + [str([7.0] * 3)]
