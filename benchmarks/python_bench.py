"""Python-side benchmarks of pyo3-dlpack (`make bench`), one process, CPU.

Each figure is the best of 7 `timeit` repeats, in ns per operation; only
the named call is inside the timed statement (objects are made beforehand).

    python benchmarks/python_bench.py [--output FILE [--fresh]]

`--output` appends the run's tables to FILE (record.py); `make bench` runs it twice
into benchmarks/results-python.md.
"""

import argparse
import gc
import json
import os
import platform
import resource
import sys
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import dlpack_testext as ext  # noqa: E402
import record  # noqa: E402
from timing import best_ns  # noqa: E402


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timings():
    ours = ext.arange("float32", 1000)
    ours_big = ext.arange("float32", 100_000_000, storage="aligned")
    a = np.arange(1000, dtype="f4")
    t = torch.arange(1000, dtype=torch.float32)
    env = dict(np=np, torch=torch, ext=ext, ours=ours, ours_big=ours_big, a=a, t=t)
    rows = [
        ("np.from_dlpack(ours)", "np.from_dlpack(ours)"),
        ("np.from_dlpack(ours, 100M elements)", "np.from_dlpack(ours_big)"),
        ("np.from_dlpack(numpy array) [floor]", "np.from_dlpack(a)"),
        ("torch.from_dlpack(ours)", "torch.from_dlpack(ours)"),
        ("torch.from_dlpack(torch tensor)", "torch.from_dlpack(t)"),
        ("ours.__dlpack__()", "ours.__dlpack__()"),
        ("ours.__dlpack__(max_version=(1, 0))", "ours.__dlpack__(max_version=(1, 0))"),
        ("numpy a.__dlpack__(max_version=(1, 0)) [floor]", "a.__dlpack__(max_version=(1, 0))"),
        ("empty #[pyfunction](obj) [floor]", "ext.noop(a)"),
        ("#[pyfunction](PyTensor) <- numpy", "ext.consume(a)"),
        ("#[pyfunction](derived FromDLPack) <- numpy", "ext.consume_derived(a)"),
        ("#[pyfunction](PyTensor) <- torch (exchange API, owned)", "ext.consume(t)"),
        ("#[pyfunction] with_borrowed <- torch (exchange API)", "ext.consume_borrowed(t)"),
        ("#[pyfunction](derived FromDLPack) <- torch", "ext.consume_derived(t)"),
        ("#[pyfunction](PyTensor) <- ours", "ext.consume(ours)"),
    ]
    return {name: best_ns(stmt, env) for name, stmt in rows}


def memory():
    gc.collect()
    before = rss_mib()
    big = ext.arange("uint8", 400_000_000, storage="aligned")  # 400 MB, made in Rust
    after_alloc = rss_mib()
    views = [np.from_dlpack(big), torch.from_dlpack(big), np.from_dlpack(big)]
    after_views = rss_mib()
    del views, big
    gc.collect()
    x = ext.arange("float32", 16)
    arr = np.arange(16, dtype="f4")
    for _ in range(20_000):  # warm up allocator pools
        np.from_dlpack(x), ext.consume(arr)
    gc.collect()
    start = rss_mib()
    for _ in range(1_000_000):
        np.from_dlpack(x)
        ext.consume(arr)
    gc.collect()
    return {
        "400 MB buffer: RSS added by allocating it in Rust (MiB)": after_alloc - before,
        "400 MB buffer: RSS added by 3 zero-copy consumer views (MiB)": after_views - after_alloc,
        "1,000,000 export+import cycles: RSS growth (MiB)": rss_mib() - start,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", help="append the run's tables to this Markdown file")
    parser.add_argument("--fresh", action="store_true", help="start the --output file over")
    args = parser.parse_args()
    info = {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    start = record.started()
    times = timings()
    mem = memory()
    floor_np = times["np.from_dlpack(numpy array) [floor]"]
    floor_import = times["empty #[pyfunction](obj) [floor]"] + times["numpy a.__dlpack__(max_version=(1, 0)) [floor]"]
    ratios = {
        "np.from_dlpack(ours) / np.from_dlpack(numpy)": times["np.from_dlpack(ours)"] / floor_np,
        "100M / 1K export (np.from_dlpack)": times["np.from_dlpack(ours, 100M elements)"] / times["np.from_dlpack(ours)"],
        "import numpy via PyTensor / (empty pyfunction + bare __dlpack__)": times["#[pyfunction](PyTensor) <- numpy"] / floor_import,
        "torch borrowed / torch owned": times["#[pyfunction] with_borrowed <- torch (exchange API)"] / times["#[pyfunction](PyTensor) <- torch (exchange API, owned)"],
    }
    lines = [json.dumps(info), "", "| operation | ns |", "|---|---:|"]
    lines += [f"| {name} | {ns:.0f} |" for name, ns in times.items()]
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in ratios.items()]
    lines += ["", "| memory | MiB |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in mem.items()]
    print("\n".join(lines))
    if args.output:
        record.add_run(args.output, "Python side (`make bench`)", [
            "Written by `python_bench.py` (`make bench`: two runs); see ../BENCHMARKS.md.",
            "",
            f"- Machine: {record.machine()}",
            f"- The test extension built from the working tree at {record.source()}",
        ], lines, start, args.fresh)


if __name__ == "__main__":
    main()
