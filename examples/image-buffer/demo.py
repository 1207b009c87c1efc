"""`make demo`: tensors made in Rust, used by NumPy, PyTorch and JAX without copies."""

import numpy as np
import torch

import image_buffer

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # JAX is optional for the demo
    jax = None


def show(step, detail):
    print(f"  {step:<44} {detail}")


print("pyo3-dlpack demo: a Rust image pipeline shares its buffers with Python frameworks\n")

image = image_buffer.gradient(480, 640)
print(f"Rust made {image!r} at 0x{image.data_ptr:x}")

a = np.from_dlpack(image)
show("NumPy np.from_dlpack(image)", f"shape={a.shape} dtype={a.dtype} writable={a.flags.writeable}")
show("  same memory as Rust?", a.ctypes.data == image.data_ptr)

t = torch.from_dlpack(image)
show("PyTorch torch.from_dlpack(image)", f"shape={tuple(t.shape)} dtype={t.dtype}")
show("  same memory as Rust?", t.data_ptr() == image.data_ptr)

a[0, 0] = [255, 0, 255]
show("NumPy writes pixel (0, 0) = magenta", f"torch sees {t[0, 0].tolist()}")

chw = torch.from_dlpack(image_buffer.gradient(480, 640, channels_first=True))
show("PyTorch, channels-first view (3, H, W)", f"stride={chw.stride()} mean red={chw[0].float().mean():.1f}")

if jax is not None:
    j = jnp.from_dlpack(image)
    pointer = j.addressable_data(0).unsafe_buffer_pointer()
    show("JAX jnp.from_dlpack(image)", f"shape={j.shape} dtype={j.dtype}")
    show("  same memory as Rust? (64-byte aligned)", pointer == image.data_ptr)
    show("  JAX mean green", f"{float(j[..., 1].mean()):.1f}")
else:
    show("JAX", "not installed, skipped")

signal = image_buffer.sine(8, 1.0)
s = torch.from_dlpack(signal)
show("PyTorch torch.from_dlpack(sine(8, 1.0))", [round(v, 3) for v in s.tolist()])

del a, t, chw, image
print("\nEvery consumer released its view; Rust freed each buffer exactly once.")
