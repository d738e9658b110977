#!/usr/bin/env bash
# The Debian programs and libraries the compat tests run or read: rdma-core
# 44's libibverbs (the ABI reference), its tools, librdmacm's rping,
# perftest, qperf, the providers that perftest links, and objdump.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt-ensure.sh" "compat deps" \
	libibverbs1 ibverbs-utils ibverbs-providers rdmacm-utils perftest qperf \
	binutils
