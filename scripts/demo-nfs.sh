#!/usr/bin/env bash
# The NFS demonstration (`make demo-nfs`): a Linux kernel mounts
# uiwarp-nfsd over RPC-over-RDMA.  A QEMU guest (tests/interop: Debian's
# kernel with siw, the software iWARP driver, and its NFS client) mounts
# a temporary directory that uiwarp-nfsd exports on the host, with
# `mount -o rdma,port=20049,vers=3`; a file is copied in and another out,
# with their SHA-256 on both sides; /proc/mounts shows proto=rdma, and
# uiwarp-nfsd's counts at its end show that the WRITE data came by RDMA
# Read and the READ data went by RDMA Write (RFC 8267 §4), not inline.
# Then the guest unmounts and stops.  Exits 1 when a step fails; Ctrl-C
# ends it at once, the guest stopped.
#
# usage: demo-nfs.sh <build-dir>
set -uo pipefail

build=${1:-build}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nfsd=$build/tools/nfs/uiwarp-nfsd
if [ ! -x "$nfsd" ]; then
	echo "demo-nfs: $nfsd is not built (run make demo-nfs from the top directory)" >&2
	exit 1
fi
build=$(cd "$build" && pwd)
nfsd=$build/tools/nfs/uiwarp-nfsd

# shellcheck source=../tests/interop/nfs_lib.sh
source "$src/tests/interop/nfs_lib.sh"
# shellcheck source=../bench/lib.sh
source "$src/bench/lib.sh"	# kv_field

export_dir=$(mktemp -d)
bgpid=
# The guest's run directory (its console.log) stays after a failure.
cleanup() {
	local st=$?
	[ -z "$bgpid" ] || kill "$bgpid" 2>/dev/null
	siw_cleanup
	rm -rf "$export_dir"
	if [ $st -eq 1 ] && [ -n "${GUEST_RUN:-}" ]; then
		echo "demo-nfs: the guest's console: $GUEST_RUN/console.log" >&2
	elif [ -n "${GUEST_RUN:-}" ]; then
		rm -rf "$GUEST_RUN"
	fi
}
trap cleanup EXIT
trap 'echo; echo "demo-nfs: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# shellcheck source=demo_lib.sh
source "$src/scripts/demo_lib.sh"
fail() {
	printf '\ndemo-nfs: FAILED: %s\n' "$1" >&2
	shift
	[ $# -eq 0 ] || tail -n 15 "$@" >&2
	exit 1
}
# step CMD...: CMD in the background, waited for, so that a signal ends
# the demo at once (wait returns on a trapped signal; a command in the
# foreground would first have to finish).  Its status.
step() {
	"$@" &
	bgpid=$!
	wait "$bgpid"
	local st=$?
	bgpid=
	return $st
}

MNT=/mnt/uiwarp
SIZE=$((4 * 1048576))

cat <<EOF
${bold}uiwarp NFS demonstration${plain}: Linux's NFS client mounts uiwarp-nfsd over RDMA.

uiwarp-nfsd, a user-space NFS version 3 server, runs on this host over
uiwarp (iWARP in user space, on TCP).  A QEMU guest with Debian's kernel
and siw (Linux's software iWARP driver) mounts it with its own NFS/RDMA
client (xprtrdma), reaching the host's loopback at $GUEST_HOST_ADDR.
EOF

title "Booting the guest (about a minute under emulation)"
nfs_boot demo_nfs 0 0 >"$SIW_TMP/boot.out" 2>&1 || fail "the guest did not boot" "$SIW_TMP/boot.out"
indent "$SIW_TMP/boot.out"

title "uiwarp-nfsd exports a directory of the host"
echo "\$ uiwarp-nfsd --listen 127.0.0.1 --port $NFSD_RDMA_PORT --tcp-port $NFSD_TCP_PORT --mount-port $NFSD_MOUNT_PORT --no-root-squash --stats $export_dir"
host_listen nfsd 3600 exporting "$nfsd" --listen 127.0.0.1 --port "$NFSD_RDMA_PORT" \
	--tcp-port "$NFSD_TCP_PORT" --mount-port "$NFSD_MOUNT_PORT" \
	--no-root-squash --stats "$export_dir" ||
	fail "uiwarp-nfsd did not start" "$SIW_TMP/nfsd.out" "$SIW_TMP/nfsd.err"
nfsd_pid=$HOST_PID
indent "$SIW_TMP/nfsd.out"
echo "(the guest's $GUEST_HOST_ADDR:$NFS_RDMA_PORT, :$NFS_TCP_PORT and :$NFS_MOUNT_PORT lead to these ports)"

title "The guest mounts it over RDMA"
echo "guest# mount.nfs $GUEST_HOST_ADDR:/ $MNT -o rdma,port=$NFS_RDMA_PORT,vers=3,mountport=$NFS_MOUNT_PORT,..."
step guest_nfs_mount "$GUEST_HOST_ADDR:/" "$MNT" rdma || fail "the mount over RDMA" "$SIW_TMP/mount.log"
grep " $MNT " "$SIW_TMP/mount.log" >"$SIW_TMP/mounts"
grep -q 'proto=rdma' "$SIW_TMP/mounts" || fail "/proc/mounts does not say proto=rdma" "$SIW_TMP/mount.log"
echo "guest# grep $MNT /proc/mounts"
indent "$SIW_TMP/mounts"

title "A file copied in: guest -> uiwarp-nfsd (NFS WRITE)"
step guest_run -t 300 "set -e
	head -c $SIZE /dev/urandom > /tmp/in.bin
	cp /tmp/in.bin $MNT/in.bin
	sha256sum /tmp/in.bin" >"$SIW_TMP/in.out" 2>&1 || fail "the copy in" "$SIW_TMP/in.out"
gin=$(tail -n 1 "$SIW_TMP/in.out" | cut -d' ' -f1)
hin=$(sha256sum <"$export_dir/in.bin" | cut -d' ' -f1)
echo "guest# cp /tmp/in.bin $MNT/in.bin     ($((SIZE / 1048576)) MiB)"
echo "  guest SHA-256 of /tmp/in.bin:       $gin"
echo "  host  SHA-256 of the export's file: $hin"
[ ${#gin} -eq 64 ] && [ "$gin" = "$hin" ] || fail "the file in the export is not the guest's"

title "A file copied out: uiwarp-nfsd -> guest (NFS READ)"
head -c "$SIZE" /dev/urandom >"$export_dir/out.bin"
hout=$(sha256sum <"$export_dir/out.bin" | cut -d' ' -f1)
step guest_run -t 300 "set -e
	echo 3 > /proc/sys/vm/drop_caches
	cp $MNT/out.bin /tmp/out.bin
	ls -l $MNT
	sha256sum /tmp/out.bin" >"$SIW_TMP/out.out" 2>&1 || fail "the copy out" "$SIW_TMP/out.out"
gout=$(tail -n 1 "$SIW_TMP/out.out" | cut -d' ' -f1)
echo "guest# cp $MNT/out.bin /tmp/out.bin  ($((SIZE / 1048576)) MiB, the guest's caches dropped first)"
echo "  host  SHA-256 of the export's file: $hout"
echo "  guest SHA-256 of /tmp/out.bin:      $gout"
[ ${#gout} -eq 64 ] && [ "$gout" = "$hout" ] || fail "the guest's copy is not the host's file"
echo "guest# ls -l $MNT"
sed '$d' "$SIW_TMP/out.out" | indent

title "The guest's RPC-over-RDMA transport (/proc/self/mountstats)"
if step guest_nfs_xprt "$MNT" >"$SIW_TMP/xprt" 2>&1; then
	awk '$1 ~ /^(read|write|reply)_chunks$/ { printf "    %s=%s", $1, $2 } END { print "" }' "$SIW_TMP/xprt"
else
	echo "    (no rpcrdma line)"
fi

title "Unmount, and uiwarp-nfsd's counts at its end"
step guest_nfs_umount "$MNT" || fail "umount" "$SIW_TMP/umount.log"
echo "guest# umount $MNT"
kill -TERM "$nfsd_pid"
host_wait "$nfsd_pid"
grep '^uiwarp-nfsd: rdma:' "$SIW_TMP/nfsd.out" | indent
rd=$(kv_field "$SIW_TMP/nfsd.out" "uiwarp-nfsd: rdma: calls=" read_bytes 2>/dev/null)
wr=$(kv_field "$SIW_TMP/nfsd.out" "uiwarp-nfsd: rdma: calls=" write_bytes 2>/dev/null)
[ -n "$rd" ] && [ "$rd" -ge "$SIZE" ] ||
	fail "WRITE data did not come by RDMA Read (${rd:-no} octets)" "$SIW_TMP/nfsd.out"
[ -n "$wr" ] && [ "$wr" -ge "$SIZE" ] ||
	fail "READ data did not go by RDMA Write (${wr:-no} octets)" "$SIW_TMP/nfsd.out"
echo "WRITE data: $rd octets fetched by RDMA Read; READ data: $wr octets placed by RDMA Write."

guest_stop >/dev/null 2>&1
printf '\n%sdone%s: Linux mounted uiwarp-nfsd over RDMA, both files kept their SHA-256; the guest is stopped.\n' "$bold" "$plain"
