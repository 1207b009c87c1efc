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

.PHONY: demo test check-targets check-aarch64 package abi3-test abi3-venvs test-matrix abi3-bench bench copies-bench pickling-bench torch-checks-bench speed-check speed-baseline size-check size-baseline head-to-head sanitize fuzz coverage-cuda gpu-bundle venv lint rust-test py-test clean-venv

demo: $(VENV_STAMP)
	maturin develop --release --quiet -m examples/image-buffer/Cargo.toml
	$(VENV_PY) examples/image-buffer/demo.py

# The downloads of the main venv's packages and of the abi3 venvs' (network, mostly) run while
# lint compiles: lint needs only the venv's interpreter. Each one's output is shown when it ends.
# The speed check counts instructions and simulated cache misses, not time, and the size check
# counts bytes, so they run beside the Python tests, which leave a core mostly idle.
test:
	$(MAKE) -j3 --output-sync=target venv abi3-venvs lint check-aarch64
	$(MAKE) rust-test
	$(MAKE) -j2 --output-sync=target py-test speed-check size-check
	$(MAKE) abi3-test package

venv: $(VENV_STAMP)

# Other platforms, compiled (`cargo check -D warnings` of the runtime crate, default, no and
# all features, abi3 and not, their standard libraries built from source where rustup has
# none), then the crate on its rust-version with Debian 13's Rust 1.85 (tests/platforms/; the
# guide's testing chapter). PLATFORMS picks targets.
PLATFORMS ?= aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf x86_64-pc-windows-msvc \
	x86_64-pc-windows-gnu i686-pc-windows-msvc aarch64-apple-darwin x86_64-unknown-linux-gnu
check-targets: | $(VENV_PY)
	tests/platforms/check.sh $(PLATFORMS)
	tests/platforms/msrv.sh

# The one `make test` runs: aarch64 Linux (Grace Hopper, Jetson, Graviton), the features that
# cost little to check there (all of them: `make check-targets`).
check-aarch64: | $(VENV_PY)
	FEATURE_SETS="default no-default" ABI3=no tests/platforms/check.sh aarch64-unknown-linux-gnu

$(VENV_PY):
	$(PYTHON) -m venv $(VENV)

$(VENV_STAMP): requirements-dev.txt | $(VENV_PY)
	$(VENV_PY) -m pip install --quiet --upgrade pip
	$(VENV_PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

lint: | $(VENV_PY)
	cargo fmt --all --check
	# The test extension with its cudarc feature, in the one workspace run (alone, its
	# dependencies' features differ from the workspace's, and they were all checked again).
	cargo clippy --workspace --all-targets --features dlpack-testext/cudarc -- -D warnings
	cargo clippy -p pyo3-dlpack --all-targets --all-features -- -D warnings
	# The stub hints (feature experimental-inspect) as an extension uses them.
	cargo clippy -p typed-args --features experimental-inspect -- -D warnings
	# No default features: DLPack only (benchmarks/size builds it so).
	cargo clippy -p pyo3-dlpack --all-targets --no-default-features -- -D warnings
	# And with the stub hints: PyO3's introspection names the types of methods compiled out.
	cargo clippy -p pyo3-dlpack --no-default-features --features experimental-inspect -- -D warnings
	# The docs as a user's `cargo doc` builds them (default features), then as docs.rs does.
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p pyo3-dlpack
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p pyo3-dlpack --all-features
	# Links and anchors of the README, the guide and the other Markdown documents.
	$(VENV_PY) tests/docs/check_links.py
	# The limited API's 3.11 level (abi3-py39 is built by abi3-test).
	cargo clippy --quiet -p pyo3-dlpack --target-dir target/abi3 --features pyo3/abi3-py311 -- -D warnings

# Unit, integration, doc and ui tests. The runtime crate's doc tests (README included), all
# features on, run once, in `make package`, against the packaged crates (a second run here
# would repeat them to the letter).
rust-test: $(VENV_STAMP)
	PYTHONPATH=$(VENV_SITE) cargo test --workspace --lib --bins --tests --examples
	PYTHONPATH=$(VENV_SITE) cargo test --workspace --doc --exclude pyo3-dlpack
	# The runtime crate alone, default features only (the workspace run enables them all).
	PYTHONPATH=$(VENV_SITE) cargo test -p pyo3-dlpack
	# Its unit tests without default features (DLPack only: the smallest build, benchmarks/size),
	# among them the error that pickling and copies raise without feature `pickle`, and that an
	# import, allocate_like and Native::torch take no exchange table without feature
	# `exchange-api` (import::entry::tests) and that NumPy and JAX arrays take `__dlpack__`
	# without feature `fast-paths` (import::entry::fast_path_tests); both also run in the
	# default build. The doc tests need feature `derive`.
	PYTHONPATH=$(VENV_SITE) cargo test -p pyo3-dlpack --lib --no-default-features
	# The stub features' own unit tests (no other build enables them): the hints each type
	# gives PyO3's introspection and pyo3-stub-gen, and the stub pyo3-stub-gen renders.
	PYTHONPATH=$(VENV_SITE) cargo test -p pyo3-dlpack --lib \
		--features experimental-inspect,stub-gen,ndarray,half -- inspect stub_gen

# The test extension as one abi3-py39 wheel (its own target directory), run with the
# NumPy-only suites on the oldest and newest CPython of the image and on 3.10 (the newest NumPy
# there, 2.2, is where from_dlpack imports became writable), each in a venv of its
# own with NumPy and pytest only (tests/abi3/). torch and JAX stay on the main venv.
ABI3_PYTHONS ?= 3.9.18 3.10.13 3.13.0
PYENV_VERSIONS ?= $(HOME)/.pyenv/versions
abi3-test: $(VENV_STAMP) abi3-venvs
	rm -rf target/abi3-wheel
	maturin build --quiet -m tests/extension/Cargo.toml --features abi3 \
		--target-dir target/abi3 -o target/abi3-wheel
	# The CPythons side by side (each mostly waits for pip), their outputs shown in order.
	pids=; for version in $(ABI3_PYTHONS); do \
		tests/abi3/run.sh $(PYENV_VERSIONS)/$$version/bin/python target/abi3-wheel \
			target/abi3-venvs/$$version > target/abi3-$$version.log 2>&1 & pids="$$pids $$!"; \
	done; failed=0; for pid in $$pids; do wait $$pid || failed=1; done; \
	for version in $(ABI3_PYTHONS); do cat target/abi3-$$version.log; done; test $$failed -eq 0

# The abi3 runs' venvs alone (made once, reused; `make test` makes them while lint compiles).
abi3-venvs:
	for version in $(ABI3_PYTHONS); do \
		tests/abi3/run.sh $(PYENV_VERSIONS)/$$version/bin/python "" target/abi3-venvs/$$version || exit 1; \
	done

# Not in `make test` (the torch venvs take ~4 GB each): the same abi3-py39 wheel against older
# and other frameworks. Each entry is a file tests/matrix/ENTRY.txt: its CPython, its pins and
# the suites it runs (tests/matrix/run.sh). Each entry's venv, target/matrix-venvs/ENTRY, is
# made once and reused until the entry's CPython or pins change. MATRIX picks entries
# (`make test-matrix MATRIX="numpy-1.26 jax-0.4"`); every entry named runs, and the target
# fails if any did. The guide's frameworks chapter (pyo3-dlpack/guide/frameworks.md) says what each
# entry ran and found.
MATRIX ?= numpy-1.26 numpy-2.0 numpy-2.2 numpy-2.4 torch-2.5 torch-2.9 jax-0.4 current \
	tensorflow-2.21 paddle-3.3 mlx-0.32
test-matrix: $(VENV_STAMP)
	rm -rf target/matrix-wheel
	maturin build --quiet -m tests/extension/Cargo.toml --features abi3 \
		--target-dir target/abi3 -o target/matrix-wheel
	failed=; for entry in $(MATRIX); do \
		PYENV_VERSIONS=$(PYENV_VERSIONS) tests/matrix/run.sh $$entry target/matrix-wheel \
			target/matrix-venvs || failed="$$failed $$entry"; \
	done; test -z "$$failed" || { echo "test-matrix: failed:$$failed"; exit 1; }

# What `cargo publish` would upload: both crates packaged (`.crate` files, unpacked), then the
# packaged runtime crate's doc tests, README included, against the packaged derive crate: the
# build of both packaged crates (cargo's own verification would build them once more), in the
# workspace's target directory (the packaged crates build apart, by their own paths; their
# dependencies, locked alike and built without debug info as the workspace's dev profile
# builds them, are reused). The files are unpacked with the time of unpacking (`tar -m`): a
# `.crate` stores one fixed old time, by which cargo would take the previous run's build of the
# packaged crates for current and test the old code.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
package: $(VENV_STAMP)
	rm -rf target/package
	cargo package --allow-dirty --quiet --no-verify -p pyo3-dlpack-derive -p pyo3-dlpack
	for crate in pyo3-dlpack-derive pyo3-dlpack; do \
		tar -xzmf target/package/$$crate-$(VERSION).crate -C target/package || exit 1; \
	done
	cd target/package/pyo3-dlpack-$(VERSION) && PYTHONPATH=$(VENV_SITE) \
		CARGO_TARGET_DIR=$(abspath target) cargo test --doc --all-features --quiet \
		--config 'patch.crates-io.pyo3-dlpack-derive.path="../pyo3-dlpack-derive-$(VERSION)"' \
		--config 'profile.dev.package."*".debug=false'

# pytest against real frameworks, over the test extension and the examples.
py-test: $(VENV_STAMP)
	maturin develop --quiet -m tests/extension/Cargo.toml --features cudarc
	for example in examples/*/; do maturin develop --quiet -m $$example/Cargo.toml || exit 1; done
	# The stand-in CUDA driver (tests/cuda-standin) for test_cuda_standin.py.
	cargo build --quiet -p cuda-standin
	# Three single-threaded runs side by side, their outputs shown after: the shipped type
	# stub (DLPackTensor::PYI) against the installed image_buffer example (stubtest, then mypy
	# and pyright over a user's module: tests/typing/run.sh) and the stub generated for
	# examples/typed-args (tests/typing/typed_stubs.sh), the frameworks' own DLPack test
	# files, unchanged, with every from_dlpack relayed through Rust, and the pytest suite.
	{ PYTHON=$(abspath $(VENV_PY)) tests/typing/run.sh && \
		PYTHON=$(abspath $(VENV_PY)) tests/typing/typed_stubs.sh; } > target/typing.log 2>&1 & typing=$$!; \
	$(VENV_PY) tests/frameworks/run.py > target/frameworks.log 2>&1 & frameworks=$$!; \
	CUDA_STANDIN=$(abspath target/debug/libcuda.so) $(VENV_PY) -m pytest -q tests/python examples; \
	tested=$$?; wait $$frameworks; relayed=$$?; wait $$typing; typed=$$?; \
	cat target/frameworks.log target/typing.log; \
	test $$tested -eq 0 -a $$relayed -eq 0 -a $$typed -eq 0

# Criterion (Rust side) and the Python-side timings and memory checks, each
# run twice (the Python side's runs into benchmarks/results-python.md); see
# BENCHMARKS.md. Release builds; takes a few minutes.
bench: $(VENV_STAMP)
	maturin develop --release --quiet -m tests/extension/Cargo.toml
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=$(VENV_SITE) cargo bench -p pyo3-dlpack-tests --bench exchange
	rm -f benchmarks/results-python.md
	for run in 1 2; do OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/python_bench.py \
		--output benchmarks/results-python.md || exit 1; done

# What the limited API costs: the test extension in release mode, version-specific and
# abi3-py39, unpacked side by side and timed on the venv's CPython (benchmarks/abi3_cost.py,
# both runs into benchmarks/results-abi3.md).
abi3-bench: $(VENV_STAMP)
	rm -rf target/abi3-bench
	maturin build --release --quiet -m tests/extension/Cargo.toml -o target/abi3-bench/wheels/full
	maturin build --release --quiet -m tests/extension/Cargo.toml --features abi3 \
		--target-dir target/abi3 -o target/abi3-bench/wheels/abi3
	for kind in full abi3; do \
		$(VENV_PY) -m zipfile -e target/abi3-bench/wheels/$$kind/*.whl target/abi3-bench/$$kind || exit 1; \
	done
	$(VENV_PY) benchmarks/abi3_cost.py target/abi3-bench/full target/abi3-bench/abi3 \
		--fresh --output benchmarks/results-abi3.md

# Line coverage of the CUDA code (not in `make test`): the runtime crate's unit tests and the
# stand-in driver's pytest suites over a test extension built with -C instrument-coverage (its
# own target directory, target/coverage), reported per file by the llvm-cov of rustc's LLVM
# (`rustup component add llvm-tools`); see tests/coverage/cuda.sh.
coverage-cuda: $(VENV_STAMP)
	PYTHON=$(abspath $(VENV_PY)) PYTHON_SITE=$(VENV_SITE) tests/coverage/cuda.sh

# AddressSanitizer (nightly, its own target directory) over the runtime crate's unit and
# property tests and the Rust integration tests (embedded Python with NumPy and torch),
# the trust-boundary cases among them (tests/tests/trust_boundary.rs).
# Leak detection is off: the interpreter keeps its own allocations alive at exit.
ASAN = RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
	ASAN_OPTIONS=detect_leaks=0 CARGO_TARGET_DIR=target/asan
sanitize: $(VENV_STAMP)
	$(ASAN) PYTHONPATH=$(VENV_SITE) cargo +nightly test -p pyo3-dlpack --lib --target x86_64-unknown-linux-gnu
	$(ASAN) PYTHONPATH=$(VENV_SITE) cargo +nightly test -p pyo3-dlpack-tests --tests --target x86_64-unknown-linux-gnu

# libFuzzer (nightly, the flags cargo-fuzz would pass, AddressSanitizer on) over the
# import validation of a managed tensor's fields (capsule_fields) and the import of
# the layouts other protocols describe (interface_layout); FUZZ_SECONDS bounds each run.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
	-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
	-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address
FUZZ_TARGETS = capsule_fields interface_layout
fuzz:
	cd fuzz && RUSTFLAGS="$(FUZZ_FLAGS)" cargo +nightly build --release --target x86_64-unknown-linux-gnu $(FUZZ_TARGETS:%=--bin %)
	for target in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus/$$target && \
		fuzz/target/x86_64-unknown-linux-gnu/release/$$target fuzz/corpus/$$target \
			-max_total_time=$(FUZZ_SECONDS) -max_len=512 || exit 1; \
	done

# What a GPU machine (CUDA, torch, CuPy; no Rust, no network) needs to run the CUDA-marked
# tests: abi3-py39 wheels (any CPython >= 3.9 there) of the test extension, with its cudarc
# functions, and of the examples; the test files; a script. There:
# `bash target/gpu-bundle/run.sh` (pyo3-dlpack/guide/testing.md, "On a GPU").
gpu-bundle: $(VENV_STAMP)
	rm -rf target/gpu-bundle && mkdir -p target/gpu-bundle/tests target/gpu-bundle/examples
	maturin build --release --quiet -m tests/extension/Cargo.toml --features abi3,cudarc \
		--target-dir target/abi3 -o target/gpu-bundle
	for example in examples/*/; do \
		maturin build --release --quiet -m $$example/Cargo.toml --features pyo3/abi3-py39 \
			--target-dir target/abi3 -o target/gpu-bundle || exit 1; \
		mkdir -p target/gpu-bundle/$$example && cp $$example/tests/*.py target/gpu-bundle/$$example; \
	done
	cp tests/python/conftest.py tests/python/test_cuda.py tests/python/test_cudarc.py \
		tests/python/test_native.py target/gpu-bundle/tests/
	cp tests/gpu/run.sh target/gpu-bundle/run.sh

# Host copies: `PyTensor::to_vec` and `copy=True` against NumPy's copies, contiguous and
# transposed, twice into benchmarks/results-copies.md (benchmarks/copies.py; release build
# of bench_ours).
copies-bench: $(VENV_STAMP)
	cd benchmarks/bench_ours && maturin develop --release --quiet --features candle
	rm -f benchmarks/results-copies.md
	for run in 1 2; do OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/copies.py \
		--output benchmarks/results-copies.md || exit 1; done

# Tensors that travel: pickling a DLPackTensor against the same NumPy array (out of band, in
# band, 1 and 400 MiB) and ray.put + ray.get of 400 MiB on a local Ray cluster, twice, both runs
# appended to benchmarks/results-pickling.md (benchmarks/pickling.py; release build of bench_ours).
pickling-bench: $(VENV_STAMP)
	cd benchmarks/bench_ours && maturin develop --release --quiet
	rm -f benchmarks/results-pickling.md
	for run in 1 2; do OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/pickling.py --ray \
		--output benchmarks/results-pickling.md || exit 1; done

# Where a torch import's time goes (benchmarks/torch_checks.py): both runs into
# benchmarks/results-torch-checks.md.
torch-checks-bench: $(VENV_STAMP)
	for m in bench_ours bench_dlpark; do (cd benchmarks/$$m && maturin develop --release --quiet) || exit 1; done
	rm -f benchmarks/results-torch-checks.md
	for run in 1 2; do OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/torch_checks.py \
		--output benchmarks/results-torch-checks.md || exit 1; done

# Speed regressions counted, not timed (benchmarks/speed_check.py): the hot paths of the release
# build of bench_ours under callgrind, instructions (and cache misses where memory moves) per call,
# against benchmarks/speed-baseline.json; fails naming each path that grew past the tolerance.
# `make speed-baseline` rewrites the file: commit it on its own, saying why (guide: testing).
SPEED_MARKS := target/speed/libspeed_marks.so
$(SPEED_MARKS): benchmarks/speed_marks.c
	@mkdir -p $(@D)
	cc -O2 -shared -fPIC -o $@ $<
speed-check speed-baseline: $(VENV_STAMP) $(SPEED_MARKS)
	cd benchmarks/bench_ours && maturin develop --release --quiet
	$(VENV_PY) benchmarks/speed_check.py --marks $(SPEED_MARKS) $(if $(filter speed-baseline,$@),--update)

# Size regressions counted in bytes (benchmarks/size/check.sh): the minimal extension of
# benchmarks/size, without and with the default features, stripped, against
# benchmarks/size/baseline.txt; fails past 1% growth, and when a build is over its target:
# 1.3x rust-numpy's bytes without default features, 1.6x with them. `make size-baseline` rewrites the file:
# commit it on its own, saying why. `benchmarks/size/measure.sh` shows where the bytes go.
size-check:
	benchmarks/size/check.sh
size-baseline:
	benchmarks/size/check.sh --update

# The head-to-head against dlpark, pyo3-dlpack 0.3 and nanobind (benchmarks/README.md):
# release builds of the four modules, then two runs into benchmarks/results.md.
head-to-head: $(VENV_STAMP)
	for m in bench_ours bench_dlpark bench_pyo3dlpack03; do (cd benchmarks/$$m && maturin develop --release --quiet) || exit 1; done
	$(VENV_PY) benchmarks/bench_nanobind/build.py
	OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/head_to_head.py --fresh
	OPENBLAS_NUM_THREADS=1 $(VENV_PY) benchmarks/head_to_head.py

clean-venv:
	rm -rf $(VENV)
