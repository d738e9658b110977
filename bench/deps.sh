#!/usr/bin/env bash
# Installs the Debian packages the benchmarks need (not `make check`):
# libfabric-bin (fi_pingpong, the libfabric tcp provider baseline) and
# gnuplot-nox (the plots).  Does nothing when they are present; run as
# root otherwise.
set -euo pipefail
pkgs=(libfabric-bin gnuplot-nox)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "bench/deps.sh: missing packages: ${missing[*]} (run as root)" >&2
	exit 1
fi
echo "bench/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
