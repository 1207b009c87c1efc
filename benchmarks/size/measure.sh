#!/usr/bin/env bash
# The binary size of a minimal import + export extension (one function taking an
# array, one returning a new one) over pyo3-dlpack (`ours/`) and over rust-numpy
# (`numpy/`): each built with Cargo's default release profile, then a stripped copy
# of each cdylib measured. `ours` is built twice: with pyo3-dlpack's default
# features off (`size_ours`) and on (`size_ours_defaults`); then once with each
# default feature alone, to say what each costs (its bytes over the no-default build).
# Prints the bytes of each build and its ratio to rust-numpy's, the features' costs,
# the largest symbols of the no-default build (unstripped) and the builds' bytes of
# symbols by crate.
#
#   benchmarks/size/measure.sh              # top 25 symbols, every feature
#   TOP=60 benchmarks/size/measure.sh
#   FEATURES=0 benchmarks/size/measure.sh   # skip the one-feature builds
#
# PyO3 needs an interpreter to build against: PYO3_PYTHON, else `python3`.
# The by-crate split is approximate: a symbol counts for the first path segment
# of its demangled name (`<pyo3_dlpack::X as core::fmt::Debug>::fmt` is pyo3_dlpack's,
# generic std code instantiated for our types is std's), and data without a
# symbol (string literals, most of .rodata) is not counted.
set -euo pipefail
source "$(dirname "$0")/build.sh"
cd "$here"
top=${TOP:-25}
# pyo3-dlpack's default features, read from its manifest.
defaults=$(sed -n 's/^default *= *\[\(.*\)\]/\1/p' ../../pyo3-dlpack/Cargo.toml | tr -d '" ' | tr ',' ' ')

build size_numpy size-numpy
build size_ours_defaults size-ours --features defaults
build size_ours size-ours

numpy=$(bytes size_numpy)
printf '%-20s %12s %12s %8s\n' build unstripped stripped x-numpy
for name in size_numpy size_ours size_ours_defaults; do
    printf '%-20s %12d %12d %7.2fx\n' "$name" "$(stat -c %s "$kept/lib$name.so")" \
        "$(bytes "$name")" "$(echo "$(bytes "$name") / $numpy" | bc -l)"
done

if [ "${FEATURES:-1}" != 0 ]; then
    base=$(bytes size_ours)
    echo
    echo "what each default feature costs: stripped bytes over the no-default build"
    sum=0
    for feature in $defaults; do
        build "size_ours_$feature" size-ours --features "$feature"
        cost=$(( $(bytes "size_ours_$feature") - base ))
        sum=$(( sum + cost ))
        printf '%-20s %+12d\n' "$feature" "$cost"
    done
    printf '%-20s %+12d\n' "(all, together)" $(( $(bytes size_ours_defaults) - base ))
    printf '%-20s %+12d\n' "(sum of the above)" "$sum"
fi

echo
echo "size_ours: the $top largest symbols (bytes, demangled)"
nm --size-sort -S -t d -C "$kept/libsize_ours.so" | tail -n "$top" | tac |
    awk '{ size = $2 + 0; $1 = $2 = ""; sub(/^ +/, ""); printf "%8d  %s\n", size, $0 }'

for name in size_ours size_ours_defaults size_numpy; do
    echo
    echo "$name: bytes of symbols by crate"
    nm --size-sort -S -t d -C "$kept/lib$name.so" |
        awk '{
            size = $2 + 0; $1 = $2 = $3 = ""; sub(/^ +/, "")
            sub(/^_?</, ""); crate = $0; sub(/::.*/, "", crate); sub(/[ <(].*/, "", crate)
            if (crate !~ /^(pyo3_dlpack|numpy|ndarray|std|core|alloc|pyo3|pyo3_ffi|size_ours|size_numpy|gimli|addr2line|miniz_oxide|rustc_demangle|hashbrown|cudarc|libloading)$/) crate = "(other)"
            total[crate] += size
        } END { for (c in total) printf "%8d  %s\n", total[c], c }' | sort -rn
done
