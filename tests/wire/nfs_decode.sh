#!/usr/bin/env bash
# A captured NFS version 3 session over RPC-over-RDMA (MPA on TCP, with
# the MPA startup in the capture), as tshark decodes it in two passes
# (tshark -2: the rpcordma dissector puts a Write chunk's data back into
# its reply only on the second, docs/rpcrdma-wireshark.md).  Used by
# wire/test_tshark_nfs.sh (uiwarp-nfs against uiwarp-nfsd on lo) and by
# the interop tests of Linux's NFS (tests/interop/test_siw_nfs_*.sh).
#
# It holds that:
# - no frame is malformed and none has an expert error, in NFS, MOUNT,
#   RPC and RPC-over-RDMA;
# - every RPC reply decoded answers a call decoded (by xid) of the same
#   procedure, and every call has its reply; the NFS replies are
#   NFS3_OK, but LOOKUP's NFS3ERR_NOENT (--noent);
# - the procedures named with --procs were decoded (and MNT and UMNT
#   with --mount);
# - READ replies' data and WRITE calls' data add up to --read and
#   --write octets (the data tshark put back from the chunks);
# - at least --read-lists headers carried a Read list, --write-lists
#   RDMA_MSG headers a Write list, --nomsg were RDMA_NOMSG.
#
# usage: nfs_decode.sh CAPTURE [--procs "READ WRITE ..."] [--mount]
#          [--noent N|any] [--read OCTETS] [--write OCTETS]
#          [--read-lists N] [--write-lists N] [--nomsg N]
# Exit status: 0 when it all holds; 1 when not (each reason on a FAIL
# line); 75 when TCP lost or sent again a segment of the capture: lo
# drops segments under load too, and tshark's MPA dissector, which
# finds FPDUs by the stream's octets, loses its place at such a gap and
# decodes what follows as nonsense, so the capture says nothing of the
# session (run it again).
set -uo pipefail

cap=${1:?usage: nfs_decode.sh CAPTURE [options]}
shift
procs="" mount=0 noent=any read=-1 write=-1 rlists=0 wlists=0 nomsg=0
while [ $# -gt 0 ]; do
	case $1 in
	--procs) procs=$2; shift ;;
	--mount) mount=1 ;;
	--noent) noent=$2; shift ;;
	--read) read=$2; shift ;;
	--write) write=$2; shift ;;
	--read-lists) rlists=$2; shift ;;
	--write-lists) wlists=$2; shift ;;
	--nomsg) nomsg=$2; shift ;;
	*) echo "nfs_decode.sh: unknown option $1" >&2; exit 1 ;;
	esac
	shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ts() { tshark "$@" 2>>"$tmp/tshark.err"; }
bad=0
fail() { echo "FAIL: $*"; bad=1; }

[ -s "$cap" ] || { echo "FAIL: no capture at $cap"; exit 1; }
if [ -n "$(ts -r "$cap" -Y 'tcp.analysis.lost_segment ||
    tcp.analysis.retransmission || tcp.analysis.fast_retransmission ||
    tcp.analysis.out_of_order || tcp.analysis.duplicate_ack ||
    tcp.analysis.ack_lost_segment' | sed -n 1p)" ]; then
	echo "TCP lost or resent segments in the capture: it cannot be decoded"
	exit 75
fi

filter="nfs || mount || rpcordma || rpc"
ts -2 -r "$cap" -Y "($filter) && _ws.malformed" >"$tmp/malformed"
[ -s "$tmp/malformed" ] && fail "malformed frames:
$(sed -n 1,10p "$tmp/malformed")"
ts -2 -r "$cap" -Y "($filter) && _ws.expert" -T fields -E occurrence=a \
	-e frame.number -e _ws.expert.severity -e _ws.expert.message |
	awk -F'\t' '{ n = split($2, s, ","); for (i = 1; i <= n; i++)
		if (s[i] + 0 >= 8388608) { print; break } }' >"$tmp/experr"
[ -s "$tmp/experr" ] && fail "expert errors:
$(sed -n 1,10p "$tmp/experr")"

# Calls and replies, per frame (a frame may hold several messages: the
# end of a call's Read chunk and the next call): the lists of xids,
# message types, NFS procedures, NFS statuses (replies but NULL's) and
# MOUNT procedures
ts -2 -r "$cap" -Y "nfs || mount" -T fields -E occurrence=a -E aggregator=, \
	-e rpc.xid -e rpc.msgtyp -e nfs.procedure_v3 -e nfs.status3 \
	-e mount.procedure_v3 >"$tmp/msgs"
[ -s "$tmp/msgs" ] || { echo "FAIL: tshark decoded no NFS or MOUNT message"; exit 1; }
awk -F'\t' -v procs="$procs" -v mount="$mount" -v noent="$noent" '
	function fail(m) { print "FAIL: " m; bad = 1 }
	BEGIN { split("GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK MKNOD REMOVE RMDIR RENAME LINK READDIR READDIRPLUS FSSTAT FSINFO PATHCONF COMMIT", nm, " ") }
	{
		n = split($1, xid, ","); split($2, typ, ",")
		np = split($3, pr, ","); split($4, st, ","); split($5, mp, ",")
		k = 0
		for (i = 1; i <= n; i++) {
			if (np) proc = "NFS " (pr[i] ? nm[pr[i]] : "NULL")
			else proc = "MOUNT " mp[i]
			if (typ[i] == 0) { call[xid[i]] = proc; ncall++; calls[proc]++; continue }
			if (!(xid[i] in call)) fail("reply " xid[i] " to no call")
			else if (call[xid[i]] != proc) fail("reply " xid[i] " is " proc ", its call " call[xid[i]])
			reply[xid[i]] = 1; nreply++
			if (np && pr[i] != 0) {
				s = st[++k]
				if (s == 2 && proc == "NFS LOOKUP") noents++  # NFS3ERR_NOENT
				else if (s != 0) fail(proc " reply " xid[i] " has status " s)
			}
		}
	}
	END {
		for (x in call) if (!(x in reply)) fail("call " x " (" call[x] ") has no reply")
		m = split(procs, want, " ")
		for (i = 1; i <= m; i++) if (!(("NFS " want[i]) in calls)) fail("no NFS " want[i] " call decoded")
		if (mount && (!(("MOUNT 1") in calls) || !(("MOUNT 3") in calls))) fail("no MNT or UMNT decoded")
		for (p in calls) printf "%-18s %d calls\n", p, calls[p]
		if (noent != "any" && noents + 0 != noent + 0) fail(noents + 0 " NFS3ERR_NOENT replies to LOOKUP, not " noent)
		printf "%d calls, %d replies, %d LOOKUPs answered NFS3ERR_NOENT\n", ncall, nreply, noents
		exit bad
	}' "$tmp/msgs" || bad=1

# READ replies' and WRITE calls' data as decoded
sum() { tr '+' '\n' <"$1" | awk '{ t += $1 } END { print t + 0 }'; }
ts -2 -r "$cap" -Y "nfs.procedure_v3 == 6 && rpc.msgtyp == 1" -T fields \
	-E occurrence=a -E aggregator=+ -e nfs.count3 >"$tmp/read.counts"
ts -2 -r "$cap" -Y "nfs.procedure_v3 == 7 && rpc.msgtyp == 0" -T fields \
	-E occurrence=a -E aggregator=+ -e nfs.count3 >"$tmp/write.counts"
r=$(sum "$tmp/read.counts") w=$(sum "$tmp/write.counts")
echo "READ data decoded: $r octets; WRITE data: $w octets"
[ "$read" -lt 0 ] || [ "$r" -eq "$read" ] || fail "READ replies carry $r octets, not $read"
[ "$write" -lt 0 ] || [ "$w" -eq "$write" ] || fail "WRITE calls carry $w octets, not $write"

# The chunks (RFC 8267 §4.1, RFC 8166 §3.5.3)
ts -2 -r "$cap" -Y rpcordma -T fields -E occurrence=a -E aggregator=, \
	-e rpcordma.msg_type -e rpcordma.reads_count -e rpcordma.writes_count \
	>"$tmp/hdrs"
awk -F'\t' -v rl="$rlists" -v wl="$wlists" -v nm="$nomsg" '
	{ n = split($1, t, ","); split($2, r, ","); split($3, w, ",")
	  for (i = 1; i <= n; i++) { if (r[i] > 0) rd++; if (w[i] > 0 && t[i] == 0) wr++; if (t[i] == 1) no++ } }
	END { printf "%d headers with a Read list, %d RDMA_MSG with a Write list, %d RDMA_NOMSG\n", rd, wr, no
	      exit !(rd >= rl && wr >= wl && no >= nm) }' "$tmp/hdrs" ||
	fail "fewer chunks than the session calls for (Read lists $rlists, Write lists $wlists, RDMA_NOMSG $nomsg)"
exit "$bad"
