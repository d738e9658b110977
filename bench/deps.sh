#!/usr/bin/env bash
# Installs the Debian packages the benchmarks need (not `make check`):
# libfabric-bin (fi_pingpong, the libfabric tcp provider baseline) and
# gnuplot-nox (the plots).  Does nothing when they are present; run as
# root otherwise.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/apt-ensure.sh" bench/deps.sh \
	libfabric-bin gnuplot-nox
