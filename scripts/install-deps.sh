#!/usr/bin/env bash
# Installs every Debian package that building, testing and the demo need.
# Run as root; does nothing when everything is present.
#
# rdma-core's development packages give the drop-in libibverbs and
# librdmacm (src/compat/) the ABI they implement; its programs
# (rdmacm-utils: rping; ibverbs-utils: ibv_devices, ibv_devinfo), perftest
# and qperf are what tests/compat/ runs on them, unmodified, with rdma-core's
# own libraries and providers installed beside them as on any Debian host.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-ensure.sh" install-deps \
	build-essential cmake pkg-config libisal-dev libcmocka-dev libusrsctp-dev tshark \
	iproute2 procps clang libclang-rt-dev valgrind \
	libibverbs-dev librdmacm-dev libibverbs1 librdmacm1 ibverbs-providers \
	rdmacm-utils ibverbs-utils perftest qperf binutils \
	libtirpc-dev rpcsvc-proto
