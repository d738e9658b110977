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
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "interop deps: missing packages: ${missing[*]} (run as root)" >&2
  exit 1
fi
echo "interop deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
