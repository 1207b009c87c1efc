"""Builds bench_nanobind next to this file with g++ (no cmake), from the
sources pip's `nanobind` package ships. Run with the interpreter that will
import it: `python benchmarks/bench_nanobind/build.py`."""

import pathlib
import subprocess
import sys
import sysconfig

import nanobind

HERE = pathlib.Path(__file__).resolve().parent
out = HERE / ("bench_nanobind" + sysconfig.get_config_var("EXT_SUFFIX"))
robin_map = pathlib.Path(nanobind.source_dir()).parent / "ext" / "robin_map" / "include"
cmd = [
    "g++", "-O3", "-DNDEBUG", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
    "-fno-strict-aliasing",
    f"-I{sysconfig.get_paths()['include']}", f"-I{nanobind.include_dir()}", f"-I{robin_map}",
    str(pathlib.Path(nanobind.source_dir()) / "nb_combined.cpp"),
    str(HERE / "bench_nanobind.cpp"),
    "-o", str(out),
]
print(" ".join(cmd))
subprocess.run(cmd, check=True)
print(f"built {out.name} (nanobind {nanobind.__version__})")
sys.exit(0)
