"""Head-to-head: this repository's pyo3-dlpack vs dlpark 0.10 vs pyo3-dlpack 0.3,
and against nanobind's `nb::ndarray` (C++, the reference for per-call cost).

All three extension modules (built by `maturin develop --release`, see README.md)
are imported into ONE Python process, so every ratio below comes from one run on
one machine. Each timed statement is run by `timeit` with GC disabled, `number`
calibrated so one repeat takes >= 0.2 s, best of `--repeat` (default 7) repeats,
reported in ns per call. The nanobind table takes the median of
`--nb-rounds` (default 21) rounds, the best of them shown beside it.

    python head_to_head.py            # appends a "Run N" section to results.md
    python head_to_head.py --fresh    # starts results.md over (machine header + run 1)
    python head_to_head.py --rows 7-9 --nb-rounds 5   # trial: those nanobind rows, printed only

The nanobind table needs `bench_nanobind` (built by `bench_nanobind/build.py`);
its results also go to `results.json` and the chart `head_to_head.svg`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the JAX rows: host arrays only

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import bench_dlpark  # noqa: E402
import bench_ours  # noqa: E402
import bench_pyo3dlpack03  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "bench_nanobind"))
try:
    import bench_nanobind  # noqa: E402
except ImportError:  # not built: the nanobind table is skipped
    bench_nanobind = None

torch.set_num_threads(1)
jax.config.update("jax_platforms", "cpu")

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results.md"
CHART = HERE / "head_to_head.svg"
MIN_REPEAT_S = 0.2
N = 1_000_000  # elements of the main table's buffers (float32, 4 MB)
SIZES = {"1K": 1_000, "100M": 100_000_000}  # the flatness table (float32)

MODULES = {"ours": bench_ours, "dlpark": bench_dlpark, "pyo3-dlpack 0.3": bench_pyo3dlpack03}
PEERS = ["dlpark", "pyo3-dlpack 0.3"]
REPEAT = 7
NB_ROUNDS = 21  # the nanobind table: medians of 21 rounds


class NA(str):
    """A cell for an operation a crate cannot do, with the reason."""


class Cell:
    """One timed statement; measured later, interleaved with the rest of its row."""

    def __init__(self, stmt: str, **names):
        self.stmt, self.names = stmt, names
        self.timer = timeit.Timer(stmt, globals=names)
        self.number = 1
        self.samples = []

    def calibrate(self):
        """`number` such that one repeat takes >= MIN_REPEAT_S."""
        while self.timer.timeit(self.number) < MIN_REPEAT_S:
            self.number *= 4

    def one_repeat(self):
        self.samples.append(self.timer.timeit(self.number) / self.number * 1e9)

    @property
    def best(self):
        return min(self.samples)

    @property
    def median(self):
        return statistics.median(self.samples)


def cell(stmt: str, **names):
    """A Cell, or an NA saying why the statement cannot run (a crate failing is a result)."""
    try:
        exec(stmt, dict(names))  # once, untimed: fails here instead of inside timeit
    except Exception as e:  # noqa: BLE001
        return NA(f"error: {type(e).__name__}: {e}")
    return Cell(stmt, **names)


def resolve(values, rounds=None, stat="best"):
    """Measures every Cell in `values` (a list or dict), interleaving their repeats
    (round robin: one repeat of each in turn, `rounds` rounds, REPEAT by default) so
    that load drift on the shared machine hits every crate of a row alike; returns
    ns per call, each Cell's `stat` ("best" or "median") of its rounds."""
    items = values.values() if isinstance(values, dict) else values
    cells = [v for v in items if isinstance(v, Cell)]
    for c in cells:
        c.calibrate()
    for _ in range(rounds or REPEAT):
        for c in cells:
            c.one_repeat()
    conv = (lambda v: getattr(v, stat) if isinstance(v, Cell) else v)
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


# --- Against nanobind -------------------------------------------------------
# Rows of the table against nanobind: (label, {library: statement maker},
# floor label and statement, target as (ratio, against whom) or None[, options]).
# Each statement maker returns a Cell or an NA; a library without the operation
# is left out of the row. Options (a dict, the list rows only): "per", a divisor
# applied to every library and the floor (ns per tensor of a list); "self",
# (label, statement maker, ratio): ours per tensor against that statement
# (ours importing one tensor alone), measured in the same rounds, with its target.
NB_LIBS = ["ours", "nanobind", "dlpark", "pyo3-dlpack 0.3"]
NB_MODULES = {"ours": bench_ours, "nanobind": bench_nanobind, "dlpark": bench_dlpark,
              "pyo3-dlpack 0.3": bench_pyo3dlpack03}


# The chart's labels of the rows of `nanobind_rows`, in order.
NB_SHORT = ["NumPy → PyTensor / ndarray<>", "NumPy → derived / typed ndarray",
            "torch → argument", "fresh 1K → numpy.ndarray", "fresh 1K → torch.Tensor",
            "np.from_dlpack(exporter)", "jax (1000,) → argument", "jax (1000, 1000) → argument",
            "fresh 1K → jax.Array", "list of 100 NumPy, per tensor", "list of 1000 NumPy, per tensor",
            "list of 100 torch, per tensor", "list of 1000 torch, per tensor",
            "NumPy → Tensor2<f32> / ndarray<float, ndim<2>>",
            "np.from_dlpack(derived exporter)"]


def nanobind_rows():
    a = np.zeros((1000, N // 1000), dtype=np.float32)
    t = torch.zeros((1000, N // 1000), dtype=torch.float32)
    a1k = np.zeros(1000, dtype=np.float32)
    j1k = jnp.zeros(1000, dtype=jnp.float32).block_until_ready()
    j1m = jnp.zeros((1000, N // 1000), dtype=jnp.float32).block_until_ready()
    m = NB_MODULES

    def imp(name, x):
        return lambda: cell("f(x)", f=m[name].import_tensor, x=x)

    def jax_import(shape, x):
        return (f"import a `jax.Array` float32 {shape} as an argument: `PyTensor` / `nb::ndarray<>`",
                {lib: imp(lib, x) for lib in NB_LIBS},
                ("`x.__dlpack__()`", lambda: cell("x.__dlpack__()", x=x)), (0.6, "nanobind"))

    def import_list(kind, n, make, floor_label, floor_fn, target):
        """A list of `n` distinct 1K float32 arrays taken as `Vec<PyTensor>` /
        `std::vector<nb::ndarray<>>` / dlpark's per-element import; ns per tensor."""
        xs = [make() for _ in range(n)]
        return (f"a list of {n} {kind} float32 (1000,) arrays as `Vec<PyTensor>` / "
                "`std::vector<nb::ndarray<>>`, ns per tensor",
                {lib: (lambda lib=lib: cell("f(xs)", f=m[lib].import_list, xs=xs))
                 for lib in ("ours", "nanobind", "dlpark")},
                (floor_label, lambda: cell("f(xs)", f=floor_fn, xs=xs)), target,
                {"per": n,
                 "self": ("`import_tensor(xs[0])`",
                          lambda: cell("f(x)", f=bench_ours.import_tensor, x=xs[0]), 1.05)})

    def np_1k():
        return np.zeros(1000, dtype=np.float32)

    def torch_1k():
        return torch.zeros(1000, dtype=torch.float32)

    return [
        ("import a NumPy float32 (1000, 1000) as an argument: `PyTensor` / untyped `nb::ndarray<>`",
         {lib: imp(lib, a) for lib in NB_LIBS},
         ("noop(a)", lambda: cell("f(a)", f=bench_ours.noop, a=a)), (0.85, "nanobind")),
        ("… as a derived `FromDLPack` (f32, C-contiguous, CPU) / `nb::ndarray<float, c_contig, device::cpu>`",
         {"ours": lambda: cell("f(a)", f=bench_ours.import_typed, a=a),
          "nanobind": lambda: cell("f(a)", f=bench_nanobind.import_typed, a=a)},
         ("noop(a)", lambda: cell("f(a)", f=bench_ours.noop, a=a)), (1.0, "nanobind")),
        ("import a torch float32 (1000, 1000) as an argument",
         {lib: imp(lib, t) for lib in NB_LIBS},
         # What a checked import cannot go below: torch's C export and deleter
         # plus its requires_grad getter and is_neg(), called as C functions.
         ("torch's C export + requires_grad + is_neg()",
          lambda: cell("f(t)", f=bench_ours.torch_floor_checked, t=t)), (1.0, "dlpark")),
        ("a fresh 1K float32 buffer returned as a `numpy.ndarray` (ours: `Native::numpy`)",
         {"ours": lambda: cell("f(1000)", f=bench_ours.native_numpy),
          "nanobind": lambda: cell("f(1000)", f=bench_nanobind.fresh_numpy)},
         ("np.empty(1000, 'f4')", lambda: cell("np.empty(1000, 'f4')", np=np)), (0.5, "nanobind")),
        ("a fresh 1K float32 buffer returned as a `torch.Tensor` (ours: `Native::torch`)",
         {"ours": lambda: cell("f(1000)", f=bench_ours.native_torch),
          "nanobind": lambda: cell("f(1000)", f=bench_nanobind.fresh_torch)},
         ("torch.empty(1000)", lambda: cell("torch.empty(1000)", torch=torch)), (0.4, "nanobind")),
        ("`np.from_dlpack(x)`, x a pre-made 1K exporter object (`DLPackTensor` / `nb_ndarray`)",
         {lib: (lambda lib=lib: cell("np.from_dlpack(x)", np=np, x=m[lib].export_object(1000)))
          for lib in ("ours", "nanobind", "dlpark")},
         ("np.from_dlpack(ndarray)", lambda: cell("np.from_dlpack(a1k)", np=np, a1k=a1k)),
         (1.0, "nanobind")),
        jax_import("(1000,)", j1k),
        jax_import("(1000, 1000)", j1m),
        ("a fresh 1K float32 buffer returned as a `jax.Array` (ours: `Native::jax`)",
         {"ours": lambda: cell("f(1000)", f=bench_ours.native_jax),
          "nanobind": lambda: cell("f(1000)", f=bench_nanobind.fresh_jax)},
         ("jnp.from_dlpack(np.empty(1000, np.float32))",
          lambda: cell("jnp.from_dlpack(np.empty(1000, np.float32))", jnp=jnp, np=np)),
         # 0.97x through JAX's public from_dlpack; 0.6x through the faster entry ours now
         # takes (jaxlib's capsule import, version-gated).
         (0.6, "nanobind")),
        # Floors: the list taken as `Vec<Bound<PyAny>>` (NumPy arrays are read in
        # place, as `noop(a)` floors the single import); torch's C export and
        # checks of each element (`torch_floor_checked`, one call for the list).
        import_list("NumPy", 100, np_1k, "`noop_list(xs)`: the list as `Vec<Bound<PyAny>>`", bench_ours.noop_list,
                    (0.6, "nanobind")),
        import_list("NumPy", 1000, np_1k, "`noop_list(xs)`: the list as `Vec<Bound<PyAny>>`", bench_ours.noop_list,
                    (0.6, "nanobind")),
        import_list("torch", 100, torch_1k, "`torch_floor_list(xs)`: torch's C export + checks, each element",
                    bench_ours.torch_floor_list, (1.0, "dlpark")),
        import_list("torch", 1000, torch_1k, "`torch_floor_list(xs)`: torch's C export + checks, each element",
                    bench_ours.torch_floor_list, (1.0, "dlpark")),
        ("import a NumPy float32 (1000, 1000) as a typed argument, its elements as a row-major "
         "slice: `Tensor2<f32>` + `as_slice()` / `nb::ndarray<float, nb::ndim<2>, nb::c_contig>`",
         {"ours": lambda: cell("f(a)", f=bench_ours.import_typed2, a=a),
          "nanobind": lambda: cell("f(a)", f=bench_nanobind.import_typed2, a=a)},
         ("noop(a)", lambda: cell("f(a)", f=bench_ours.noop, a=a)), (1.0, "nanobind")),
        # Row 6 with ours' exporter made by the derive (a user's `#[derive(IntoDLPack)]`
        # struct returned from a `#[pyfunction]`) rather than `DLPackTensor::new`.
        ("`np.from_dlpack(x)`, x a pre-made 1K exporter: a derived `IntoDLPack` struct returned "
         "from a `#[pyfunction]` / `nb_ndarray`",
         {"ours": lambda: cell("np.from_dlpack(x)", np=np, x=bench_ours.export_derived(1000)),
          "nanobind": lambda: cell("np.from_dlpack(x)", np=np,
                                   x=bench_nanobind.export_object(1000))},
         ("np.from_dlpack(ndarray)", lambda: cell("np.from_dlpack(a1k)", np=np, a1k=a1k)),
         (1.0, "nanobind")),
    ]


def measure_nanobind(only=None):
    """Each row's libraries and floor timed round robin, NB_ROUNDS rounds;
    returns a list of dicts (label, median ns per library, best ns per library,
    floor, target) for the table and the chart. `only`: the 1-based numbers of
    the rows to measure (all by default)."""
    out = []
    rows = nanobind_rows()
    assert len(rows) == len(NB_SHORT), "one NB_SHORT label per row"
    for number, (spec, short) in enumerate(zip(rows, NB_SHORT), start=1):
        if only is not None and number not in only:
            continue
        label, makers, (floor_label, floor_maker), target, *rest = spec
        opts = rest[0] if rest else {}
        per = opts.get("per", 1)
        group = {lib: make() for lib, make in makers.items()}
        group["floor"] = floor_maker()
        if "self" in opts:
            group["self"] = opts["self"][1]()
        done = resolve(group, rounds=NB_ROUNDS, stat="median")
        scale = (lambda lib, v: v if isinstance(v, NA) or lib == "self" else v / per)
        done = {lib: scale(lib, v) for lib, v in done.items()}
        best = {lib: v.best / per for lib, v in group.items()
                if isinstance(v, Cell) and lib not in ("floor", "self")}
        result = {
            "row": label,
            "short": short,
            "ns": {lib: (None if isinstance(v, NA) else v) for lib, v in done.items()
                   if lib not in ("floor", "self")},
            "ns_best": best,
            "errors": {lib: str(v) for lib, v in done.items() if isinstance(v, NA)},
            "floor": None if isinstance(done["floor"], NA) else done["floor"],
            "floor_label": floor_label,
            "target": None if target is None else {"ratio": target[0], "against": target[1]},
        }
        if per != 1:
            result["per"] = per
        if "self" in opts:
            v = group["self"]
            result["self"] = {"label": opts["self"][0], "ratio": opts["self"][2],
                              "ns": None if isinstance(v, NA) else v.median,
                              "ns_best": None if isinstance(v, NA) else v.best,
                              "error": str(v) if isinstance(v, NA) else None}
        out.append(result)
    return out


def render_nanobind(results) -> str:
    out = ["Against nanobind (`bench_nanobind`, nanobind %s, g++ -O3; same process, each row's "
           "libraries and its floor interleaved), ns per call (per tensor in the list rows), the median of %d rounds (each ≥ %.1f s); "
           "the target's ratio from the best of the same rounds in the last column:"
           % (getattr(bench_nanobind, "__version__", "3.1.0"), NB_ROUNDS, MIN_REPEAT_S),
           "", "| operation | ours | nanobind | dlpark 0.10 | pyo3-dlpack 0.3 | floor (what) "
           "| ours ÷ nanobind | ours ÷ dlpark | target | met | best of rounds |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    for r in results:
        ns = r["ns"]
        cells = [fmt_ns(ns[lib]) if ns.get(lib) is not None else r["errors"].get(lib, "–")
                 for lib in NB_LIBS]
        ours = ns.get("ours")
        tgt, met, by_best = "–", "–", "–"
        if r["target"] and ours is not None and ns.get(r["target"]["against"]) is not None:
            want, who = r["target"]["ratio"], r["target"]["against"]
            got = ours / ns[who]
            tgt = f"≤ {want:.2f}× {who}"
            met = "yes" if got <= want else f"no ({got:.2f}×)"
            best = r.get("ns_best", {})
            by_best = ratio(best.get("ours"), best.get(who))
        floor = f"{fmt_ns(r['floor'])} ({r['floor_label']})" if r["floor"] is not None else "–"
        out.append(f"| {r['row']} | " + " | ".join(cells) + f" | {floor} | "
                   f"{ratio(ours, ns.get('nanobind'))} | {ratio(ours, ns.get('dlpark'))} | {tgt} | {met} | {by_best} |")
    out.append("")
    selfs = [r for r in results if r.get("self")]
    if selfs:
        out += ["Ours per tensor of a list against ours importing one tensor of that list alone "
                "(`import_tensor`, measured in the same rounds), medians; the ratio from the best of "
                "the rounds beside it:", "",
                "| operation | ours per tensor | ours alone (what) | ratio | target | met | best of rounds |",
                "|---|---:|---:|---:|---|---|---:|"]
        for r in selfs:
            s, ours = r["self"], r["ns"].get("ours")
            alone = s["ns"] if s["ns"] is not None else NA(s["error"])
            got = ratio(ours, s["ns"])
            met = "–"
            if ours is not None and s["ns"] is not None:
                met = "yes" if ours / s["ns"] <= s["ratio"] else f"no ({ours / s['ns']:.2f}×)"
            out.append(f"| {r['short']} | {fmt_ns(ours) if ours is not None else '–'} | "
                       f"{fmt_ns(alone)} ({s['label']}) | {got} | ≤ {s['ratio']:.2f}× | {met} | "
                       f"{ratio(r['ns_best'].get('ours'), s['ns_best'])} |")
        out.append("")
    return "\n".join(out)


def draw_chart(results, label: str, path: pathlib.Path):
    """ns per call for each row and library (log scale), each row's floor as a
    dashed mark: drawn from the results just measured."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"ours": "#1f77b4", "nanobind": "#ff7f0e", "dlpark": "#2ca02c",
              "pyo3-dlpack 0.3": "#9467bd"}
    fig, ax = plt.subplots(figsize=(10, 0.9 * len(results) + 1.2))
    height = 0.8 / len(NB_LIBS)
    for i, r in enumerate(results):
        y0 = len(results) - 1 - i
        for j, lib in enumerate(NB_LIBS):
            v = r["ns"].get(lib)
            if v is None:
                continue
            y = y0 + 0.4 - (j + 0.5) * height
            ax.barh(y, v, height=height * 0.9, color=colors[lib],
                    label=lib if i == 0 or lib not in ax.get_legend_handles_labels()[1] else None)
            ax.text(v * 1.03, y, f"{v:,.0f}", va="center", fontsize=7)
        if r["floor"] is not None:
            ax.plot([r["floor"]] * 2, [y0 - 0.42, y0 + 0.42], "k--", lw=1,
                    label="floor" if "floor" not in ax.get_legend_handles_labels()[1] else None)
    ax.set_yticks(range(len(results)))
    ax.set_yticklabels([r["short"] for r in reversed(results)], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ns per call, per tensor in the list rows (log scale; lower is better)")
    ax.set_title(f"pyo3-dlpack against nanobind and Rust crates: {label}", fontsize=9)
    top = max(v for r in results for v in r["ns"].values() if v is not None)
    ax.set_xlim(right=top * 1.8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


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


def parse_rows(spec: str) -> set[int]:
    """"7-9,11" → {7, 8, 9, 11}, checked against the nanobind table's rows."""
    rows = set()
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        rows.update(range(int(lo), int(hi or lo) + 1))
    bad = sorted(r for r in rows if not 1 <= r <= len(NB_SHORT))
    if bad:
        raise argparse.ArgumentTypeError(f"no row {bad} (rows are 1..{len(NB_SHORT)})")
    return rows


def trial_rows(args):
    """`--rows`: the chosen rows of the nanobind table alone, printed; written
    (Markdown, JSON and chart beside it) only where --output names a file."""
    if bench_nanobind is None:
        sys.exit("bench_nanobind not built (bench_nanobind/build.py)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    label = (f"trial, rows {','.join(map(str, sorted(args.rows)))} "
             f"({datetime.datetime.now():%Y-%m-%d %H:%M}, load average {load:.2f} at start)")
    nb_results = measure_nanobind(only=args.rows)
    table = f"### {label}\n\n" + render_nanobind(nb_results)
    print(table)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(table)
        args.output.with_suffix(".json").write_text(
            json.dumps([{"run": label, "nanobind": nb_results}], indent=1) + "\n")
        draw_chart(nb_results, label, args.output.with_suffix(".svg"))
        print(f"written to {args.output} (+ .json, .svg)", file=sys.stderr)


def main():
    global REPEAT, MIN_REPEAT_S, NB_ROUNDS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--fresh", action="store_true", help="start results.md over")
    p.add_argument("--repeat", type=int, default=REPEAT, help="repeats per measurement (>= 5)")
    p.add_argument("--nb-rounds", type=int, default=NB_ROUNDS,
                   help="rounds of the nanobind table, whose medians it shows (>= 5)")
    p.add_argument("--min-time", type=float, default=MIN_REPEAT_S,
                   help="seconds per repeat (default 0.2; lower only for a smoke test)")
    p.add_argument("--output", type=pathlib.Path, default=None,
                   help="results file (default results.md; results.json and head_to_head.svg "
                        "go beside it)")
    p.add_argument("--rows", type=parse_rows, default=None,
                   help="trial runs: only these rows of the nanobind table (1-based, e.g. 7-9,11; "
                        "--list-rows prints them), no other table; prints the results and writes "
                        "nothing unless --output is given")
    p.add_argument("--list-rows", action="store_true", help="print the nanobind table's rows and exit")
    args = p.parse_args()
    REPEAT = max(5, args.repeat)
    MIN_REPEAT_S = args.min_time
    NB_ROUNDS = max(5, args.nb_rounds)

    if args.list_rows:
        for number, short in enumerate(NB_SHORT, start=1):
            print(f"{number:3d}  {short}")
        return
    if args.rows is not None:
        trial_rows(args)
        return
    if args.output is None:
        args.output = RESULTS

    if args.fresh or not args.output.exists():
        args.output.write_text(machine_header())
    run = len(re.findall(r"^### Run \d+", args.output.read_text(), re.M)) + 1
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    label = f"Run {run} ({stamp}, load average {load:.2f} at start)"

    floors, rows, flat = measure()
    table = render(floors, rows, flat, label)
    if bench_nanobind is not None:
        nb_results = measure_nanobind()
        table += "\n" + render_nanobind(nb_results)
        # Next to the Markdown results: results.json and head_to_head.svg by default.
        as_json = args.output.with_suffix(".json")
        runs = json.loads(as_json.read_text()) if as_json.exists() and not args.fresh else []
        runs.append({"run": label, "nanobind": nb_results})
        as_json.write_text(json.dumps(runs, indent=1) + "\n")
        draw_chart(nb_results, label, args.output.parent / CHART.name)
    else:
        print("bench_nanobind not built (bench_nanobind/build.py): nanobind table skipped",
              file=sys.stderr)
    print(machine_header() if run == 1 else "")
    print(table)
    with args.output.open("a") as f:
        f.write("\n" + table)
    print(f"appended to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
