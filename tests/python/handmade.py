"""Hand-made DLPack capsules (ctypes), with a deleter that counts its calls.

They stand in for lying or broken producers: every field can be set to a value
no real framework would send.
"""

import ctypes

from conftest import DLManagedTensor, DLManagedTensorVersioned

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Capsule names must outlive the capsules: CPython keeps the char pointer.
NAMES = {
    name: ctypes.create_string_buffer(name.encode())
    for name in ("dltensor", "dltensor_versioned", "used_dltensor", "used_dltensor_versioned", "bogus")
}

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class HandMade:
    """One managed tensor in ctypes memory, wrapped in a capsule (no destructor)."""

    def __init__(
        self,
        values=b"\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00",
        dtype=(0, 16, 1),
        shape=(2, 3),
        strides=None,
        byte_offset=0,
        device=(1, 0),
        name="dltensor_versioned",
        version=(1, 3),
        flags=0,
        ndim=None,
        null_shape=False,
        null_data=False,
    ):
        self.deleted = 0
        self.buffer = ctypes.create_string_buffer(values, max(len(values), 1))
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        versioned = name.endswith("versioned")
        self.managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        if versioned:
            self.managed.version.major, self.managed.version.minor = version
            self.managed.flags = flags
        t = self.managed.dl_tensor
        t.data = None if null_data else ctypes.addressof(self.buffer)
        t.device.device_type, t.device.device_id = device
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
        if not null_shape:
            t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        if self.strides is not None:
            t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = byte_offset
        self._deleter = DELETER(self._delete)
        self.managed.deleter = ctypes.cast(self._deleter, ctypes.c_void_p)
        self.capsule = _api.PyCapsule_New(ctypes.addressof(self.managed), NAMES[name], None)

    def _delete(self, address):
        assert address == ctypes.addressof(self.managed)
        self.deleted += 1
