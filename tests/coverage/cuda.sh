#!/usr/bin/env bash
# Line coverage of the crate's CUDA code (`make coverage-cuda`, not part of `make test`):
# the runtime crate's unit tests (`cargo test -p pyo3-dlpack --lib --features cudarc`) and
# the stand-in driver's Python suites (test_cuda_standin.py, test_cudarc_standin.py,
# test_exchange_standin.py), run against a test extension built with
# `-C instrument-coverage`, merged into one profile and reported per file by the
# llvm-cov of rustc's own LLVM (`rustup component add llvm-tools`).
#
# Variables: PYTHON (an interpreter with numpy, pytest and maturin's venv; default python3),
# PYTHON_SITE (site-packages for the embedded interpreter of the Rust tests),
# COVERAGE_PYTESTS (the pytest files to run; default the three stand-in suites).
# Output: target/coverage/report.txt (per file), target/coverage/html/index.html (per line).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
PYTHON=${PYTHON:-python3}
PYTHON_SITE=${PYTHON_SITE:-$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')}
COVERAGE_PYTESTS=${COVERAGE_PYTESTS:-tests/python/test_cuda_standin.py tests/python/test_cudarc_standin.py tests/python/test_exchange_standin.py}
out=$root/target/coverage

host=$(rustc -vV | sed -n 's/^host: //p')
tools=$(rustc --print sysroot)/lib/rustlib/$host/bin
if [ ! -x "$tools/llvm-profdata" ] || [ ! -x "$tools/llvm-cov" ]; then
    echo "coverage-cuda: no llvm-profdata/llvm-cov of rustc's LLVM" \
        "($(rustc -vV | sed -n 's/^LLVM version: //p')) in $tools:" \
        "run 'rustup component add llvm-tools'" >&2
    exit 1
fi

rm -rf "$out/profraw" "$out/wheel" "$out/site" "$out/html"
mkdir -p "$out/profraw"

# The stand-in driver itself is not measured: built as `make test` builds it.
nice -n "${NICE:-0}" cargo build --quiet -p cuda-standin
standin=$root/target/debug/libcuda.so

# Everything below is instrumented, in its own target directory.
export CARGO_TARGET_DIR=$out/build
export RUSTFLAGS="-C instrument-coverage"
export LLVM_PROFILE_FILE=$out/profraw/%p-%m.profraw

# 1. The runtime crate's unit tests.
PYTHONPATH=$PYTHON_SITE nice -n "${NICE:-0}" cargo test --quiet -p pyo3-dlpack --lib --features cudarc
objects=$(cargo test --quiet -p pyo3-dlpack --lib --features cudarc --no-run \
    --message-format=json | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable"):
        print(message["executable"])
')

# 2. The test extension (with cudarc), installed apart, and the stand-in suites over it.
nice -n "${NICE:-0}" maturin build --quiet -m tests/extension/Cargo.toml --features cudarc -o "$out/wheel"
"$PYTHON" -m pip install --quiet --no-deps --target "$out/site" "$out"/wheel/*.whl
extension=$(find "$out/site/dlpack_testext" -name 'dlpack_testext*.so' | head -1)
PYTHONPATH=$out/site "$PYTHON" -c '
import sys, dlpack_testext
assert dlpack_testext.__file__.startswith(sys.argv[1]), dlpack_testext.__file__
' "$out/site"
# shellcheck disable=SC2086
CUDA_STANDIN=$standin PYTHONPATH=$out/site "$PYTHON" -m pytest -q -p no:cacheprovider \
    $COVERAGE_PYTESTS

# 3. One profile, reported for the CUDA code: pyo3-dlpack/src/cuda/**, and the files of
# export, import and the exchange API with CUDA branches.
"$tools/llvm-profdata" merge -sparse "$out"/profraw/*.profraw -o "$out/cuda.profdata"
sources=(
    pyo3-dlpack/src/cuda
    pyo3-dlpack/src/exchange/consumer.rs
    pyo3-dlpack/src/exchange/producer.rs
    pyo3-dlpack/src/export/buffer.rs
    pyo3-dlpack/src/export/copy.rs
    pyo3-dlpack/src/export/cuda_array_interface.rs
    pyo3-dlpack/src/export/mod.rs
    pyo3-dlpack/src/export/plan.rs
    pyo3-dlpack/src/import/entry.rs
    pyo3-dlpack/src/import/view.rs
    pyo3-dlpack/src/import/protocols/cuda_array_interface.rs
)
# The first object is llvm-cov's positional binary; the others follow as -object.
object_args=("$extension")
for object in $objects; do
    object_args+=(-object "$object")
done
"$tools/llvm-cov" report --instr-profile="$out/cuda.profdata" "${object_args[@]}" \
    --show-region-summary=false --show-branch-summary=false \
    --show-instantiation-summary=false "${sources[@]}" | tee "$out/report.txt"
"$tools/llvm-cov" show --format=html --output-dir="$out/html" \
    --instr-profile="$out/cuda.profdata" "${object_args[@]}" "${sources[@]}" >/dev/null
echo "coverage-cuda: $out/report.txt, $out/html/index.html"
