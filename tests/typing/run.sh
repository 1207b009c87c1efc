#!/bin/sh
# The shipped type stub (DLPackTensor::PYI, as examples/image-buffer ships it) checked three
# ways, against the installed image_buffer example: stubtest (the stub matches the runtime
# class), mypy and pyright (a user's module that passes a DLPackTensor to np.from_dlpack,
# torch.from_dlpack and jnp.from_dlpack type-checks); then the module runs. `make test` runs
# this after installing the examples; PYTHON is the venv's interpreter.
set -eu
PYTHON=${PYTHON:-python}
cd "$(dirname "$0")"
"$PYTHON" -m mypy.stubtest image_buffer --allowlist stubtest-allowlist.txt --ignore-unused-allowlist
# --implicit-reexport: torch re-exports from_dlpack without naming it in __all__.
"$PYTHON" -m mypy --python-executable "$PYTHON" --strict --implicit-reexport user_module.py
PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$PYTHON" -m pyright --pythonpath "$PYTHON" user_module.py
"$PYTHON" user_module.py
