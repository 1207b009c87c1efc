#!/bin/sh
# The stub PyO3's introspection writes for examples/typed-args (maturin generate-stubs, feature
# experimental-inspect): generated again and compared with the checked-in
# examples/typed-args/typed_args.pyi (maturin ships it in the wheel); then, against the
# installed example, a user's module calling it with NumPy, torch and JAX values
# (typed_user.py) type-checks under mypy --strict and pyright with no error and runs, and each
# wrong call of typed_wrong.py is reported by both, on its line, with no other error.
# PYTHON is the venv's interpreter (the example installed in it); run from anywhere.
set -eu
PYTHON=${PYTHON:-python}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${CARGO_TARGET_DIR:-$root/target}/typed-stubs
rm -rf "$out"
maturin generate-stubs --quiet -m "$root/examples/typed-args/Cargo.toml" \
	--features experimental-inspect -o "$out"
diff -u "$root/examples/typed-args/typed_args.pyi" "$out/typed_args/__init__.pyi" || {
	echo "typed_stubs: the generated stub differs from examples/typed-args/typed_args.pyi"
	echo "(if the change is meant, copy $out/typed_args/__init__.pyi there)"; exit 1; }
cd "$root/tests/typing"
"$PYTHON" -m mypy --python-executable "$PYTHON" --strict --implicit-reexport typed_user.py
PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$PYTHON" -m pyright --pythonpath "$PYTHON" typed_user.py
"$PYTHON" typed_user.py
# The wrong calls: the lines each checker reports, against the lines expected. mypy 1.x accepts a
# NumPy array of another dtype where NDArray[float64] is declared (line 10; pyright refuses it).
mypy_expected="9 11 12"
pyright_expected="9 10 11 12"
mypy_lines=$("$PYTHON" -m mypy --python-executable "$PYTHON" --strict --implicit-reexport \
	typed_wrong.py | sed -n 's/^typed_wrong\.py:\([0-9]*\): error:.*/\1/p' | sort -un | tr '\n' ' ')
pyright_lines=$(PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$PYTHON" -m pyright --pythonpath "$PYTHON" \
	typed_wrong.py | sed -n 's/^ *[^ ]*typed_wrong\.py:\([0-9]*\):[0-9]* - error:.*/\1/p' \
	| sort -un | tr '\n' ' ')
for checker in mypy pyright; do
	eval "found=\$${checker}_lines expected=\$${checker}_expected"
	if [ "${found% }" != "$expected" ]; then
		echo "typed_stubs: $checker reported typed_wrong.py lines '${found% }', expected '$expected'"
		exit 1
	fi
done
echo "typed_stubs: the stub is current; typed_user.py checks clean; each wrong call is reported"
