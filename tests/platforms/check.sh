#!/bin/sh
# `cargo check` of the runtime crate with warnings denied, for each target named, with each
# feature set of FEATURE_SETS (default, no-default, all) as each extension kind of ABI3 (no:
# the interpreter's version; yes: abi3-py39, or abi3-py310 with all features: pyo3-stub-gen
# 0.23 names EncodingWarning, which Python 3.9 lacks). Nothing is linked or run.
#
# A target's standard library is rustup's where it is installed (`rustup target add`);
# otherwise it is checked from source (-Zbuild-std, RUSTC_BOOTSTRAP=1 on a stable rustc):
# rustup's rust-src component if installed, else Debian's rust-src of this rustc's version
# (debian.sh, unpacked under target/platforms). windows-gnu's std then wants MinGW's dlltool
# (debian.sh trixie). Each check prints one line; the ones that fail print their errors, and
# the script fails if any did.
#
#   [FEATURE_SETS="default no-default all"] [ABI3="no yes"] tests/platforms/check.sh TARGET...
set -u

here=$(cd "$(dirname "$0")" && pwd)
feature_sets=${FEATURE_SETS:-default no-default all}
abi3_kinds=${ABI3:-no yes}
sysroot=$(rustc --print sysroot)
version=$(rustc --version | cut -d' ' -f2)
python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
export RUSTFLAGS="-D warnings"
# PyO3's build script: the Python a non-abi3 cross build is for (no interpreter is run).
export PYO3_CROSS_PYTHON_VERSION="${PYO3_CROSS_PYTHON_VERSION:-$python}"

failed=0
for target in "$@"; do
	build_std=
	if [ ! -d "$sysroot/lib/rustlib/$target/lib" ]; then
		build_std=-Zbuild-std
		if [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
			library=$("$here/debian.sh" rust-src "$version") || exit 1
			export __CARGO_TESTS_ONLY_SRC_ROOT="$library"
		fi
		case $target in *-windows-gnu)
			"$here/debian.sh" trixie || exit 1
			PATH=$(pwd)/target/platforms/bin:$PATH
		esac
	fi
	for set in $feature_sets; do
		case $set in
		default) features= ;;
		no-default) features=--no-default-features ;;
		all) features=--all-features ;;
		*) echo "check.sh: unknown feature set $set" >&2; exit 2 ;;
		esac
		for abi3 in $abi3_kinds; do
			case $abi3 in
			yes) if [ "$set" = all ]; then kind=--features=pyo3/abi3-py310
				else kind=--features=pyo3/abi3-py39; fi ;;
			no) kind= ;;
			*) echo "check.sh: ABI3 is yes or no, not $abi3" >&2; exit 2 ;;
			esac
			start=$(date +%s)
			if RUSTC_BOOTSTRAP=${build_std:+1} cargo check --quiet -p pyo3-dlpack \
				--target "$target" --target-dir target/platforms/check \
				$build_std $features $kind > target/platforms/check.log 2>&1
			then
				result=ok
			else
				result=FAILED
				failed=1
			fi
			printf '%-6s %-32s %-10s abi3=%-3s %s(%s s)\n' "$result" "$target" "$set" \
				"$abi3" "${build_std:+std from source }" "$(($(date +%s) - start))"
			if [ $result = FAILED ]; then cat target/platforms/check.log; fi
		done
	done
done
exit $failed
