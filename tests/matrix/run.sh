#!/usr/bin/env bash
# Runs one entry of `make test-matrix`: the abi3 wheel of the test extension in a venv of the
# entry's own, with the suites the entry names.
# usage: tests/matrix/run.sh ENTRY WHEEL_DIR VENV_ROOT
#   ENTRY      the name of a file tests/matrix/ENTRY.txt: pip requirements, plus two header
#              lines, `# python: X.Y.Z` (a CPython under PYENV_VERSIONS) and `# tests: FILES`
#              (may be repeated; paths relative to the repository root).
#   WHEEL_DIR  where the abi3 wheel is; empty: only make the venv (to download ahead).
#   VENV_ROOT  the venv is VENV_ROOT/ENTRY. It is made once and reused until the entry's
#              interpreter or requirement lines change (comments and the test list do not
#              count, so editing them does not download torch again).
set -euo pipefail
entry=$1 wheels=$2 root=$3
versions=${PYENV_VERSIONS:-$HOME/.pyenv/versions}
spec=tests/matrix/$entry.txt
test -f "$spec" || { echo "no matrix entry $entry ($spec)" >&2; exit 2; }
python=$(sed -n 's/^# python: *//p' "$spec")
tests=$(sed -n 's/^# tests: *//p' "$spec")
venv=$root/$entry
key=$(printf 'python %s\n' "$python"; grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$spec")
if [ "$key" != "$(cat "$venv/.requirements" 2>/dev/null)" ]; then
    rm -rf "$venv"
    "$versions/$python/bin/python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$spec"
    printf '%s\n' "$key" > "$venv/.requirements"
fi
[ -n "$wheels" ] || exit 0
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    "$wheels"/dlpack_testext-*-abi3-*.whl
echo "== matrix entry $entry: CPython $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])');" \
    "$("$venv/bin/python" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null |
        grep -i -E '^(numpy|torch|jax|jaxlib|tensorflow[-_]cpu|paddlepaddle|mlx|mlx[-_]cpu|ml.dtypes|pyarrow|array[-_]api[-_]strict|apache[-_]tvm[-_]ffi|pytest)==' |
        tr '\n' ' ')"
# shellcheck disable=SC2086
"$venv/bin/python" -m pytest -q -p no:cacheprovider -rfEx $tests
