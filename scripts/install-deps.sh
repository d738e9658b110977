#!/usr/bin/env bash
# Installs every Debian package that building, testing and the demo need.
# Run as root; does nothing when everything is present.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-ensure.sh" install-deps \
	build-essential cmake pkg-config libisal-dev libcmocka-dev libusrsctp-dev tshark \
	iproute2 procps clang libclang-rt-dev valgrind \
	libibverbs-dev librdmacm-dev librdmacm1 binutils
