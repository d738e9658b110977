#!/usr/bin/env bash
# Installs the Debian packages the benchmarks need (not `make check`):
# libfabric-bin (fi_pingpong, the libfabric tcp provider baseline),
# gnuplot-nox (the plots) and time (GNU time: a client's context
# switches and CPU time, bench/rpcrdma.sh).  Does nothing when they are
# present; run as root otherwise.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/apt-ensure.sh" bench/deps.sh \
	libfabric-bin gnuplot-nox time
