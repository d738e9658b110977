#!/usr/bin/env bash
# uiwarp's RFC 7306 operations against Linux siw, which has none of them.
# Not a registered test yet (its name does not start with test_): see
# "Interoperability" in README.md for why it does not pass today.
#
# RFC 7306 §1.1: without an application-level negotiation the operations
# "can be attempted, and reported errors can be used to determine a remote
# peer's capabilities ... A Remote Operation Error or Unexpected OpCode
# error will be reported by the remote peer".  siw answers an RDMAP opcode
# it does not know with the Terminate "RDMAP remote operation error:
# unexpected opcode" (0/2/6) and logs "received unknown packet type N".
# Each of FetchAdd (Add Data 0, the safe probe of §1.1), CmpSwap,
# Immediate Data and RDMA Write with Immediate Data must end, without a
# hang, in an error completion and a QP in Error whose cause is that
# Terminate from the peer.
#
# Today uiwarp ends each of them in the right way but names the cause
# "MPA error: insufficient IRD resources" (2/0/6): siw writes the
# Terminate control field with Layer and EType swapped (SIW-FACTS.md),
# "20 06 00 00", whose RFC reading 2/0/6 is a defined code too, and the
# decoder keeps the RFC reading whenever it is a defined one.  An LLP
# 2/0/6 or 2/0/7 is only valid as an initiator's first FPDU in RFC 6581
# startup, so anywhere else siw's reading is the plausible one.
#
# usage: pending_siw_rfc7306.sh <build-dir> <source-dir>
set -uo pipefail

build=${1:?usage: pending_siw_rfc7306.sh <build-dir> <source-dir>}
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
mkdir -p "$build"
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

# shellcheck source=siw_lib.sh
source "$src/tests/interop/siw_lib.sh"
# shellcheck source=siw_peer_lib.sh
source "$src/tests/interop/siw_peer_lib.sh"

siw_boot pending_siw_rfc7306 2 1
peer_setup

# RFC 7306 §4: Atomic Request opcode 0xA, Immediate Data 0x8.
error_from_siw fetch-add remote:0/2/6 "siw: received unknown packet type 10" \
	--mode=fetch-add
error_from_siw cmp-swap remote:0/2/6 "siw: received unknown packet type 10" \
	--mode=cmp-swap
error_from_siw immediate remote:0/2/6 "siw: received unknown packet type 8" \
	--mode=immediate
error_from_siw write-imm remote:0/2/6 "siw: received unknown packet type 8" \
	--mode=write-imm

siw_finish
