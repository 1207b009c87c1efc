"""The timing rules of the Python-side benchmarks: the best of 7 `timeit` repeats
(`best_ns`), and single timed calls taken round-robin across a row's cells (`round_robin`,
for calls too long to repeat in a loop: copies, pickles of hundreds of MiB)."""

import time
import timeit


def best_ns(stmt, env, repeat=7, target_s=0.2):
    """ns per run of `stmt` (globals `env`): the best of `repeat` repeats of about
    `target_s / 4` seconds or more each."""
    timer = timeit.Timer(stmt, globals=env)
    number = 1
    while timer.timeit(number) < target_s / 4:
        number *= 4
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9


def round_robin(cells, repeat):
    """Best seconds of one call per cell (a dict label -> function), the cells timed in
    turn `repeat` times, so drift touches each alike."""
    results = {label: [] for label in cells}
    for _ in range(repeat):
        for label, f in cells.items():
            start = time.perf_counter()
            f()
            results[label].append(time.perf_counter() - start)
    return {label: min(ts) for label, ts in results.items()}
