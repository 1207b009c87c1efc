"""Where a torch import's time goes: ours and dlpark against torch's own C export and the
questions a checked import asks torch (`make torch-checks-bench` runs it twice, appending both
runs to benchmarks/results-torch-checks.md; record.py).

Every cell imports one torch float32 (1000, 1000) tensor inside a `#[pyfunction]` (the
nanobind table's row 3, `import_tensor(t)`), timed by `best_ns` in rounds, the cells of a
round in turn; the median of the rounds is reported. The floors are `bench_ours` functions
over torch's C exchange table (benchmarks/README.md): the export and its deleter alone, plus
the `requires_grad` getter, plus `is_neg()`, each a C function called directly. The lines
under the table are differences of medians: what each question adds, and what ours and dlpark
add above the floors they stand on (dlpark asks torch nothing).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

import bench_dlpark  # noqa: E402
import bench_ours  # noqa: E402
import record  # noqa: E402
from timing import best_ns  # noqa: E402

torch.set_num_threads(1)

CELLS = [
    ("noop", "`noop(t)`: the `#[pyfunction]` call", bench_ours.noop),
    ("export", "`torch_floor(t)`: torch's C export + deleter", bench_ours.torch_floor),
    ("requires_grad", "… + `requires_grad`", bench_ours.torch_floor_requires_grad),
    ("checked", "… + `requires_grad` + `is_neg()` (`torch_floor_checked`)",
     bench_ours.torch_floor_checked),
    ("ours", "ours: `import_tensor(t)` (`PyTensor`)", bench_ours.import_tensor),
    ("dlpark", "dlpark 0.10: `import_tensor(t)`", bench_dlpark.import_tensor),
]


def measure(rounds: int, repeat: int) -> dict[str, float]:
    t = torch.zeros((1000, 1000), dtype=torch.float32)
    times: dict[str, list[float]] = {key: [] for key, _, _ in CELLS}
    for _ in range(rounds):
        for key, _, f in CELLS:
            times[key].append(best_ns("f(t)", {"f": f, "t": t}, repeat=repeat, target_s=0.1))
    return {key: statistics.median(ns) for key, ns in times.items()}


def report(ns: dict[str, float]) -> list[str]:
    lines = ["| cell | ns per import |", "|---|---:|"]
    lines += [f"| {label} | {ns[key]:,.0f} |" for key, label, _ in CELLS]
    added = [
        ("`requires_grad`", ns["requires_grad"] - ns["export"]),
        ("`is_neg()`", ns["checked"] - ns["requires_grad"]),
        ("ours above the checked floor (the mode and own-`__dlpack__` questions, the import)",
         ns["ours"] - ns["checked"]),
        ("dlpark above the export", ns["dlpark"] - ns["export"]),
    ]
    lines += ["", *(f"- {what}: {value:+,.0f} ns" for what, value in added)]
    lines.append(f"- ours ÷ dlpark: {ns['ours'] / ns['dlpark']:.2f}×; the checked floor ÷ "
                 f"dlpark: {ns['checked'] / ns['dlpark']:.2f}×")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output", help="append the run's table to this Markdown file")
    parser.add_argument("--fresh", action="store_true", help="start the --output file over")
    args = parser.parse_args()
    start = record.started()
    lines = report(measure(args.rounds, args.repeat))
    print("\n".join(lines), flush=True)
    if args.output:
        record.add_run(args.output, "Where a torch import's time goes", [
            "Written by `torch_checks.py` (`make torch-checks-bench`: two runs); see "
            "../BENCHMARKS.md.",
            "",
            f"- Machine: {record.machine()}",
            f"- bench_ours {getattr(bench_ours, 'SOURCE', '?')}; torch {torch.__version__}; "
            f"the median of {args.rounds} rounds, each cell the best of {args.repeat} repeats.",
        ], lines, start, args.fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
