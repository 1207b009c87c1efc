#!/bin/sh
# Debian packages for the platform checks, fetched with a private apt configuration under
# target/platforms/apt (the system's sources and state are never read or changed) and unpacked
# with dpkg-deb, each once (a stamp file says it is there):
#
#   debian.sh rust-src VERSION   the standard library's source of rustc VERSION (trixie-backports'
#                                rust-src), for -Zbuild-std; prints the path of its library/
#   debian.sh trixie             Debian 13's rustc and cargo (the MSRV, 1.85) and the MinGW
#                                binutils (dlltool: building std for windows-gnu), with the
#                                libraries they load; the commands, run by trixie's own loader
#                                (they need a newer glibc than the host may have), are wrappers
#                                in target/platforms/bin: rustc-trixie, cargo-trixie,
#                                x86_64-w64-mingw32-dlltool and x86_64-w64-mingw32-as.
#
# Needs apt-get, dpkg-deb and Debian's archive keyring (Debian and Ubuntu hosts), and network
# access to deb.debian.org the first time.
set -eu

base=$(pwd)/target/platforms
apt=$base/apt
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# The private configuration, and the package lists (updated once a day at most).
apt_update() {
	mkdir -p "$apt/etc/apt.conf.d" "$apt/etc/preferences.d" "$apt/etc/sources.list.d" \
		"$apt/state/lists/partial" "$apt/cache/archives/partial" "$base/debs"
	touch "$apt/state/status"
	cat > "$apt/etc/sources.list" <<-EOF
	deb [signed-by=$keyring] $mirror trixie main
	deb [signed-by=$keyring] $mirror trixie-backports main
	EOF
	cat > "$apt/apt.conf" <<-EOF
	Dir::Etc "$apt/etc";
	Dir::State "$apt/state";
	Dir::State::status "$apt/state/status";
	Dir::Cache "$apt/cache";
	Dir::Cache::pkgcache "";
	Dir::Cache::srcpkgcache "";
	Acquire::GzipIndexes "true";
	Debug::NoLocking "true";
	APT::Sandbox::User "root";
	EOF
	export APT_CONFIG="$apt/apt.conf"
	if [ -z "$(find "$apt/state/lists" -name '*trixie-backports*Packages*' -mtime -1)" ]; then
		apt-get -qq update
	fi
}

# Downloads the packages named (apt-get download's syntax) into debs/, prints their files.
download() {
	(cd "$base/debs" && apt-get -qq download "$@" >/dev/null) || exit 1
	for package in "$@"; do
		ls "$base/debs/${package%%[=/]*}"_*.deb || exit 1
	done
}

# The packages of trixie (each as name/trixie) that the packages named need to run: their
# Depends closure, without the toolchain that rustc depends on but a `cargo check` never runs
# (the host's cc links build scripts) and without what only installs them.
closure() {
	python3 - "$@" <<-'EOF'
	import re, subprocess, sys
	skip = {"gcc", "binutils", "libc-dev", "c-compiler", "clang", "debconf", "binutils-common"}
	seen, todo = set(sys.argv[1:]), list(sys.argv[1:])
	while todo:
	    out = subprocess.run(
	        ["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
	         "--no-breaks", "--no-replaces", "--no-enhances", todo.pop() + "/trixie"],
	        capture_output=True, text=True, check=True).stdout
	    for dep in re.findall(r"^\s*\|?(?:Pre)?Depends: <?([^\s>]+)", out, re.M):
	        if dep not in skip and dep not in seen:
	            seen.add(dep)
	            todo.append(dep)
	print(" ".join(name + "/trixie" for name in sorted(seen)))
	EOF
}

# A command of the unpacked trixie, run by trixie's loader with trixie's libraries.
wrap() {
	root=$base/trixie
	multiarch=$(cd "$root/usr/lib" && ls -d *-linux-gnu* | head -n 1)
	loader=$(ls "$root/usr/lib/$multiarch"/ld-linux*.so.* | head -n 1)
	cat > "$base/bin/$2" <<-EOF
	#!/bin/sh
	exec "$loader" --library-path "$root/usr/lib/$multiarch" --argv0 "$1" "$root/usr/bin/$1" "\$@"
	EOF
	chmod +x "$base/bin/$2"
}

case $1 in
rust-src)
	version=$2
	dir=$base/rust-src-$version
	if [ ! -e "$dir/.unpacked" ]; then
		apt_update
		package=$(apt-cache madison rust-src | awk -v v="$version+" \
			'index($3, v) == 1 { print $3; exit }')
		if [ -z "$package" ]; then
			echo "debian.sh: no rust-src for rustc $version in trixie or trixie-backports" >&2
			exit 1
		fi
		deb=$(download "rust-src=$package") || exit 1
		rm -rf "$dir" && mkdir -p "$dir"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" --strip-components=4 \
			"./usr/src/rustc-$version/library"
		rm "$deb"
		touch "$dir/.unpacked"
	fi
	echo "$dir/library"
	;;
trixie)
	if [ ! -e "$base/trixie/.unpacked" ]; then
		apt_update
		# trixie's, not the backports' newer rustc and cargo.
		packages=$(closure rustc cargo libstd-rust-dev binutils-mingw-w64-x86-64) || exit 1
		debs=$(download $packages) || exit 1
		rm -rf "$base/trixie" && mkdir -p "$base/trixie" "$base/bin"
		for deb in $debs; do dpkg-deb -x "$deb" "$base/trixie" && rm "$deb"; done
		touch "$base/trixie/.unpacked"
	fi
	mkdir -p "$base/bin"
	wrap rustc rustc-trixie
	wrap cargo cargo-trixie
	wrap rustdoc rustdoc-trixie
	wrap x86_64-w64-mingw32-dlltool x86_64-w64-mingw32-dlltool
	wrap x86_64-w64-mingw32-as x86_64-w64-mingw32-as
	;;
*)
	echo "usage: debian.sh rust-src VERSION | debian.sh trixie" >&2
	exit 2
	;;
esac
