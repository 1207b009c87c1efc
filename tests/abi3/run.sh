#!/usr/bin/env bash
# Runs the NumPy-only suites with the abi3 wheel on one CPython, in its own venv.
# usage: tests/abi3/run.sh PYTHON WHEEL_DIR VENV_DIR
# The venv holds only what tests/abi3/requirements-X.Y.txt pins (X.Y: PYTHON's
# version); it is made once and reused until that file changes. An empty
# WHEEL_DIR only makes the venv.
set -euo pipefail
python=$1 wheels=$2 venv=$3
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
requirements=tests/abi3/requirements-$version.txt
if ! cmp -s "$requirements" "$venv/.requirements"; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/.requirements"
fi
[ -n "$wheels" ] || exit 0
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    "$wheels"/dlpack_testext-*-abi3-*.whl
"$venv/bin/python" - <<'PY'
import sys, numpy, dlpack_testext
print(f"abi3 wheel ({dlpack_testext.dlpack_testext.__file__.rsplit('/', 1)[-1]}) on CPython "
      f"{sys.version.split()[0]} with NumPy {numpy.__version__}")
PY
"$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/python/test_numpy_exchange.py tests/python/test_negotiation.py \
    tests/python/test_numpy_direct.py tests/python/test_travel.py
