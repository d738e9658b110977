#!/usr/bin/env bash
# Wire test: an NFS version 3 session over RPC-over-RDMA, captured on lo
# and decoded by tshark (tshark -2: the rpcordma dissector puts a Write
# chunk's data back into its reply only on a second pass,
# docs/rpcrdma-wireshark.md).  uiwarp-nfs against uiwarp-nfsd, both on
# uiwarp (MPA revision 2, CRC on): MOUNT over TCP, then PUTs and GETs of
# files of 1, 4096, 300001 and 1 MiB + 3 octets, one call at a time, (WRITE data by Read
# chunk, READ data by Write chunk, RFC 8267 §4.1), a listing of 300
# entries (READDIRPLUS replies by Reply chunk, RFC 8166 §3.5.3), a
# directory made and removed, a symbolic link made and read, a rename,
# a removal, and a file that is not there.  The test holds:
#
# - (nfs_decode.sh) no malformed frame and no expert error, in the NFS
#   and MOUNT traffic and in RPC-over-RDMA; every NFS procedure the
#   session used decoded by name, each call with its reply (matched by
#   xid), the replies NFS3_OK but the one of the missing file:
#   NFS3ERR_NOENT; MNT and UMNT over TCP; the transfers as RFC 8267
#   wants them: WRITE calls with a Read list and READ replies with a
#   Write list, the data tshark put back from them adding up to the
#   files' octets, READDIRPLUS replies as RDMA_NOMSG;
# - the copies equal the files (cmp).
#
# usage: test_tshark_nfs.sh <build-dir> <source-dir>
# Needs root (or capture rights on lo), tshark and dumpcap
# (scripts/install-deps.sh installs them); missing tools fail the test.
# The capture is kept in <build-dir>/wire-nfs-session.pcapng.
set -uo pipefail

build=${1:?usage: test_tshark_nfs.sh <build-dir> <source-dir>}
here=$(cd "$(dirname "$0")" && pwd)
nfsd=$build/tools/nfs/uiwarp-nfsd
nfs=$build/tools/nfs/uiwarp-nfs
timeout_s=${UIW_TEST_TIMEOUT_S:-20}

# shellcheck source=../check_lib.sh
. "$here/../check_lib.sh"

for t in tshark dumpcap cmp; do
	command -v "$t" >/dev/null ||
		fail "$t is not installed (run scripts/install-deps.sh as root)"
done
for p in "$nfsd" "$nfs"; do
	[ -x "$p" ] || fail "$p is missing: build the tree first"
done

# shellcheck source=wire_lib.sh
. "$here/wire_lib.sh"

export UIWARP_MPA_REV=2 UIWARP_CRC=1 UIWARP_MARKERS=0 UIWARP_START_DELAY_MS=0
unset UIWARP_RPCRDMA_TRACE UIWARP_DEBUG

export_dir=$work/export
cap=$work/session.pcapng
sizes="1 4096 300001 1048579"
nlist=300

# un ARGS...: uiwarp-nfs against the session's server
un() {
	"$nfs" -d 1 -T "$timeout_s" -p "$port" -m "$mport" "127.0.0.1:$export_dir" "$@"
}

session() {
	local line rc=0 s

	rm -rf "$export_dir" "$cap" && mkdir -p "$export_dir"
	wire_start "$nfsd" --listen 127.0.0.1 --port 0 --tcp-port 0 \
		--mount-port 0 --key-file "$work/key" --no-root-squash "$export_dir"
	read -r -t "$timeout_s" line <&4 ||
		fail "uiwarp-nfsd did not start: $(cat "$work/tool.err")"
	port=$(sed -n 's/.* rdma port \([0-9]*\).*/\1/p' <<<"$line")
	mport=$(sed -n 's/.* mount port \([0-9]*\).*/\1/p' <<<"$line")
	[ -n "$port" ] && [ -n "$mport" ] || fail "no ports in: $line"

	wire_capture "$cap" "tcp port $port or tcp port $mport" "$port"
	for s in $sizes; do
		un put "$work/f$s" "f$s" || fail "put of $s octets failed"
		un get "f$s" "$work/g$s" || fail "get of $s octets failed"
	done
	un mkdir many || fail "mkdir failed"
	for ((s = 0; s < nlist; s++)); do
		: >"$export_dir/many/entry-with-a-name-long-enough-$s"
	done
	un ls many >"$work/ls.out" || fail "ls failed"
	un ln -s ../f1 many/link || fail "ln -s failed"
	un readlink many/link >"$work/readlink.out" || fail "readlink failed"
	un mv f1 renamed || fail "mv failed"
	un rm renamed || fail "rm failed"
	un stat not-there >/dev/null 2>&1 && fail "stat of a missing file succeeded"
	wire_stop || rc=$?

	kill -TERM "$toolpid"
	wait "$toolpid" || fail "uiwarp-nfsd ended with status $?: $(cat "$work/tool.err")"
	toolpid=
	exec 3>&- 4<&-
	# nfs_decode.sh says 75 when TCP lost or resent a segment on lo
	# (tshark's MPA dissector then loses its place): run again
	if [ "$rc" -eq 0 ]; then
		"$here/nfs_decode.sh" "$cap" --mount --noent 1 \
			--procs "FSINFO LOOKUP CREATE WRITE COMMIT READ MKDIR READDIRPLUS SYMLINK READLINK RENAME REMOVE" \
			--read "$total" --write "$total" --read-lists 3 \
			--write-lists 6 --nomsg 1 >"$work/decode.out"
		rc=$?
		cat "$work/decode.out"
		[ "$rc" -eq 75 ] || [ "$rc" -eq 0 ] ||
			fail "the decoded session is not the one run"
	fi
	return "$rc"
}

total=0
for s in $sizes; do
	head -c "$s" /dev/urandom >"$work/f$s"
	total=$((total + s))
done
wire_retry session
cp "$cap" "$build/wire-nfs-session.pcapng" 2>/dev/null &&
	echo "capture kept in $build/wire-nfs-session.pcapng"

for s in $sizes; do
	cmp "$work/f$s" "$work/g$s" || fail "the copy of $s octets differs"
done
[ "$(wc -l <"$work/ls.out")" -eq "$nlist" ] ||
	fail "ls listed $(wc -l <"$work/ls.out") entries, not $nlist"
[ "$(cat "$work/readlink.out")" = ../f1 ] ||
	fail "readlink gave $(cat "$work/readlink.out")"

echo "PASS: test_tshark_nfs"
