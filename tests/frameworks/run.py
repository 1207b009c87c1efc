"""Runs the frameworks' own DLPack test files, unchanged, from the installed
wheels: once as they are, once with every `from_dlpack` relayed through Rust
(`relay.py`). Every test that passes without the relay must pass with it.

    python tests/frameworks/run.py        (what `make framework-tests` runs)
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent

# (label, module whose directory holds the file, file)
FILES = [
    ("NumPy", "numpy", "_core/tests/test_dlpack.py"),
    ("pyarrow", "pyarrow", "tests/test_dlpack.py"),
]


def locate(module, relative):
    spec = __import__(module)
    return pathlib.Path(spec.__file__).resolve().parent / relative


def outcomes(path, relay):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "outcomes.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "relay", "-p", "no:cacheprovider",
               "--outcomes", str(out), str(path)]
        if relay:
            cmd.append("--relay")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=tmp, check=False)
        if not out.exists():
            sys.exit(f"{path}: pytest did not run (try the command by hand: {' '.join(cmd)})")
        return json.loads(out.read_text())


def main():
    failed = False
    for label, module, relative in FILES:
        path = locate(module, relative)
        plain_run, relayed_run = outcomes(path, relay=False), outcomes(path, relay=True)
        plain, relayed = plain_run["outcomes"], relayed_run["outcomes"]
        if relayed_run["relayed"] == 0:
            print(f"{label}: no from_dlpack call went through the relay")
            failed = True
        passed = {t for t, o in plain.items() if o == "passed"}
        passed_relayed = {t for t, o in relayed.items() if o == "passed"}
        lost = sorted(passed - passed_relayed)
        print(f"{label} {module}/{relative}: {len(passed)} of {len(plain)} pass as shipped, "
              f"{len(passed_relayed)} of {len(relayed)} with every from_dlpack relayed through Rust "
              f"({relayed_run['relayed']} relayed calls)")
        for test in lost:
            print(f"  passes as shipped, not relayed: {test} ({relayed.get(test, 'not run')})")
        failed |= bool(lost)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
