"""The one timing rule of the Python-side benchmarks: the best of 7 `timeit` repeats."""

import timeit


def best_ns(stmt, env, repeat=7, target_s=0.2):
    """ns per run of `stmt` (globals `env`): the best of `repeat` repeats of about
    `target_s / 4` seconds or more each."""
    timer = timeit.Timer(stmt, globals=env)
    number = 1
    while timer.timeit(number) < target_s / 4:
        number *= 4
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9
