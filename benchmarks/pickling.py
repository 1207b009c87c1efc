"""Tensors that travel: pickling a DLPackTensor against pickling the same NumPy array, in one
process (the head-to-head's method: each cell the best of `--repeat` timings, the cells of a
row timed round-robin, ratios within one run).

Rows: `pickle.dumps` of 400 MiB of float32 with protocol 5 out of band (a buffer_callback:
no copy, so microseconds), `pickle.loads` of it given its buffers; `dumps` + `loads` in band
(protocol 5 and 4) of 1 MiB and 400 MiB; with `--ray`, `ray.put` + `ray.get` of 400 MiB on a
local Ray cluster (started here, loopback only).

    python benchmarks/pickling.py [--repeat N] [--ray] [--output FILE [--fresh]]

The DLPackTensor comes from the release build of `bench_ours` (`make pickling-bench` builds
it and runs this twice, appending both runs to benchmarks/results-pickling.md; record.py).
"""

import argparse
import pickle
import sys

import numpy as np

import record
from timing import round_robin

MIB = 1 << 20


def pair(make_ours, make_numpy, nbytes):
    """The same float32 values as a DLPackTensor (bench_ours) and a NumPy array."""
    n = nbytes // 4
    ours, theirs = make_ours(n), make_numpy(n)
    np.from_dlpack(ours)[:] = 1.0  # touched: no first-write page faults in the timings
    theirs[:] = 1.0
    return ours, theirs


def out_of_band_dumps(x):
    buffers = []
    return pickle.dumps(x, protocol=5, buffer_callback=buffers.append), buffers


def rows(ours_of, repeat, use_ray):
    numpy_of = lambda n: np.empty(n, np.float32)  # noqa: E731
    lines = []

    def emit(name, unit, times, nbytes=None):
        ours, theirs = times["ours"], times["numpy"]
        if unit == "us":
            cells = f"{ours * 1e6:.1f} | {theirs * 1e6:.1f} | {ours / theirs:.2f}x time"
        else:
            cells = (f"{nbytes / ours / 1e9:.2f} | {nbytes / theirs / 1e9:.2f} | "
                     f"{theirs / ours:.2f}x throughput")
        lines.append(f"| {name} | {unit} | {cells} |")
        print(lines[-1], flush=True)

    big = pair(ours_of, numpy_of, 400 * MIB)
    emit("dumps, protocol 5 out of band, 400 MiB", "us",
         round_robin({"ours": lambda: out_of_band_dumps(big[0]),
                    "numpy": lambda: out_of_band_dumps(big[1])}, repeat * 3))
    sent = {label: out_of_band_dumps(x) for label, x in zip(["ours", "numpy"], big)}
    emit("loads, protocol 5 out of band, 400 MiB", "us",
         round_robin({label: (lambda s=s: pickle.loads(s[0], buffers=s[1]))
                    for label, s in sent.items()}, repeat * 3))
    del sent
    for nbytes, label in [(MIB, "1 MiB"), (400 * MIB, "400 MiB")]:
        xs = pair(ours_of, numpy_of, nbytes) if nbytes != 400 * MIB else big
        for protocol in (5, 4):
            cells = {name: (lambda x=x: pickle.loads(pickle.dumps(x, protocol=protocol)))
                     for name, x in zip(["ours", "numpy"], xs)}
            emit(f"dumps + loads, protocol {protocol} in band, {label}", "GB/s",
                 round_robin(cells, repeat if nbytes > MIB else repeat * 30), nbytes)
    if use_ray:
        import ray

        ray.init(num_cpus=1, object_store_memory=1536 * MIB, include_dashboard=False,
                 log_to_driver=False, _node_ip_address="127.0.0.1")
        try:
            cells = {name: (lambda x=x: ray.get(ray.put(x)))
                     for name, x in zip(["ours", "numpy"], big)}
            emit("ray.put + ray.get, 400 MiB", "us", round_robin(cells, repeat * 2))
        finally:
            ray.shutdown()
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--ray", action="store_true", help="also ray.put + ray.get (400 MiB)")
    parser.add_argument("--output", help="append the run's table to this Markdown file")
    parser.add_argument("--fresh", action="store_true", help="start the --output file over")
    args = parser.parse_args()
    import bench_ours

    start = record.started()
    header = [
        f"bench_ours {getattr(bench_ours, 'SOURCE', '?')}; NumPy {np.__version__}; best of "
        f"{args.repeat} round-robin timings (x3 for the microsecond rows, x30 for 1 MiB, x2 for "
        "Ray).",
        "",
        "| row | unit | DLPackTensor | NumPy | ours vs NumPy |",
        "|---|---|---|---|---|",
    ]
    print("\n".join(header), flush=True)
    lines = rows(bench_ours.export_object, args.repeat, args.ray)
    if args.output:
        record.add_run(args.output, "Tensors that travel", [
            "Written by `pickling.py` (`make pickling-bench`: two runs); see ../BENCHMARKS.md.",
            "",
            f"- Machine: {record.machine()}",
        ], header + lines, start, args.fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
