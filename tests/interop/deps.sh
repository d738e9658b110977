#!/usr/bin/env bash
# Installs the Debian packages the siw interop harness needs on the host:
# QEMU, busybox for the guest's initramfs, rdma-core's tools (copied into the
# initramfs with their libraries), kmod (depmod/modprobe against the guest's
# module tree), cpio, socat (QEMU guestfwd), xz and a compiler for siw.ko.
# The guest kernel itself is never installed: build-guest.sh downloads it.
# Run as root; does nothing when everything is present.
set -euo pipefail
pkgs=(qemu-system-x86 busybox-static rdmacm-utils ibverbs-utils perftest
      ibverbs-providers iproute2 kmod cpio socat xz-utils gcc gcc-12 make
      libc6-dev libelf1)
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt-ensure.sh" "interop deps" "${pkgs[@]}"
