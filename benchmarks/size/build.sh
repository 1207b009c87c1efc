# Sourced by measure.sh and check.sh: how the minimal extension is built and measured.
# Each build is Cargo's default release profile (this workspace's Cargo.toml), its cdylib
# kept unstripped in $kept and stripped in $out. Source paths are remapped to fixed
# prefixes, so a build's bytes hardly depend on where the checkout lies (panic locations
# hold file names): two clones measure the same bytes with the same rustc, within a
# few (16 seen).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR="$here/target"
export RUSTFLAGS="--remap-path-prefix=$root=/pyo3-dlpack --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
release="$CARGO_TARGET_DIR/release"
kept="$release/measured"   # each build's cdylib, unstripped
out="$release/stripped"
mkdir -p "$kept" "$out"

# build NAME PACKAGE CARGO_ARGS...: a release build, kept as $kept/libNAME.so
# (unstripped) and $out/libNAME.so (stripped).
build() {
    local name=$1 package=$2
    shift 2
    (cd "$here" && cargo build --quiet --release -p "$package" "$@")
    cp "$release/lib$(echo "$package" | tr - _).so" "$kept/lib$name.so"
    strip -o "$out/lib$name.so" "$kept/lib$name.so"
}
bytes() { stat -c %s "$out/lib$1.so"; }
