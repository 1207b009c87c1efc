#!/usr/bin/env bash
# Size regressions caught on every commit (`make size-check`, in `make test`): the minimal
# extension of measure.sh, built without and with pyo3-dlpack's default features, against
# the stripped bytes in baseline.txt. Fails, naming the build and its growth, when a build
# is more than TOLERANCE (1%) over its baseline, and when a build is over its target,
# a ratio to rust-numpy's recorded bytes: 1.3x without default features, 1.6x with them
# (BENCHMARKS.md "Binary size").
#
#   benchmarks/size/check.sh            # check
#   benchmarks/size/check.sh --update   # rewrite baseline.txt (`make size-baseline`):
#                                       # a deliberate commit of its own, saying why
#
# Bytes are a rustc version's (build.sh remaps source paths; another checkout measures
# them within a few bytes, far inside the tolerance); measured with
# another rustc than the baseline's, the check says so and compares nothing (a new
# compiler moves every build: re-baseline with the new one).
set -euo pipefail
source "$(dirname "$0")/build.sh"
baseline="$here/baseline.txt"
tolerance_percent=1
rustc_now=$(rustc --version)

# The targets, as ratios to rust-numpy's bytes, in tenths.
declare -A target=([no-default]=13 [default]=16)
declare -A args=([no-default]="" [default]="--features defaults")

build size_ours size-ours ${args[no-default]}
build size_ours_defaults size-ours ${args[default]}
declare -A now=([no-default]=$(bytes size_ours) [default]=$(bytes size_ours_defaults))

if [ "${1:-}" = --update ]; then
    build size_numpy size-numpy
    {
        echo "# Stripped bytes of benchmarks/size's minimal extension: check.sh's baseline."
        echo "# Rewritten by \`make size-baseline\` only, in a commit of its own."
        echo "compiler $rustc_now"
        echo "rust-numpy $(bytes size_numpy)"
        echo "no-default ${now[no-default]}"
        echo "default ${now[default]}"
    } > "$baseline"
    cat "$baseline"
    exit 0
fi

value() { sed -n "s/^$1 //p" "$baseline"; }
if [ "$(value compiler)" != "$rustc_now" ]; then
    echo "size-check: baseline.txt was measured with $(value compiler), this is $rustc_now:" \
        "sizes are not comparable; nothing checked (make size-baseline with this compiler)"
    exit 0
fi
numpy=$(value rust-numpy)
failed=0
for build in no-default default; do
    was=$(value "$build")
    is=${now[$build]}
    growth=$(echo "scale=2; 100 * ($is - $was) / $was" | bc -l)
    ratio=$(echo "scale=2; $is / $numpy" | bc -l)
    goal=$(echo "scale=1; ${target[$build]} / 10" | bc -l)
    printf 'size-check: %-10s %9d bytes (baseline %9d, %+6.2f%%), %sx rust-numpy (target %sx)\n' \
        "$build" "$is" "$was" "$growth" "$ratio" "$goal"
    if [ $((is * 100)) -gt $((was * (100 + tolerance_percent))) ]; then
        echo "size-check: FAILED: the $build build grew $growth% past its baseline" \
            "(tolerance $tolerance_percent%): benchmarks/size/measure.sh shows where"
        failed=1
    fi
    if [ $((is * 10)) -gt $((numpy * ${target[$build]})) ]; then
        echo "size-check: FAILED: the $build build is ${ratio}x rust-numpy's bytes, over its" \
            "target of ${goal}x ($((numpy * ${target[$build]} / 10)) bytes)"
        failed=1
    fi
done
exit $failed
