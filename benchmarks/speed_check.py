"""Speed regressions caught by counting, not timing: `make speed-check`.

Each hot path runs under `valgrind --tool=callgrind --cache-sim=yes` in one process (the release
build of `bench_ours`, ASLR off, PYTHONHASHSEED fixed, PYTHONMALLOC=malloc). Interpreter
start-up and imports are not instrumented (`--instr-atstart=no`); only the main thread is
counted (a framework's worker threads run on their own schedule); each path is counted between callgrind client requests
(benchmarks/speed_marks.c, called through ctypes): after N warm-up calls through the same
loop, three rounds of N calls then 2N calls, the garbage collector off (collected once before).
The count of one call is (fewest(2N) - fewest(N)) / N, where fewest is an event's smallest
count over the rounds: the difference cancels the client requests and the loop's set-up, the
warm-up what the first calls do once (the loop's call specialised by the interpreter, caches,
allocators), and the fewest what happens in one run only (the first run after the warm-up is
still dearer for some paths; an arena mapped, memory trimmed), which falls where the
process's history puts it: with one round and a warm-up through another loop, one path
counted 5% more in another checkout than in this one.

A path's metric is either `Ir` (instructions) or `cost`, for the paths that move memory (the
gather, the copies, in-band pickling): instructions + 10 x L1 data misses + 100 x last-level
misses (reads and writes), so that a change of access pattern (a gather reading or writing
across cache lines) counts even when the instruction count does not move.

    python benchmarks/speed_check.py --marks LIB [--update]

checks every path against benchmarks/speed-baseline.json and fails, naming each path that grew
past the tolerance and by how much; `--update` rewrites that file instead (a deliberate commit:
the guide's testing chapter).
"""

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "speed-baseline.json")
TOLERANCE = 0.03
KIB = 1024
WEIGHTS = {"Ir": 1, "D1mr": 10, "D1mw": 10, "DLmr": 100, "DLmw": 100}
COST = "Ir + 10 x (D1mr + D1mw) + 100 x (DLmr + DLmw)"


# Each path: its metric, N (the calls of the shorter counted run) and, where the path's own
# count varies between runs, its tolerance (else TOLERANCE).
SPEC = {
    "numpy import (PyTensor)": ("Ir", 200),
    "numpy import (derived, FromDLPack)": ("Ir", 200),
    "torch import (PyTensor)": ("Ir", 200),
    "jax import (PyTensor)": ("Ir", 200),
    "Native<Vec<f32>> return as numpy, 1 KiB": ("Ir", 200),
    "Native<Vec<f32>> return as torch, 1 KiB": ("Ir", 200),
    # jaxlib's dispatch waits on its worker threads: the main thread's count varies by up
    # to 18% between runs (36,746 to 43,151 in six), so only a larger growth is caught here
    # (the route this path exists to keep, jaxlib's capsule import, is 5x cheaper than the
    # public one it would fall back to).
    "Native<Vec<f32>> return as jax, 1 KiB": ("Ir", 400, 0.25),
    "derived IntoDLPack struct returned, 1 KiB": ("Ir", 200),
    "__dlpack__() of a DLPackTensor": ("Ir", 200),
    "torch.from_dlpack(DLPackTensor)": ("Ir", 200),
    "capsule create + drop, legacy": ("Ir", 200),
    "capsule create + drop, versioned": ("Ir", 200),
    "__dlpack__(copy=True), 1 MiB contiguous": ("cost", 2),
    "to_vec::<f32>() of a.T, 512 x 512 (gather)": ("cost", 2),
    "pickle dumps + loads, protocol 5 out of band, 1 MiB": ("Ir", 50),
    "pickle dumps + loads, protocol 5 in band, 1 MiB": ("cost", 2),
    "pickle dumps + loads, protocol 4 in band, 1 MiB": ("cost", 2),
}


def calls():
    """Each path's call, by name (SPEC's). Imported only inside valgrind."""
    import pickle

    import bench_ours as ours
    import jax.numpy as jnp
    import numpy as np
    import torch

    small = np.zeros(KIB, np.float32)
    small_torch = torch.zeros(KIB)
    small_jax = jnp.zeros(KIB, jnp.float32).block_until_ready()
    exporter = ours.export_object(KIB)
    mib = ours.export_object(256 * KIB)  # 1 MiB of float32
    np.from_dlpack(mib)[:] = 1.0
    square = np.arange(512 * 512, dtype=np.float32).reshape(512, 512)

    def out_of_band():
        buffers = []
        data = pickle.dumps(mib, protocol=5, buffer_callback=buffers.append)
        return pickle.loads(data, buffers=buffers)

    return dict(zip(SPEC, [
        lambda: ours.import_tensor(small),
        lambda: ours.import_typed(small),
        lambda: ours.import_tensor(small_torch),
        lambda: ours.import_tensor(small_jax),
        lambda: ours.native_numpy(KIB),
        lambda: ours.native_torch(KIB),
        lambda: ours.native_jax(KIB),
        lambda: ours.export_derived(KIB),
        exporter.__dlpack__,
        lambda: torch.from_dlpack(exporter),
        lambda: ours.export_capsule(exporter),
        lambda: ours.export_capsule_versioned(exporter),
        lambda: mib.__dlpack__(copy=True),
        lambda: ours.copy_to_vec(square.T),
        out_of_band,
        lambda: pickle.loads(pickle.dumps(mib, protocol=5)),
        lambda: pickle.loads(pickle.dumps(mib, protocol=4)),
    ]))


ROUNDS = 3


def inner(marks_path):
    """Inside valgrind: every path, ROUNDS times N then 2N calls, each run dumped as
    `name|reps|round`, after N warm-up calls through the same loop."""
    import ctypes
    import gc

    marks = ctypes.CDLL(marks_path)
    table = calls()

    def run(call, reps, label=None):
        # One loop for the warm-up and the counted runs: the interpreter specialises the loop's
        # call for the path's callable during the warm-up, not during the first counted run.
        marks.speed_zero()
        for _ in range(reps):
            call()
        if label:
            marks.speed_dump(label.encode())

    gc.collect()
    gc.disable()
    marks.speed_start()
    for name, call in table.items():
        n = SPEC[name][1]
        run(call, n)  # warm-up: whatever the first calls do once (caches, allocators)
        for round_ in range(ROUNDS):
            for reps in (n, 2 * n):
                run(call, reps, f"{name}|{reps}|{round_}")


def read_dumps(folder):
    """{(name, reps, round): {event: count}} from callgrind's dump files of the main thread."""
    runs = {}
    for path in glob.glob(os.path.join(folder, "callgrind.out*-01")):
        desc, events, totals = None, None, None
        with open(path) as f:
            for line in f:
                if line.startswith("desc: Trigger: Client Request: "):
                    desc = line.split(": ", 3)[3].strip()
                elif line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith(("totals:", "summary:")):
                    totals = [int(x) for x in line.split()[1:]]
        if desc and desc.count("|") == 2 and events and totals:
            name, reps, round_ = desc.rsplit("|", 2)
            runs[(name, int(reps), int(round_))] = dict(zip(events, totals + [0] * len(events)))
    return runs


def measure(marks_path):
    """One valgrind run of every path: {name: {metric, Ir, D1 and LL misses, cost} per call}."""
    if shutil.which("valgrind") is None:
        sys.exit("speed-check: valgrind is not installed (Debian: apt-get install valgrind)")
    # PYTHONMALLOC=malloc: CPython's small-object allocator costs more or less per call as an
    # allocation opens or empties one of its pools, which depends on what the process did before
    # (the same build counted `__dlpack__()` 877 and 892 from two checkouts); the C allocator's
    # per-thread cache gives the same counts from both (1,010 and 1,010).
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONMALLOC="malloc", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # A fixed folder (a random name would change the client's memory layout, a little).
    folder = os.path.join(os.path.dirname(os.path.abspath(marks_path)), "callgrind")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    # The caches simulated are fixed (not the host's): the same counts on every machine.
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes",
               "--separate-threads=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64",
               f"--callgrind-out-file={folder}/callgrind.out", sys.executable,
               os.path.abspath(__file__), "--inner", os.path.abspath(marks_path)]
    # ASLR off, where the kernel lets us: the same addresses, so the same cache sets.
    if shutil.which("setarch") and subprocess.run(
            ["setarch", platform.machine(), "-R", "true"], capture_output=True).returncode == 0:
        command = ["setarch", platform.machine(), "-R"] + command
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"speed-check: the counted run failed ({done.returncode}):\n{done.stderr}")
    runs = read_dumps(folder)
    metrics = {name: spec[0] for name, spec in SPEC.items()}
    results = {}
    for name, (_, n, *_) in SPEC.items():
        once, twice = fewest(runs, name, n), fewest(runs, name, 2 * n)
        if once is None or twice is None:
            continue
        per_call = {e: (twice[e] - once[e]) / n for e in WEIGHTS}
        results[name] = {"metric": metrics[name], "Ir": round(per_call["Ir"]),
                         "D1 misses": round(per_call["D1mr"] + per_call["D1mw"]),
                         "LL misses": round(per_call["DLmr"] + per_call["DLmw"]),
                         "cost": round(sum(w * per_call[e] for e, w in WEIGHTS.items()))}
    missing = set(metrics) - set(results)
    if missing:
        sys.exit(f"speed-check: no counts for {sorted(missing)}")
    return {name: results[name] for name in metrics}


def fewest(runs, name, reps):
    """Of a path's ROUNDS runs of `reps` calls, each event's fewest: an event that happens in
    one run only (an arena mapped, a table grown, memory returned to the system) is the
    process's history, not the path's cost, and where it falls depends on the environment."""
    counted = [runs[(name, reps, r)] for r in range(ROUNDS) if (name, reps, r) in runs]
    if len(counted) < ROUNDS:
        return None
    return {e: min(c.get(e, 0) for c in counted) for e in WEIGHTS}


def versions():
    import jax
    import numpy
    import torch

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "torch": torch.__version__, "jax": jax.__version__, "valgrind": subprocess.run(
                ["valgrind", "--version"], capture_output=True, text=True).stdout.strip()}


def table(results, baseline=None):
    lines = []
    for name, row in results.items():
        value = row[row["metric"]]
        line = (f"  {name:<52} {row['metric']:>4} {value:>12,}  (Ir {row['Ir']:,}, "
                f"D1 misses {row['D1 misses']:,}, LL misses {row['LL misses']:,})")
        if baseline and name in baseline:
            old = baseline[name][row["metric"]]
            line += f"  {(value - old) / old:+.2%}"
        lines.append(line)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--marks", help="the built benchmarks/speed_marks.c (a shared library)")
    parser.add_argument("--update", action="store_true", help="rewrite the baseline file")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        return inner(args.inner)
    results = measure(args.marks)
    if args.update:
        with open(BASELINE, "w") as f:
            json.dump({"tolerance": TOLERANCE, "cost": COST,
                       "build": "bench_ours, release (benchmarks/Cargo.toml's profile)",
                       "versions": versions(), "paths": results}, f, indent=2)
            f.write("\n")
        print(f"speed-baseline: wrote {os.path.relpath(BASELINE)}\n{table(results)}")
        return 0
    with open(BASELINE) as f:
        saved = json.load(f)
    tolerance, baseline = saved["tolerance"], saved["paths"]
    print(table(results, baseline))
    now = versions()
    if now != saved["versions"]:
        print(f"speed-check: note: measured with {now}, the baseline with {saved['versions']}")
    failed = []
    for name, row in results.items():
        if name not in baseline:
            failed.append(f"{name}: not in the baseline (make speed-baseline)")
            continue
        metric = row["metric"]
        old, new = baseline[name][metric], row[metric]
        allowed = SPEC[name][2] if len(SPEC[name]) > 2 else tolerance
        if new > old * (1 + allowed):
            failed.append(f"{name}: {metric} grew {(new - old) / old:+.1%} ({old:,} -> {new:,} "
                          f"per call; tolerance {allowed:.0%})")
    for line in failed:
        print(f"speed-check: FAILED: {line}")
    if failed:
        return 1
    print(f"speed-check: {len(results)} paths within their tolerance of the baseline "
          f"({tolerance:.0%} unless SPEC says otherwise)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
