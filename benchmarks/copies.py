"""Host copies: pyo3-dlpack's one copy routine against NumPy's, in one process.

Rows: contiguous float32 copies of 1 MiB and 400 MiB through
`PyTensor::to_vec` and through `__dlpack__(copy=True)`, against NumPy's
`a.copy()`; transposed float32 squares gathered row-major (1, 64 and 400 MiB)
through `to_vec`, against `np.ascontiguousarray(a.T)` and
`a.T.astype("f4", order="C")`; the 1 MiB `copy=True` row again in fresh processes, each
with another heap behind it (a buffer of 0 to 400 MiB allocated and freed first: the
process-dependent page faults of 8cc07e4 showed in some processes only); with bench_ours built with its `candle` feature (as `make
copies-bench` does), the contiguous rows add `PyTensor::to_candle_tensor`. Each cell is the best of `--repeat` timings of
one call, the cells of a row timed round-robin; GB/s counts the bytes copied.

    python benchmarks/copies.py [--repeat N] [--before PATH/bench_ours.so] [--output FILE [--fresh]]

`--before` loads a second build of `bench_ours` (another commit's) into the same
process, for a before/after column. `--output` appends the run's tables to FILE
(record.py); `make copies-bench` runs it twice into benchmarks/results-copies.md.
"""

import argparse
import gc
import subprocess
import importlib.machinery
import importlib.util
import sys

import numpy as np

import record
from timing import round_robin


def load(path):
    loader = importlib.machinery.ExtensionFileLoader("bench_ours", path)
    spec = importlib.util.spec_from_file_location("bench_ours", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def emit(lines, line=""):
    """Prints a line of the run's Markdown and keeps it for the results file."""
    print(line, flush=True)
    lines.append(line)


def row(lines, name, nbytes, cells, repeat):
    """Times the cells round-robin; one table row of GB/s per cell."""
    speeds = {label: nbytes / t / 1e9 for label, t in round_robin(cells, repeat).items()}
    emit(lines, f"| {name} | " + " | ".join(f"{speeds[label]:.2f}" for label in cells) + " |")
    return speeds


HEAPS_MIB = (0, 1, 4, 16, 64, 400)


def child(heap_mib, repeat):
    """In a fresh process: `copy=True` of 1 MiB against `a.copy()`, after a buffer of
    `heap_mib` MiB was allocated, touched and freed. Prints both GB/s."""
    import bench_ours as ours

    if heap_mib:
        scratch = np.ones(heap_mib * 2**18, np.float32)
        del scratch
    gc.disable()
    a = np.ones(2**18, np.float32)
    t = ours.export_object(a.size)
    np.from_dlpack(t)[...] = 1
    best = round_robin({"ours": lambda: t.__dlpack__(max_version=(1, 3), copy=True),
                        "numpy": lambda: a.copy()}, repeat)
    print(a.nbytes / best["ours"] / 1e9, a.nbytes / best["numpy"] / 1e9)


def processes_table(lines, repeat):
    """The 1 MiB `copy=True` row in one fresh process per heap history."""
    emit(lines)
    emit(lines, "| copy=True, 1 MiB, fresh process after freeing | ours copy=True | "
         "NumPy a.copy() | ours ÷ NumPy |")
    emit(lines, "|---|---:|---:|---:|")
    for heap in HEAPS_MIB:
        out = subprocess.run([sys.executable, __file__, "--child", str(heap), "--repeat",
                              str(repeat)], check=True, capture_output=True, text=True).stdout
        ours, numpy = (float(x) for x in out.split())
        emit(lines, f"| {heap} MiB | {ours:.2f} | {numpy:.2f} | {ours / numpy:.2f}x |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--before", help="another build of bench_ours.so, for a before column")
    parser.add_argument("--output", help="append the run's tables to this Markdown file")
    parser.add_argument("--fresh", action="store_true", help="start the --output file over")
    args = parser.parse_args()
    if args.child is not None:
        return child(args.child, args.repeat)
    import bench_ours as ours

    before = load(args.before) if args.before else None
    sys.modules["bench_ours"] = ours
    gc.disable()
    start = record.started()
    lines = []
    emit(lines, f"bench_ours {getattr(ours, 'SOURCE', '?')}"
         + (f", before: {args.before}" if before else "")
         + f"; NumPy {np.__version__}; best of {args.repeat}; GB/s (bytes copied / time)")
    emit(lines)

    # `copy=True` reads the exporter's own memory (a Rust `Vec`, no huge pages), `a.copy()`
    # NumPy's array (advised to use huge pages): the last column is NumPy copying the
    # exporter's memory, the like-for-like floor of `copy=True`.
    header = ["ours to_vec", "ours copy=True", "NumPy a.copy()", "NumPy copy of copy=True's source"]
    if before:
        header.insert(1, "before to_vec")
    if hasattr(ours, "copy_to_candle"):  # built with the `candle` feature
        header.insert(-2, "ours to candle")
    emit(lines, "| contiguous float32 | " + " | ".join(header) + " |")
    emit(lines, "|---|" + "---:|" * len(header))
    for mib in (1, 400):
        a = np.ones(mib * 2**18, np.float32)
        t = ours.export_object(a.size)  # a DLPackTensor over as many float32s
        source = np.from_dlpack(t)  # the same memory, as NumPy's array
        source[...] = 1  # touched, as `a` is (untouched pages read as faults)
        cells = {"ours to_vec": lambda: ours.copy_to_vec(a)}
        if before:
            cells["before to_vec"] = lambda: before.copy_to_vec(a)
        cells["ours copy=True"] = lambda: t.__dlpack__(max_version=(1, 3), copy=True)
        if hasattr(ours, "copy_to_candle"):
            cells["ours to candle"] = lambda: ours.copy_to_candle(a)
        cells["NumPy a.copy()"] = lambda: a.copy()
        cells["NumPy copy of copy=True's source"] = lambda: source.copy()
        row(lines, f"{mib} MiB", a.nbytes, cells, args.repeat)
        del a, t, source

    header = ["ours to_vec", "NumPy ascontiguousarray", "NumPy astype(order=C)"]
    if before:
        header.insert(1, "before to_vec")
    emit(lines)
    emit(lines, "| transposed float32 square | " + " | ".join(header) + " |")
    emit(lines, "|---|" + "---:|" * len(header))
    for side, mib in ((512, 1), (4096, 64), (10240, 400)):
        a = np.ones((side, side), np.float32)
        at = a.T
        cells = {"ours to_vec": lambda: ours.copy_to_vec(at)}
        if before:
            cells["before to_vec"] = lambda: before.copy_to_vec(at)
        cells["NumPy ascontiguousarray"] = lambda: np.ascontiguousarray(at)
        cells["NumPy astype(order=C)"] = lambda: at.astype("f4", order="C")
        row(lines, f"{side}² ({mib} MiB)", a.nbytes, cells, args.repeat)
        del a, at
    processes_table(lines, args.repeat)
    if args.output:
        record.add_run(args.output, "Host copies", [
            "Written by `copies.py` (`make copies-bench`: two runs); see ../BENCHMARKS.md.",
            "",
            f"- Machine: {record.machine()}",
        ], lines, start, args.fresh)


if __name__ == "__main__":
    main()
