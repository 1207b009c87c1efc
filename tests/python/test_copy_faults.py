"""A `copy=True` export allocates its buffer so that glibc's malloc reuses it.

glibc serves a request above its mmap threshold with a fresh mapping, and raises that
(dynamic) threshold when such a chunk is freed. A page-aligned request (`posix_memalign`)
of 1 MiB, in a process where nothing larger was freed before, got a fresh mapping on every
call: the freed chunk, trimmed at its front for the alignment, is smaller than the request,
so the threshold never rose above it, and every one of the copy's 256 pages was faulted in
again (257 minor faults per call, 21x the copy's time). The buffer is now a plain `malloc`,
aligned inside it.
"""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc only",
)

# A fresh process: the history of its mallocs decides where the threshold is.
SCRIPT = """
import resource
import dlpack_testext as ext
t = ext.arange("float32", 512 * 512, "vec")  # 1 MiB
t.__dlpack__(copy=True)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    t.__dlpack__(copy=True)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
"""


def test_a_1_mib_copy_reuses_freed_memory_instead_of_faulting_in_every_page():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    faults_per_call = float(out.stdout)
    # 256 pages; 257 faults per call before. A few come from the heap's top growing back.
    assert faults_per_call < 32, f"{faults_per_call} minor faults per 1 MiB copy=True"
