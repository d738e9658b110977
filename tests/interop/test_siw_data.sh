#!/usr/bin/env bash
# uiwarp against Linux siw in a QEMU guest: the data path both ways, and
# errors crossing the wire.
#
# rping moves at most 65535 octets and only 16-octet Sends, so the data
# path is driven by a pair of small programs speaking one protocol
# (peer_proto.h): uiw_peer on the host (uiwarp) and siw_peer in the guest
# (libibverbs and librdmacm over siw; built by build-peer.sh against the
# guest's own rdma-core and copied in).  perftest's ib_*_bw -R cannot be
# the guest end: they exchange their parameters over rdma_cm in
# perftest's own binary format before any test, and check no data.
#
# Data (each octet verified by the receiving or reading side; odd tagged
# offsets; sizes 1 octet to 1 MiB: a 1 MiB message is some 700 FPDUs from
# siw, which sends one TCP segment per FPDU, and 32 from uiwarp):
#   Send, RDMA Write and RDMA Read, host -> guest and guest -> host,
#   - uiwarp initiator in peer-to-peer mode with a Read RTR, CRC off;
#   - siw initiator (MPA revision 2), uiwarp responder with CRC on;
#   - uiwarp initiator with MPA revision 1 and CRC on.
#   (uiwarp's connections to siw wait 100 ms after siw's Reply before
#   the first FPDU: SIW_START_DELAY_MS in siw_lib.sh says why.)
# Errors:
#   - uiwarp writes past the end of siw's advertised buffer: siw sends a
#     Terminate, uiwarp reports "DDP tagged buffer error: base or bounds
#     violation" (1/1/1) from siw's non-RFC Terminate layout;
#   - siw reads with a wrong STag: uiwarp sends the Terminate "RDMAP
#     remote protection error: invalid STag" (0/1/0), siw's Read fails,
#     and siw's kernel log names the Terminate it got (as "layer 1, type
#     0": siw reads the RFC layout with Layer and EType swapped).
# RFC 7306 against a peer without it (RFC 7306 §1.1): FetchAdd (Add Data
# 0), CmpSwap, Immediate Data and Write with Immediate each end, without
# a hang, in an error completion and a QP in Error through siw's
# Terminate, whose cause uiwarp names as "RDMAP remote operation error:
# unexpected opcode" (0/2/6; siw writes it "20 06 00 00" in its swapped
# layout, whose RFC reading 2/0/6 only an RFC 6581 initiator sends, as its
# first FPDU), and siw's kernel log shows the opcode it refused.
#
# usage: test_siw_data.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: test_siw_data.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"
# shellcheck source=siw_peer_lib.sh
source "$src/tests/interop/siw_peer_lib.sh"

# After a restart in the peer-to-peer part: siw_peer again, and that siw.
peer_copy_in_p2p() { peer_copy_in && siw_use_p2p; }

siw_boot test_siw_data 2 1
peer_setup

SIZES=1,27,1448,4096,65537,1048576

# Host initiator, guest responder.
data_to_siw rtr-read-nocrc "$SIZES" --p2p=read --crc=off
data_to_siw rev1-crc 1,4096,1048576 --mpa-rev=1 --crc=on
# Guest initiator (siw's defaults: revision 2, no CRC asked), host
# responder with CRC on.
data_from_siw siw-initiator-crc "$SIZES" --crc=on

# uiwarp breaks the rule, siw terminates, uiwarp reports the cause.
error_from_siw overrun remote:1/1/1 "" --mode=overrun
# siw breaks the rule, uiwarp terminates; siw's Read fails and its kernel
# log names the Terminate (in its swapped reading, see above).
error_from_siw bad-read local:0/1/0 "siw: got TERMINATE. layer 1, type 0, code 0" \
	--mode=victim

# RFC 7306 §4: Atomic Request opcode 0xA, Immediate Data 0x8.
error_from_siw fetch-add remote:0/2/6 "siw: received unknown packet type 10" \
	--mode=fetch-add
error_from_siw cmp-swap remote:0/2/6 "siw: received unknown packet type 10" \
	--mode=cmp-swap
error_from_siw immediate remote:0/2/6 "siw: received unknown packet type 8" \
	--mode=immediate
error_from_siw write-imm remote:0/2/6 "siw: received unknown packet type 8" \
	--mode=write-imm

# siw as a peer-to-peer initiator (siw.ko built with peer_to_peer on, see
# siw_use_p2p): its Write RTR opens the connection, unseen by uiw_peer.
if siw_use_p2p; then
	SIW_AFTER_RESTART="peer_copy_in_p2p"
	data_from_siw siw-p2p-initiator "$SIZES" --crc=on
	if grep -Eq "established: .*peer-to-peer on, RTR 0x[2367]," "$SIW_TMP/siw-p2p-initiator.h.out"; then
		ok "siw-p2p-initiator: the connection was peer-to-peer, the Write RTR among those kept"
	else
		bad "siw-p2p-initiator: not a peer-to-peer connection with a Write RTR"
		show "$SIW_TMP/siw-p2p-initiator.h.out"
	fi
else
	bad "siw-p2p-initiator: siw.ko with peer_to_peer on could not replace siw.ko"
fi

siw_finish
