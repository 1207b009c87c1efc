#!/bin/sh
# The runtime crate on the Rust version it declares (`rust-version`, the README's), with the
# compiler Debian 13 (trixie) ships: its rustc and cargo (debian.sh trixie), warnings denied,
# the lock file as it is (--locked: never rewritten). Default features (non-abi3 and abi3),
# none, and every feature but those whose dependencies need a newer Rust (NEWER, each named
# with its minimum in the README's feature table).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
"$here/debian.sh" trixie
bin=$(pwd)/target/platforms/bin
export CARGO="$bin/cargo-trixie" RUSTC="$bin/rustc-trixie" RUSTDOC="$bin/rustdoc-trixie"
export RUSTFLAGS="-D warnings"
NEWER="cudarc stub-gen candle __fuzzing"

declared=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
compiler=$("$RUSTC" --version | cut -d' ' -f2)
case $compiler in
"$declared" | "$declared".*) ;;
*)
	echo "msrv.sh: rust-version is $declared, trixie's rustc $compiler: they must agree" >&2
	exit 1
	;;
esac

features=$("$CARGO" metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
newer = sys.argv[1].split()
crate = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "pyo3-dlpack")
print(",".join(f for f in sorted(crate["features"]) if f not in newer and f != "default"))
' "$NEWER")

check() {
	start=$(date +%s)
	"$CARGO" check --quiet --locked -p pyo3-dlpack --target-dir target/platforms/msrv "$@"
	echo "ok     rust $compiler  ${*:-(default features)}  ($(($(date +%s) - start)) s)"
}
check
check --features=pyo3/abi3-py39
check --no-default-features
check --features="$features"
