#!/usr/bin/env bash
# The binary size of a minimal import + export extension (one function taking an
# array, one returning a new one) over pyo3-dlpack (`ours/`, default features off)
# and over rust-numpy (`numpy/`): both built with Cargo's default release profile,
# then a stripped copy of each cdylib measured. Prints the bytes of each, ours'
# largest symbols (unstripped build) and both builds' bytes of symbols by crate.
#
#   benchmarks/size/measure.sh            # top 25 symbols
#   TOP=60 benchmarks/size/measure.sh
#
# PyO3 needs an interpreter to build against: PYO3_PYTHON, else `python3`.
# The by-crate split is approximate: a symbol counts for the first path segment
# of its demangled name (`<pyo3_dlpack::X as core::fmt::Debug>::fmt` is pyo3_dlpack's,
# generic std code instantiated for our types is std's), and data without a
# symbol (string literals, most of .rodata) is not counted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export CARGO_TARGET_DIR="$here/target"
top=${TOP:-25}

cargo build --quiet --release -p size-ours -p size-numpy

release="$CARGO_TARGET_DIR/release"
mkdir -p "$release/stripped"
printf '%-12s %12s %12s\n' crate unstripped stripped
for name in size_ours size_numpy; do
    strip -o "$release/stripped/lib$name.so" "$release/lib$name.so"
    printf '%-12s %12d %12d\n' "$name" \
        "$(stat -c %s "$release/lib$name.so")" "$(stat -c %s "$release/stripped/lib$name.so")"
done

echo
echo "size_ours: the $top largest symbols (bytes, demangled)"
nm --size-sort -S -t d -C "$release/libsize_ours.so" | tail -n "$top" | tac |
    awk '{ size = $2 + 0; $1 = $2 = ""; sub(/^ +/, ""); printf "%8d  %s\n", size, $0 }'

for name in size_ours size_numpy; do
    echo
    echo "$name: bytes of symbols by crate"
    nm --size-sort -S -t d -C "$release/lib$name.so" |
        awk '{
            size = $2 + 0; $1 = $2 = $3 = ""; sub(/^ +/, "")
            sub(/^_?</, ""); crate = $0; sub(/::.*/, "", crate); sub(/[ <(].*/, "", crate)
            if (crate !~ /^(pyo3_dlpack|numpy|ndarray|std|core|alloc|pyo3|pyo3_ffi|size_ours|size_numpy|gimli|addr2line|miniz_oxide|rustc_demangle|hashbrown)$/) crate = "(other)"
            total[crate] += size
        } END { for (c in total) printf "%8d  %s\n", total[c], c }' | sort -rn
done
