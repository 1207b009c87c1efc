#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU, CUDA, torch and CuPy but no Rust and no
# network: installs the abi3 wheels built by `make gpu-bundle` (the test
# extension with its cudarc functions, and the examples; no dependencies
# fetched) into a throwaway venv that sees the machine's packages, then runs
# the CUDA-marked tests, the native-result tests and the examples' tests.
# Results and pytest's log go to $OUT when set.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python=${PYTHON:-python3}
venv="$(mktemp -d)/venv"
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --no-deps --no-index "$here"/*.whl
"$venv/bin/python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
cd "$here"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -rs tests/test_cuda.py tests/test_cudarc.py \
    tests/test_native.py examples ${OUT:+--junitxml="$OUT/gpu-tests.xml"} "$@"
