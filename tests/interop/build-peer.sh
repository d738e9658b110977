#!/usr/bin/env bash
# Builds siw_peer, the guest end of the interop data test, once:
#   bash build-peer.sh CACHE      ->  CACHE/peer/siw_peer
#
# siw_peer runs in the guest against the libibverbs and librdmacm that
# build-guest.sh copies there from the host, so it is compiled here
# against the headers of exactly those versions: libibverbs-dev and
# librdmacm-dev at the host's libibverbs1/librdmacm1 versions are fetched
# with "apt-get download" and unpacked with "dpkg-deb -x" into
# CACHE/peer (nothing is installed).  A stamp keyed on those versions,
# the compiler and the sources makes a second run a no-op.  Concurrent
# runs wait for each other (flock).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: build-peer.sh CACHE}
out=$cache/peer
say() { echo "build-peer: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$out"
exec 8> "$out/.lock"
flock -w 600 8 || die "another build holds $out/.lock"

for c in apt-get dpkg-deb dpkg-query gcc strip sha256sum; do
	command -v "$c" > /dev/null || die "$c is missing (run tests/interop/deps.sh as root)"
done
ver() {
	dpkg-query -W -f='${Version}' "$1" 2> /dev/null ||
		die "$1 is not installed (run tests/interop/deps.sh as root)"
}
vverbs=$(ver libibverbs1)
vcm=$(ver librdmacm1)
key="libibverbs-dev=$vverbs librdmacm-dev=$vcm $(gcc -dumpfullversion)
$(cd "$here" && sha256sum build-peer.sh siw_peer.c peer_proto.h)"
if [ -x "$out/siw_peer" ] && [ -s "$out/stamp" ] &&
   [ "$(cat "$out/stamp")" = "$key" ]; then
	exit 0
fi
rm -f "$out/stamp"

debs=$out/debs
mkdir -p "$debs"
# The .deb of package=version, if it is in $debs.
deb_of() {
	local f=${1%%=*}_${1#*=}_
	local m
	m=$(compgen -G "$debs/${f//:/%3a}*.deb") || return 1
	echo "${m%%$'\n'*}"
}
pkgs=("libibverbs-dev=$vverbs" "librdmacm-dev=$vcm")
want=()
for p in "${pkgs[@]}"; do
	[ -n "$(deb_of "$p")" ] || want+=("$p")
done
if [ ${#want[@]} -gt 0 ]; then
	say "apt-get download ${want[*]}"
	if ! (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root \
	      "${want[@]}") > "$out/download.log" 2>&1; then
		tail -n 20 "$out/download.log" >&2
		die "apt-get download failed (log: $out/download.log)"
	fi
fi
rm -rf "${out:?}/dev"
mkdir -p "$out/dev"
for p in "${pkgs[@]}"; do
	d=$(deb_of "$p")
	[ -n "$d" ] || die "no .deb for $p in $debs"
	dpkg-deb -x "$d" "$out/dev"
done
if [ ! -f "$out/dev/usr/include/infiniband/verbs.h" ] ||
   [ ! -f "$out/dev/usr/include/rdma/rdma_cma.h" ]; then
	die "the unpacked packages have no verbs.h or rdma_cma.h"
fi

# Linked against the host's own runtime libraries (the ones the guest
# has); -l: names them by soname, the packages' .so links are not used.
if ! gcc -std=gnu11 -O2 -Wall -Wextra -I"$out/dev/usr/include" \
     -o "$out/siw_peer.tmp" "$here/siw_peer.c" \
     -l:librdmacm.so.1 -l:libibverbs.so.1 2> "$out/cc.log"; then
	cat "$out/cc.log" >&2
	die "siw_peer did not compile"
fi
strip "$out/siw_peer.tmp"
mv "$out/siw_peer.tmp" "$out/siw_peer"
echo "$key" > "$out/stamp"
say "built $out/siw_peer (libibverbs $vverbs, librdmacm $vcm)"
