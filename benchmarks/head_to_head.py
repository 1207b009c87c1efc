"""Head-to-head: this repository's pyo3-dlpack vs dlpark 0.10 vs pyo3-dlpack 0.3.

All three extension modules (built by `maturin develop --release`, see README.md)
are imported into ONE Python process, so every ratio below comes from one run on
one machine. Each timed statement is run by `timeit` with GC disabled, `number`
calibrated so one repeat takes >= 0.2 s, best of `--repeat` (default 7) repeats,
reported in ns per call.

    python head_to_head.py            # appends a "Run N" section to results.md
    python head_to_head.py --fresh    # starts results.md over (machine header + run 1)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bench_dlpark  # noqa: E402
import bench_ours  # noqa: E402
import bench_pyo3dlpack03  # noqa: E402

torch.set_num_threads(1)

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results.md"
MIN_REPEAT_S = 0.2
N = 1_000_000  # elements of the main table's buffers (float32, 4 MB)
SIZES = {"1K": 1_000, "100M": 100_000_000}  # the flatness table (float32)

MODULES = {"ours": bench_ours, "dlpark": bench_dlpark, "pyo3-dlpack 0.3": bench_pyo3dlpack03}
PEERS = ["dlpark", "pyo3-dlpack 0.3"]
REPEAT = 7


class NA(str):
    """A cell for an operation a crate cannot do, with the reason."""


class Cell:
    """One timed statement; measured later, interleaved with the rest of its row."""

    def __init__(self, stmt: str, **names):
        self.stmt, self.names = stmt, names
        self.timer = timeit.Timer(stmt, globals=names)
        self.number = 1
        self.best = float("inf")

    def calibrate(self):
        """`number` such that one repeat takes >= MIN_REPEAT_S."""
        while self.timer.timeit(self.number) < MIN_REPEAT_S:
            self.number *= 4

    def one_repeat(self):
        self.best = min(self.best, self.timer.timeit(self.number) / self.number * 1e9)


def cell(stmt: str, **names):
    """A Cell, or an NA saying why the statement cannot run (a crate failing is a result)."""
    try:
        exec(stmt, dict(names))  # once, untimed: fails here instead of inside timeit
    except Exception as e:  # noqa: BLE001
        return NA(f"error: {type(e).__name__}: {e}")
    return Cell(stmt, **names)


def resolve(values):
    """Measures every Cell in `values` (a list or dict), interleaving their repeats
    (round robin: one repeat of each in turn, REPEAT rounds) so that load drift on
    the shared machine hits every crate of a row alike; returns ns per call."""
    items = values.values() if isinstance(values, dict) else values
    cells = [v for v in items if isinstance(v, Cell)]
    for c in cells:
        c.calibrate()
    for _ in range(REPEAT):
        for c in cells:
            c.one_repeat()
    conv = (lambda v: v.best if isinstance(v, Cell) else v)
    if isinstance(values, dict):
        return {k: conv(v) for k, v in values.items()}
    return [conv(v) for v in values]


def has_exchange_api(obj) -> bool:
    return hasattr(type(obj), "__dlpack_c_exchange_api__")


def measure():
    a = np.zeros((1000, N // 1000), dtype=np.float32)
    t = torch.zeros((1000, N // 1000), dtype=torch.float32)
    noop = bench_ours.noop
    floor_cells = {
        "np.from_dlpack(a) (NumPy array)": lambda: cell("np.from_dlpack(a)", np=np, a=a),
        "torch.from_dlpack(t) (torch tensor)": lambda: cell("torch.from_dlpack(t)", torch=torch, t=t),
        "a.__dlpack__(max_version=(1,0))": lambda: cell("a.__dlpack__(max_version=(1, 0))", a=a),
        "a.__dlpack__() (legacy)": lambda: cell("a.__dlpack__()", a=a),
        "t.__dlpack__(max_version=(1,0))": lambda: cell("t.__dlpack__(max_version=(1, 0))", t=t),
        "bench_ours.noop(a)": lambda: cell("f(a)", f=noop, a=a),
    }
    floors = resolve({k: make() for k, make in floor_cells.items()})

    rows = []  # (operation, {module: ns | NA}, floor ns | None, floor label)

    def row(op, cells, floor_keys, floor_label):
        """Measures the crates' cells and the row's floor cells interleaved;
        the floor is the sum of the named floors, re-measured with the row."""
        group = dict(cells)
        for k in floor_keys:
            group["floor:" + k] = floor_cells[k]()
        done = resolve(group)
        floor = sum(done["floor:" + k] for k in floor_keys) if floor_keys else None
        rows.append((op, {m: done[m] for m in MODULES}, floor, floor_label))

    def per_module(fn):
        return {name: fn(name, m) for name, m in MODULES.items()}

    no_obj = NA("n/a (only bare capsules: no `__dlpack__` exporter)")

    def obj_op(stmt):
        def run(name, m):
            if not hasattr(m, "export_object"):
                return no_obj
            return cell(stmt, np=np, torch=torch, x=m.export_object(N))
        return run

    def torch_xapi(name, m):
        if name == "ours":
            x = m.export_object(N)
            if has_exchange_api(x):
                return cell("torch.from_dlpack(x)", torch=torch, x=x)
            return NA("n/a (DLPackTensor has no `__dlpack_c_exchange_api__` in this build)")
        if hasattr(m, "export_object_xapi"):
            return cell("torch.from_dlpack(x)", torch=torch, x=m.export_object_xapi(N))
        return no_obj

    def capsule_op(stmt):
        def run(name, m):
            return cell(stmt, np=np, torch=torch, f=m.export_capsule,
                        fv=m.export_capsule_versioned, src=m.capsule_source(N))
        return run

    np_floor = ["np.from_dlpack(a) (NumPy array)"]
    torch_floor = ["torch.from_dlpack(t) (torch tensor)"]
    noop_floor = ["bench_ours.noop(a)"]
    row("`np.from_dlpack(x)`, x pre-built exporter object",
        per_module(obj_op("np.from_dlpack(x)")), np_floor, "np.from_dlpack(ndarray)")
    row("`torch.from_dlpack(x)`, x pre-built exporter object",
        per_module(obj_op("torch.from_dlpack(x)")), torch_floor, "torch.from_dlpack(tensor)")
    row("`torch.from_dlpack(x)`, x exporter with C exchange API table",
        per_module(torch_xapi), torch_floor, "torch.from_dlpack(tensor)")
    row("`torch.from_dlpack(export_capsule(src))`, fresh legacy capsule",
        per_module(capsule_op("torch.from_dlpack(f(src))")), torch_floor,
        "torch.from_dlpack(tensor)")
    rows.append(("`np.from_dlpack(capsule)`",
                 {name: NA("n/a (NumPy takes objects with `__dlpack__`, not capsules)")
                  for name in MODULES}, None, ""))
    row("capsule create + drop, legacy: `export_capsule(src)`",
        per_module(capsule_op("f(src)")), noop_floor, "noop(x)")
    row("capsule create + drop, versioned: `export_capsule_versioned(src)`"
        " (pyo3-dlpack 0.3: read-only only)",
        per_module(capsule_op("fv(src)")), noop_floor, "noop(x)")
    row("`import_tensor(a)`, a NumPy float32 (1000, 1000)",
        per_module(lambda name, m: cell("f(a)", f=m.import_tensor, a=a)),
        noop_floor + ["a.__dlpack__(max_version=(1,0))"],
        "noop + a.\\_\\_dlpack\\_\\_(max_version=(1,0))")
    row("`import_tensor(t)`, t torch float32 (1000, 1000)",
        per_module(lambda name, m: cell("f(t)", f=m.import_tensor, t=t)),
        noop_floor + ["t.__dlpack__(max_version=(1,0))"],
        "noop + t.\\_\\_dlpack\\_\\_(max_version=(1,0))")
    row("`noop(a)` (empty `#[pyfunction]`)",
        per_module(lambda name, m: cell("f(a)", f=m.noop, a=a)), [], "")

    # Flatness: the same export from a 1K and a 100M element buffer (object or
    # source built outside the timed region), the two sizes interleaved.
    flat = []  # (operation, module, ns_1k, ns_100m)
    for name, m in MODULES.items():
        objs = {k: m.export_object(v) for k, v in SIZES.items()} if hasattr(m, "export_object") else None
        srcs = {k: m.capsule_source(v) for k, v in SIZES.items()}
        if objs:
            for op in ("np.from_dlpack(x)", "torch.from_dlpack(x)"):
                flat.append((f"`{op}`", name,
                             *resolve([cell(op, np=np, torch=torch, x=objs[k]) for k in SIZES])))
        flat.append(("capsule create + drop (legacy)", name,
                     *resolve([cell("f(src)", f=m.export_capsule, src=srcs[k]) for k in SIZES])))
        del objs, srcs
    return floors, rows, flat


def fmt_ns(v) -> str:
    return v if isinstance(v, NA) else f"{v:,.0f}"


def ratio(a, b) -> str:
    if isinstance(a, NA) or isinstance(b, NA) or a is None or b is None:
        return "–"
    return f"{a / b:.2f}×"


def render(floors, rows, flat, label: str) -> str:
    out = [f"### {label}", ""]
    out.append("ns per call (best of %d repeats, each ≥ %.1f s, the crates' and the floor's repeats interleaved); ratio = ours ÷ the column named"
               % (REPEAT, MIN_REPEAT_S))
    out.append("")
    out.append("| operation | ours | dlpark 0.10 | pyo3-dlpack 0.3 | floor (what) | ours ÷ dlpark"
               " | ours ÷ 0.3 | ours ÷ floor |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for op, cells, floor, floor_label in rows:
        ours = cells["ours"]
        floor_cell = f"{fmt_ns(floor)} ({floor_label})" if floor is not None else "–"
        out.append(f"| {op} | {fmt_ns(ours)} | {fmt_ns(cells['dlpark'])} | "
                   f"{fmt_ns(cells['pyo3-dlpack 0.3'])} | {floor_cell} | "
                   f"{ratio(ours, cells['dlpark'])} | {ratio(ours, cells['pyo3-dlpack 0.3'])} | "
                   f"{ratio(ours, floor)} |")
    out.append("")
    out.append("Floors (framework producers and consumers on their own arrays, same process):")
    out.append("")
    out.append("| floor | ns |")
    out.append("|---|---:|")
    for k, v in floors.items():
        out.append(f"| `{k}` | {fmt_ns(v)} |")
    out.append("")
    out.append("Export cost against buffer size (object/source built outside the timed region):")
    out.append("")
    out.append("| operation | crate | 1K elements | 100M elements | 100M ÷ 1K |")
    out.append("|---|---|---:|---:|---:|")
    for op, name, a, b in flat:
        out.append(f"| {op} | {name} | {fmt_ns(a)} | {fmt_ns(b)} | {ratio(b, a)} |")
    out.append("")
    return "\n".join(out)


def lock_version(lock: pathlib.Path, crate: str) -> str:
    text = lock.read_text()
    found = re.findall(r'name = "%s"\nversion = "([^"]+)"' % re.escape(crate), text)
    return ", ".join(found) or "?"


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_header() -> str:
    main_lock = HERE / "Cargo.lock"
    old_lock = HERE / "bench_pyo3dlpack03" / "Cargo.lock"
    lines = [
        "# Head-to-head results",
        "",
        "Written by `head_to_head.py` (see README.md for what each timed region contains).",
        "",
        f"- Machine: {os.cpu_count()} CPUs (nproc), {cpu_model()}, {platform.system()} "
        f"{platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"NumPy {np.__version__}, torch {torch.__version__}",
        f"- ours: pyo3-dlpack {lock_version(main_lock, 'pyo3-dlpack')} (path; `bench_ours` compiled from "
        f"{getattr(bench_ours, 'SOURCE', '?')}),"
        f" pyo3 {lock_version(main_lock, 'pyo3')}",
        f"- dlpark {lock_version(main_lock, 'dlpark')}, pyo3 {lock_version(main_lock, 'pyo3')}",
        f"- pyo3-dlpack {lock_version(old_lock, 'pyo3-dlpack')} (crates.io), "
        f"pyo3 {lock_version(old_lock, 'pyo3')}",
        f"- OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
        "torch.set_num_threads(1), release builds (`maturin develop --release`)",
        "",
    ]
    return "\n".join(lines)


def main():
    global REPEAT, MIN_REPEAT_S
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--fresh", action="store_true", help="start results.md over")
    p.add_argument("--repeat", type=int, default=REPEAT, help="repeats per measurement (>= 5)")
    p.add_argument("--min-time", type=float, default=MIN_REPEAT_S,
                   help="seconds per repeat (default 0.2; lower only for a smoke test)")
    p.add_argument("--output", type=pathlib.Path, default=RESULTS)
    args = p.parse_args()
    REPEAT = max(5, args.repeat)
    MIN_REPEAT_S = args.min_time

    if args.fresh or not args.output.exists():
        args.output.write_text(machine_header())
    run = len(re.findall(r"^### Run \d+", args.output.read_text(), re.M)) + 1
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    label = f"Run {run} ({stamp}, load average {load:.2f} at start)"

    floors, rows, flat = measure()
    table = render(floors, rows, flat, label)
    print(machine_header() if run == 1 else "")
    print(table)
    with args.output.open("a") as f:
        f.write("\n" + table)
    print(f"appended to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
