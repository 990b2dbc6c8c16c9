#!/bin/sh
# install.sh: build hostprep from this checkout with the Go toolchain and
# install it as PREFIX/bin/hostprep (default PREFIX /usr/local), or, with
# --package deb|rpm, build a .deb or .rpm (scripts/mkpkg, with nfpm) to
# install with the host's package manager.
#
# Safe to run again: when the freshly built binary is byte-for-byte the one
# already installed, nothing is written and it says "unchanged". A changed
# binary replaces the old one atomically (install -m 0755 to a temporary
# name in the same directory, then rename), so a running hostprep is never
# half-overwritten.
set -eu

usage() {
	cat <<'EOF'
Usage: ./install.sh [--prefix DIR]
       ./install.sh --package deb|rpm [--out DIR]

Build hostprep from this checkout (go build -trimpath ./cmd/hostprep) and
install it as DIR/bin/hostprep (default DIR: /usr/local).

  --prefix DIR       install into DIR/bin instead of /usr/local/bin
  --package deb|rpm  build a package instead of installing (deb,rpm: both):
                     the binary as /usr/bin/hostprep, the man pages, the
                     systemd units of examples/systemd (not enabled) and the
                     docs; install it with dpkg -i / rpm -i (docs/packages.md)
  --out DIR          where --package writes (default: dist in this checkout)
  -h, --help         show this help

Running it twice is harmless: an identical binary is left alone ("unchanged").
Needs the Go toolchain (go 1.26 or newer) on PATH, and write access to DIR/bin.
EOF
}

prefix=/usr/local
package=
out=
while [ $# -gt 0 ]; do
	case "$1" in
	--package | --out)
		[ $# -ge 2 ] && [ -n "$2" ] || { echo "install.sh: $1 needs a value, e.g. --package deb or --out dist" >&2; exit 2; }
		if [ "$1" = --package ]; then package=$2; else out=$2; fi
		shift 2
		;;
	--package=* | --out=*)
		v=${1#*=}
		[ -n "$v" ] || { echo "install.sh: ${1%%=*} needs a value, e.g. --package deb or --out dist" >&2; exit 2; }
		case "$1" in --package=*) package=$v ;; *) out=$v ;; esac
		shift
		;;
	--prefix)
		[ $# -ge 2 ] && [ -n "$2" ] || { echo "install.sh: --prefix needs a directory, e.g. --prefix \$HOME/.local" >&2; exit 2; }
		prefix=$2
		shift 2
		;;
	--prefix=*)
		prefix=${1#--prefix=}
		[ -n "$prefix" ] || { echo "install.sh: --prefix needs a directory, e.g. --prefix \$HOME/.local" >&2; exit 2; }
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "install.sh: unknown argument '$1' (see ./install.sh --help)" >&2
		exit 2
		;;
	esac
done

case "$package" in
"" | deb | rpm | deb,rpm | rpm,deb) ;;
*)
	echo "install.sh: --package $package: want deb, rpm or deb,rpm" >&2
	exit 2
	;;
esac

# Build from the checkout this script lives in, wherever it is run from.
src=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$src/go.mod" ] || [ ! -d "$src/cmd/hostprep" ]; then
	echo "install.sh: $src is not a hostprep checkout (no go.mod or cmd/hostprep); run the install.sh of the checkout" >&2
	exit 2
fi

# GO=/path/to/go picks a toolchain; otherwise go on PATH, then the
# official tarball's /usr/local/go/bin/go.
if [ -n "${GO:-}" ]; then
	go=$GO
	if ! command -v "$go" >/dev/null 2>&1; then
		echo "install.sh: GO=$GO is not an executable Go toolchain; point GO at the go binary (Go 1.26 or newer) or unset it" >&2
		exit 3
	fi
elif command -v go >/dev/null 2>&1; then
	go=go
elif [ -x /usr/local/go/bin/go ]; then
	go=/usr/local/go/bin/go
else
	echo "install.sh: the Go toolchain is needed to build hostprep and 'go' is not on PATH; install Go 1.26 or newer (or set GO=/path/to/go) and run ./install.sh again" >&2
	exit 3
fi

bindir=$prefix/bin
dest=$bindir/hostprep

new=$bindir/.hostprep.new.$$
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/hostprep-install.XXXXXX")
trap 'rm -rf "$tmpdir"; rm -f "$new"' EXIT
trap 'exit 130' INT TERM

# The first build compiles every dependency (cobra, the IoTDB and MQTT
# clients, gopsutil, ...) into the Go build cache: about 95 CPU-seconds,
# a minute on 2 idle cores; later builds reuse the cache and take seconds.
echo "install.sh: building hostprep with $("$go" version) from $src"
echo "install.sh: (a first build compiles every dependency: about a minute on 2 idle cores; later ones take seconds)"
# The version hostprep --version prints: the checkout's git description
# when there is one.
version=$(git -C "$src" describe --always --dirty 2>/dev/null || echo dev)
t0=$(date +%s)
if [ -n "$package" ]; then
	# A package runs on other hosts: a static binary (no cgo), stripped.
	(cd "$src" && CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmpdir/hostprep" ./cmd/hostprep)
else
	(cd "$src" && "$go" build -trimpath -ldflags "-X main.version=$version" -o "$tmpdir/hostprep" ./cmd/hostprep)
fi
echo "install.sh: built hostprep $version in $(($(date +%s) - t0)) s"

if [ -n "$package" ]; then
	out=${out:-$src/dist}
	case "$out" in /*) ;; *) out=$PWD/$out ;; esac
	echo "install.sh: packaging ($package) with scripts/mkpkg (nfpm) into $out"
	(cd "$src" && "$go" run ./scripts/mkpkg --format "$package" --binary "$tmpdir/hostprep" --version "$version" --src "$src" --out "$out") >"$tmpdir/pkgs" || exit 1
	while read -r p; do
		case "$p" in
		*.deb) echo "install.sh: built $p (install: dpkg -i $p; remove: dpkg -r hostprep)" ;;
		*.rpm) echo "install.sh: built $p (install: rpm -i $p; remove: rpm -e hostprep)" ;;
		esac
	done <"$tmpdir/pkgs"
	exit 0
fi

if [ -f "$dest" ] && cmp -s "$tmpdir/hostprep" "$dest"; then
	echo "install.sh: $dest unchanged (identical binary already installed)"
	exit 0
fi

if ! mkdir -p "$bindir" 2>/dev/null; then
	echo "install.sh: cannot create $bindir; run as root or choose --prefix \$HOME/.local" >&2
	exit 3
fi
if ! install -m 0755 "$tmpdir/hostprep" "$new" 2>/dev/null; then
	echo "install.sh: cannot write to $bindir; run as root or choose --prefix \$HOME/.local" >&2
	exit 3
fi
if [ -f "$dest" ]; then
	action=updated
else
	action=installed
fi
mv -f "$new" "$dest"
echo "install.sh: $action $dest"
case ":$PATH:" in
*":$bindir:"*) ;;
*) echo "install.sh: note: $bindir is not on PATH; run $dest or add $bindir to PATH" ;;
esac
