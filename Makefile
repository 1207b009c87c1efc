# The two commands of the README: `make demo` and `make test`.
# Both bootstrap a virtualenv (VENV, default .venv) from requirements-dev.txt
# once; later runs reuse it and only rebuild what changed.

VENV ?= .venv
PYTHON ?= python3
VENV_PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.pyo3-dlpack-requirements

# Run cargo, maturin and pytest inside the venv, so that PyO3 builds against
# the venv's interpreter and the embedded-Python tests import its packages.
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(VIRTUAL_ENV)/bin:$(PATH)
# The embedded interpreter of `cargo test` does not know it is in a venv.
VENV_SITE = $(shell $(VENV_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

.PHONY: demo test bench head-to-head venv lint rust-test py-test clean-venv

demo: $(VENV_STAMP)
	maturin develop --release --quiet -m examples/image-buffer/Cargo.toml
	$(VENV_PY) examples/image-buffer/demo.py

test: lint rust-test py-test

venv: $(VENV_STAMP)

$(VENV_STAMP): requirements-dev.txt
	@test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --upgrade pip
	$(VENV_PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

lint: $(VENV_STAMP)
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p pyo3-dlpack --all-targets --all-features -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p pyo3-dlpack --all-features

# Unit, integration, doc (README included) and ui tests.
rust-test: $(VENV_STAMP)
	PYTHONPATH=$(VENV_SITE) cargo test --workspace
	# The runtime crate alone, default features only (the workspace run enables them all).
	PYTHONPATH=$(VENV_SITE) cargo test -p pyo3-dlpack

# pytest against real frameworks, over the test extension and the examples.
py-test: $(VENV_STAMP)
	maturin develop --quiet -m tests/extension/Cargo.toml
	for example in examples/*/; do maturin develop --quiet -m $$example/Cargo.toml || exit 1; done
	$(VENV_PY) -m pytest -q tests/python examples
	# The frameworks' own DLPack test files, unchanged, with every from_dlpack relayed through Rust.
	$(VENV_PY) tests/frameworks/run.py

# Criterion (Rust side) and the Python-side timings and memory checks, each
# run twice; see BENCHMARKS.md. Release builds; takes a few minutes.
bench: $(VENV_STAMP)
	maturin develop --release --quiet -m tests/extension/Cargo.toml
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=$(VENV_SITE) cargo bench -p pyo3-dlpack-tests --bench exchange
	for run in 1 2; do OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/python_bench.py || exit 1; done

# The head-to-head against dlpark, pyo3-dlpack 0.3 and nanobind (benchmarks/README.md):
# release builds of the four modules, then two runs into benchmarks/results.md.
head-to-head: $(VENV_STAMP)
	for m in bench_ours bench_dlpark bench_pyo3dlpack03; do (cd benchmarks/$$m && maturin develop --release --quiet) || exit 1; done
	$(VENV_PY) benchmarks/bench_nanobind/build.py
	OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/head_to_head.py --fresh
	OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/head_to_head.py

clean-venv:
	rm -rf $(VENV)
