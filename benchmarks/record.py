"""How the benchmark scripts record their runs (benchmarks/README.md, "Results files").

Each script given `--output FILE` appends its run to FILE as a section
"### Run N (date, load average at start)", N counted from the sections already there;
a missing FILE, or `--fresh`, starts the file over with its title and a header naming the
machine and the build. `make` removes the file (or passes `--fresh`) before the first of
its two runs, so a results file holds the two runs of one invocation.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import re
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
RUN_HEADING = re.compile(r"^### Run \d+", re.M)


def started() -> str:
    """The date and load of a run's start, for its heading (call before timing)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{stamp}, load average {load:.2f} at start"


def source() -> str:
    """The repository's commit, and whether pyo3-dlpack/ has uncommitted changes: what a
    build made from the working tree (the test extension) was compiled from."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "../pyo3-dlpack"],
                               cwd=HERE, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "commit unknown (no git)"
    return f"commit {commit}" + (" + uncommitted changes in pyo3-dlpack/" if dirty.strip() else "")


def machine() -> str:
    return (f"{os.cpu_count()} CPUs ({platform.machine()}), {platform.system()} "
            f"{platform.release()}, {platform.python_implementation()} {platform.python_version()}")


def add_run(path, title: str, header: list[str], body: list[str], start: str,
            fresh: bool = False) -> int:
    """Appends `body` (Markdown lines) to `path` as the next "### Run N"; starts the file
    over with `# title` and the `header` lines when it is missing or `fresh`. Returns N."""
    path = pathlib.Path(path)
    if fresh or not path.exists():
        path.write_text("\n".join([f"# {title}", "", *header, ""]))
    run = len(RUN_HEADING.findall(path.read_text())) + 1
    with path.open("a") as f:
        f.write("\n".join(["", f"### Run {run} ({start})", "", *body]).rstrip() + "\n")
    return run
