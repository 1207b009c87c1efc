"""What the limited API (abi3) costs: the test extension built twice in release mode, for
this CPython (version-specific) and as an abi3-py39 wheel, timed on the same interpreter
in alternating child processes (`make abi3-bench`; BENCHMARKS.md, "What abi3 costs").

Each figure is the best of 7 `timeit` repeats in ns per call; the children alternate
full, abi3, full, abi3 so that drifts of the machine show in both: one invocation makes
both runs (run 1 / run 2 in each cell).

    python benchmarks/abi3_cost.py FULL_DIR ABI3_DIR [--output FILE [--fresh]]

`--output` appends the table to FILE (record.py); `make abi3-bench` writes
benchmarks/results-abi3.md.
"""

import argparse
import json
import os
import subprocess
import sys

import record
from timing import best_ns

CASES = [
    # (name, statement): objects are made in SETUP, only the call is timed.
    ("floor: an empty #[pyfunction]", "ext.noop(a)"),
    ("import a NumPy array (PyTensor argument)", "ext.consume(a)"),
    ("import a torch tensor (exchange API)", "ext.consume(t)"),
    ("import a NumPy array (derived type)", "ext.consume_derived(a)"),
    ("np.from_dlpack(DLPackTensor)", "np.from_dlpack(ours)"),
    ("torch.from_dlpack(DLPackTensor)", "torch.from_dlpack(ours)"),
    ("DLPackTensor.__dlpack__(max_version=(1, 3))", "ours.__dlpack__(max_version=(1, 3))"),
    ("return a NumPy array (Native::numpy)", 'ext.native_arange("numpy", "float32", 4)'),
]

SETUP = """
import numpy as np
import torch
import dlpack_testext as ext
a = np.arange(1000, dtype="f4")
t = torch.arange(1000, dtype=torch.float32)
ours = ext.arange("float32", 1000)
"""


def child():
    env = {}
    exec(SETUP, env)
    so = env["ext"].dlpack_testext.__file__.rsplit("/", 1)[-1]
    print(json.dumps({"so": so, "ns": [best_ns(stmt, env) for _, stmt in CASES]}))


def run_child(directory):
    environment = dict(os.environ, PYTHONPATH=directory, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, "--child"], env=environment, check=True, capture_output=True
    )
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("full_dir", help="the unpacked version-specific wheel")
    parser.add_argument("abi3_dir", help="the unpacked abi3 wheel")
    parser.add_argument("--output", help="append the table to this Markdown file")
    parser.add_argument("--fresh", action="store_true", help="start the --output file over")
    args = parser.parse_args()
    start = record.started()
    runs = {"full": [], "abi3": []}
    for _ in range(2):
        for kind, directory in (("full", args.full_dir), ("abi3", args.abi3_dir)):
            runs[kind].append(run_child(directory))
    assert runs["full"][0]["so"].endswith(".cpython-%d%d-x86_64-linux-gnu.so" % sys.version_info[:2])
    assert runs["abi3"][0]["so"].endswith(".abi3.so")
    lines = [
        f"CPython {sys.version.split()[0]}; ns per call, best of 7; run 1 / run 2; "
        "ratio within a run",
        "",
        "| case | full | abi3 | abi3/full |",
        "|---|---|---|---|",
    ]
    for i, (name, _) in enumerate(CASES):
        full = [r["ns"][i] for r in runs["full"]]
        abi3 = [r["ns"][i] for r in runs["abi3"]]
        ratios = [b / f for f, b in zip(full, abi3)]
        lines.append(
            f"| {name} | {full[0]:.0f} / {full[1]:.0f} | {abi3[0]:.0f} / {abi3[1]:.0f} "
            f"| {ratios[0]:.2f} / {ratios[1]:.2f} |"
        )
    print("\n".join(lines))
    if args.output:
        record.add_run(args.output, "What abi3 costs", [
            "Written by `abi3_cost.py` (`make abi3-bench`: both runs in one invocation); "
            "see ../BENCHMARKS.md.",
            "",
            f"- Machine: {record.machine()}",
            f"- The test extension built from the working tree at {record.source()}",
        ], lines, start, args.fresh)


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child()
    else:
        main()
