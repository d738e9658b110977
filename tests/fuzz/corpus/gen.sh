#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
# from the vectors the unit tests use: RFC 3720 B.4, RFC 5044 §4.4
# Figures 5 and 6, the siw exchanges and FPDUs of SIW-FACTS, MPA
# Request/Reply frames and Terminates.  Each file is one input in the
# target's own format (see the comment at the top of fuzz_<target>.c).
# Run it after changing an input format; the files it writes are kept in
# the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# hex octets (spaces ignored) to binary on stdout
bin() {
	local h="$*" i
	h=${h//[[:space:]]/}
	for ((i = 0; i < ${#h}; i += 2)); do
		printf "\\x${h:i:2}"
	done
}
# n zero octets, as hex
zeros() { printf '%0*d' $(($1 * 2)) 0; }
# seed <target> <name> <hex...>
seed() {
	local t=$1 name=$2
	shift 2
	mkdir -p "$here/$t"
	bin "$@" >"$here/$t/$name"
}

rm -rf "${here:?}"/*/
KEYREQ=4d504120494420526571204672616d65    # "MPA ID Req Frame"
KEYREP=4d504120494420526570204672616d65    # "MPA ID Rep Frame"

# ---- crc32c: split1(2) split2(2) state(4) data ------------------------
S="0010 0018 ffffffff"
seed crc32c b4_zeros     $S "$(zeros 32)"
seed crc32c b4_ones      $S "$(printf 'ff%.0s' {1..32})"
seed crc32c b4_incr      $S 000102030405060708090a0b0c0d0e0f \
			    101112131415161718191a1b1c1d1e1f
seed crc32c b4_decr      $S 1f1e1d1c1b1a19181716151413121110 \
			    0f0e0d0c0b0a09080706050403020100
seed crc32c b4_iscsi_read $S 01c00000000000000000000000000000 \
			     14000000000004000000001400000018 \
			     28000000000000000200000000000000
# RFC 5044 Figure 5's FPDU, the CRC field left out
seed crc32c fig5_fpdu    "0005 0029 00000000" 00000000002a4143 \
			    "$(zeros 11)" 01 "$(zeros 28)"
# SIW-FACTS: siw's RTR FPDU with its CRC field
seed crc32c siw_rtr      "0002 0010 ffffffff" 000ec14000000001 \
			    0000000000000000 ebd34c5f

# ---- mpa_frame: the stream as it arrives -------------------------------
# SIW-FACTS requests and siw's replies (flags, rev, pd_len, data)
seed mpa_frame req_rev1         $KEYREQ 00 01 0000
seed mpa_frame req_crc          $KEYREQ 40 01 0000
seed mpa_frame req_pd_hello     $KEYREQ 00 01 0005 68656c6c6f
seed mpa_frame req_v2_p2p       $KEYREQ 10 02 0004 8008 8008
seed mpa_frame req_v2_crc_cap   $KEYREQ 50 02 0004 80c8 c0c8
seed mpa_frame req_siw_init     $KEYREQ 10 02 0004 8001 c001
seed mpa_frame req_markers      $KEYREQ 80 01 0000
seed mpa_frame req_pd_too_long  $KEYREQ 00 03 0258
seed mpa_frame rep_v2_swapped   $KEYREP 10 02 0004 8002 4004
seed mpa_frame rep_reject       $KEYREP 30 02 0000
seed mpa_frame rep_markers_rej  $KEYREP 20 01 0000
seed mpa_frame rep_v2_rtr       $KEYREP 50 02 0004 8080 8080 \
				0000000000000000
# a Reply followed by the first FPDU (bytes after the frame)
seed mpa_frame rep_then_fpdu    $KEYREP 40 01 0000 000ec14000000001 \
				0000000000000000 ebd34c5f

# ---- mpa_v2: the 4 octets, then ird(2) ord(2) flags(1) to encode -------
seed mpa_v2 p2p_write      8008 8008 0008 0008 05
seed mpa_v2 no_p2p         0001 0001 0001 0001 00
seed mpa_v2 p2p_read       8004 4002 0004 0002 09
seed mpa_v2 p2p_no_rtr     8000 0000 0000 0000 01
seed mpa_v2 cap_128        80c8 c0c8 00c8 00c8 0d
seed mpa_v2 siw_initiator  8001 c001 0001 0001 0f
seed mpa_v2 max            ffff 3fff ffff ffff 0e
seed mpa_v2 bcd_without_a  4001 c001 4000 ffff 0e

# ---- mpa_fpdu: flags(1) pos(8) cap(2) sel(2), then ---------------------
#   decode (flags 0x04 clear): the stream
#   encode (flags 0x04 set): ulpdu_len(2) and octets to repeat
FIG5="00000000 002a 4143 $(zeros 11) 01 $(zeros 28) 52239983"
FIG6="002a 4143 $(zeros 11) 02 $(zeros 4) 00000014 $(zeros 24) 84925898"
# Figure 5 at the start of the stream, markers and CRC
seed mpa_fpdu fig5       03 0000000000000000 0400 0020 "$FIG5"
# Figure 6 where it lies, at stream octet 0x1ec
seed mpa_fpdu fig6       03 00000000000001ec 0400 0013 "$FIG6"
# the stream of Figure 6's note: a 482-octet Send, then Figure 6
seed mpa_fpdu fig5_fig6_stream 03 0000000000000000 0800 01f0 \
	00000000 01e2 4143 "$(zeros 11)" 01 "$(zeros 468)" a01ee4fd "$FIG6"
# SIW-FACTS: siw's RTR (CRC on, no markers) and rping's first Send
seed mpa_fpdu siw_rtr    02 0000000000001000 0080 0007 \
	000ec14000000001 0000000000000000 ebd34c5f
seed mpa_fpdu siw_send_nocrc 00 0000000000000000 0100 0011 \
	0022 4143 00000000 00000000 00000001 00000000 \
	"$(printf 'a5%.0s' {1..16})" 00000000
# encode mode: Figure 5's ULPDU shape; one marker inside; a long one
seed mpa_fpdu enc_send   07 0000000000000000 0400 0031 002a 4143 \
	"$(zeros 11)" 01 "$(zeros 28)"
seed mpa_fpdu enc_across 0f 00000000000001f8 0400 0100 0100 c140 \
	00000001 0000000000001000 5a5a
seed mpa_fpdu enc_long   3f 0000000000000000 ffff 1234 fff0 4143 \
	00000000 00000000 00000001 00000000 0123456789abcdef
seed mpa_fpdu enc_nocrc_odd 05 0000000000000204 0400 0055 0021 c140 \
	00000002 00000000000000ff 77

# ---- mpa_layout: flags(1) pos(8) ulpdu_len(2, or 4 with flags 0x02)
#      pick(1) emss(4) ----------------------------------------------------
seed mpa_layout fig5       01 0000000000000000 002a 00 000005b4
seed mpa_layout fig6       01 00000000000001ec 002a 05 00000218
seed mpa_layout siw_rtr    00 0000000000001000 000e 01 000005b4
seed mpa_layout max_len    01 0000000000000000 ffff 80 0000ffcb
seed mpa_layout near_end   05 fffffffffffffe00 fffe 10 00002328
seed mpa_layout too_long   03 0000000000000000 00010000 00 00010000
seed mpa_layout odd_pos    01 0000000000000002 0010 00 00000080

# ---- ddp_hdr: the header octets ------------------------------------------
SEND_HDR="4143 00000000 00000000 00000001 00000000"
seed ddp_hdr send_fig5     $SEND_HDR
seed ddp_hdr siw_rtr       c140 00000001 0000000000000000
seed ddp_hdr read_req      4141 00000000 00000001 00000003 00000000
seed ddp_hdr read_resp     c142 00000100 0000000000002000
seed ddp_hdr terminate     4147 00000000 00000002 00000001 00000000
seed ddp_hdr send_inv_se   4146 0000abcd 00000000 00000007 00000000
seed ddp_hdr bad_dv        c240 00000001 0000000000000000
seed ddp_hdr bad_rv        4103 00000000 00000000 00000001 00000000

# ---- read_req: 28 octets, then 28 octets of fields to encode ------------
seed read_req vector    00001234 00007fff00102030 00010000 abcdef01 \
			8000000000000008
seed read_req zero_len  00000100 0000000000002000 00000000 00000bad \
			0000000000000000 ffffffff ffffffffffffffff \
			ffffffff ffffffff ffffffffffffffff

# ---- term: the Terminate payload -----------------------------------------
BAD_QN="4143 00000000 00000007 00000001 00000000"
READ_HDR="4141 00000000 00000001 00000003 00000000"
seed term invalid_qn_rfc  12 01 c0 00 0076 $BAD_QN
seed term invalid_qn_siw  21 01 03 00 0076 $BAD_QN
seed term llp_crc_rfc     20 02 00 00
seed term llp_crc_siw     02 02 00 00
seed term no_buf_siw      21 02 03 00 0076 $BAD_QN
seed term stag_tagged_siw 11 00 03 00 000e c140 00000001 0000000000000000
seed term read_req_mdr    01 00 e0 00 002e $READ_HDR \
			  00000100 0000000000002000 00001000 00000bad \
			  0000000000000000
seed term r_only          01 02 20 00 00000100 0000000000002000 \
			  00001000 00000bad 0000000000000000
seed term undefined       55 55 00 00

# ---- atomic: sel(1) len(8) ctrl(1) qn(4), then the octets ----------------
# RFC 7306 Figure 4 (FetchAdd, CmpSwap, masked), Figure 6, Figure 7
FA_REQ="00000000 00000001 00001234 0000000000002000 0000000000000001 \
	0000000000000000 0000000000000000 ffffffffffffffff"
CS_REQ="00000002 00000002 00001234 0000000000002008 5555aaaa5555aaaa \
	ffff0000ffff0000 0123456789abcdef 00ff00ff00ff00ff"
seed atomic fetchadd      0a 0000000000000034 00 00000001 $FA_REQ
seed atomic cmpswap       0a 0000000000000034 00 00000001 $CS_REQ
seed atomic masked_add    1a 0000000000000035 00 00000003 00000000 \
	00000007 00000abc 0000000000000010 00ff00ff00ff00ff \
	8080808080808080 0000000000000000 ffffffffffffffff
seed atomic unaligned     0a 0000000000000033 00 00000001 00000002 \
	00000009 00000abc 0000000000000004 0000000000000001 \
	0000000000000000 0000000000000000 ffffffffffffffff
seed atomic bad_aopcode   0a 0000000000000034 00 00000001 fffffff5 \
	"$(zeros 48)"
seed atomic response      0b 000000000000000c 00 00000003 00000001 \
	0123456789abcdef
seed atomic imm           08 0000000000000008 00 00000000 fedcba9876543210
seed atomic imm_se_tagged 19 0000000000000009 00 00000000 0000000000000001

# ---- mpa2: initiator ird ord max flags, responder ird ord max flags,
#      mode, Request field, Reply field ------------------------------------
# flags: 01 strict, 02 p2p, 04/08 manual IRD/ORD, 70 RTR types << 4
seed mpa2 client_server   0008 0008 0080 00  0010 0010 0080 00  00 \
	00000000 00000000
seed mpa2 p2p_all         0004 0004 0080 72  0004 0004 0080 70  00 \
	00000000 00000000
seed mpa2 p2p_read_only   0002 0001 0080 42  0001 0004 0080 40  0c \
	00000000 00000000
seed mpa2 strict_reject   0001 0001 0080 00  0002 0008 0080 01  04 \
	00000000 00000000
seed mpa2 manual          0008 0008 0080 0c  0004 0004 0080 00  00 \
	00000000 00000000
seed mpa2 no_match_rtr    0004 0004 0080 12  0004 0004 0080 20  0b \
	00000000 80044002
seed mpa2 insufficient    0001 0001 0004 01  0008 0008 0080 00  3e \
	00000000 00040040
seed mpa2 siw_request     0001 0001 0080 00  0080 0080 0080 00  01 \
	8001c001 00000000
seed mpa2 a_not_echoed    0004 0004 0080 72  0004 0004 0080 70  02 \
	00000000 00040004

# ---- engine_rx: c0 c1 c2, then records kind(1) len(2) octets -------------
# (c0: 01 CRC, 02 markers in, 04 markers out, 08 hold, 70 RTR, 80 setup
# Terminate; c1: split, iovecs; c2: IRD/ORD, seed.  kind 00 frames a
# ULPDU, 01 appends raw octets.  5a5354 0k: region k's STag; 5a544f 0k
# + 4 octets: its address + offset.)
E_SEND16="0022 4143 00000000 00000000 00000001 00000000 \
	000102030405060708090a0b0c0d0e0f"
E_WRITE="002e c140 5a535400 5a544f00 00000010 $(printf 'a5%.0s' {1..32})"
E_RREQ="002e 4141 00000000 00000001 00000001 00000000 00001111 \
	0000000000000000 00000040 5a535401 5a544f01 00000020"
E_RRESP="008e c142 5a535403 5a544f03 00000200 $(printf '5c%.0s' {1..128})"
# (an Atomic Request with MSN m on queue 1)
e_areq() {
	echo "0046 414a 00000000 00000001 0000000$1 00000000 00000000" \
		"00000001 5a535402 5a544f02 00000008 0000000000000001" \
		"0000000000000000 0000000000000000 ffffffffffffffff"
}
E_ARESP="001e 414b 00000000 00000003 00000001 00000000 00000001 \
	0123456789abcdef"
E_IMM="001a 4148 00000000 00000000 00000001 00000000 fedcba9876543210"
E_TERM="0016 4147 00000000 00000002 00000001 00000000 20020000"
seed engine_rx send             00 00 00 00 $E_SEND16
seed engine_rx send_crc_markers 07 00 00 00 $E_SEND16
seed engine_rx send_one_octet   03 01 00 00 $E_SEND16
seed engine_rx write            00 00 00 00 $E_WRITE
seed engine_rx write_crc_split  01 0e 33 00 $E_WRITE
seed engine_rx read_request     01 00 00 00 $E_RREQ
seed engine_rx read_response    07 fe 21 00 $E_RRESP
seed engine_rx atomic_request   01 00 00 00 $(e_areq 1)
seed engine_rx atomic_response  00 02 3f 00 $E_ARESP
seed engine_rx feed_alternate   07 80 12 00 $E_WRITE 00 $E_RREQ 00 \
	$E_SEND16 00 $E_RRESP 00 $E_ARESP 00 $(e_areq 2)
seed engine_rx feed_hold_read   09 00 21 00 $E_SEND16 00 $E_RRESP 00 \
	$E_ARESP
seed engine_rx immediate        00 00 00 00 $E_IMM
seed engine_rx terminate        01 00 00 00 $E_TERM
seed engine_rx multi_segment    00 00 00 00 001a 0143 00000000 00000000 \
	00000001 00000000 0001020304050607 00 001a 4143 00000000 00000000 \
	00000001 00000008 08090a0b0c0d0e0f
seed engine_rx everything       07 fe 12 00 $E_WRITE 00 $E_RREQ 00 \
	$E_SEND16 00 $E_RRESP 00 $E_ARESP 00 $(e_areq 2)
seed engine_rx hold_rtr_write   29 00 00 00 000e c140 00000001 \
	0000000000000000 00 $E_SEND16
seed engine_rx hold_no_rtr      09 03 07 00 $E_SEND16 00 $E_WRITE
seed engine_rx bad_crc          01 00 00 01 001c 0016 4143 00000000 \
	00000000 00000001 00000000 0102 0000 deadbeef
seed engine_rx bad_ddp_version  00 00 00 00 0022 4243 00000000 00000000 \
	00000001 00000000 000102030405060708090a0b0c0d0e0f
seed engine_rx setup_term       89 00 00 00 $E_TERM
# Two equal messages of two FPDUs each (8-octet Sends: the second
# receive takes 8; 32-octet Writes), up to 16 iovecs a call: the second
# message's first FPDU ends a call, where rx_iov_ahead guesses the rest.
e_send2() { # MSN
	echo "00 0016 0143 00000000 00000000 0000000$1 00000000 00010203" \
		"00 0016 4143 00000000 00000000 0000000$1 00000004 04050607"
}
e_write2() { # TO offset of the first half (hex, 2 digits)
	echo "00 001e 8140 5a535400 5a544f00 000000$1 $(printf 'a5%.0s' {1..16})" \
		"00 001e c140 5a535400 5a544f00 000000$(printf '%02x' $((0x$1 + 16)))" \
		"$(printf 'b6%.0s' {1..16})"
}
seed engine_rx ahead_send       00 3c 00 $(e_send2 1) $(e_send2 2)
seed engine_rx ahead_write_crc  01 bc 00 $(e_write2 00) $(e_write2 20)

# ---- mpa_startup: mode(1), then what the raw peer sends -------------------
# (mode 01 accept (initiator: revision 2), 02 end of stream after an
# incomplete frame, 04 write in two parts at (mode >> 3) * 8)
seed mpa_startup rev1_reject      00 $KEYREQ 40 01 0000
seed mpa_startup rev1_accept      01 $KEYREQ 40 01 0000
seed mpa_startup markers_accept   15 $KEYREQ c0 01 0005 68656c6c6f
seed mpa_startup v2_p2p_accept    01 $KEYREQ 50 02 0004 8008 8008
seed mpa_startup v2_siw_accept    01 $KEYREQ 10 02 0004 8001 c001
seed mpa_startup v2_pd_reject     00 $KEYREQ 50 02 0009 0004 0004 \
				  68656c6c6f
seed mpa_startup enh_no_room      01 $KEYREQ 10 02 0002 8008
seed mpa_startup rev3             01 $KEYREQ 40 03 0000
seed mpa_startup pd_too_long      01 $KEYREQ 40 01 0201
seed mpa_startup trailing_octets  01 $KEYREQ 40 01 0000 00
seed mpa_startup reply_key        01 $KEYREP 40 01 0000
seed mpa_startup prefix_fin       02 $KEYREQ 40 01 0010 0102
seed mpa_startup prefix_timeout   00 4d504120
# Replies, for the initiator that is fed the same octets
seed mpa_startup reply_v2_accept  01 $KEYREP 50 02 0006 0004 0004 6f6b
seed mpa_startup reply_v2_reject  01 $KEYREP 30 02 0004 0008 0008
seed mpa_startup reply_v1_fpdu    00 $KEYREP 40 01 0000 000ec14000000001

# ---- engine_seg: c0, then op(1) and its fields (fuzz_engine_seg.c) -----
# A Send of 8 octets to a posted buffer: post, begin (18-octet untagged
# header, length known), put, end, drain.
SEND_HDR=4143000000000000000000000001 # L DV1, RV1 Send, inv, QN 0, MSN 1
SEND_HDR=${SEND_HDR}00000000          # MO 0
seed engine_seg send_whole        00 05 04 00 12 001a $SEND_HDR \
				  02 0000 0008 0102030405060708 03 001a 00 06
# The same unordered, its length unknown at the header, named, not put.
seed engine_seg send_named        01 05 04 00 12 ffff $SEND_HDR \
				  01 0000 0008 04 03 001a 00 06
# An RDMA Write (tagged) to STag 0 beyond any region, length unknown.
seed engine_seg write_unknown     01 00 0e ffff c140 00000000 \
				  0000000000000000 01 0000 0100 08 \
				  03 010e 00 06

# ---- ddps_ctl: a DDP Stream Session Control payload (RFC 5043 §5.2.3,
#      RFC 6581 §7): DDP-SSN(2) Function Code(2) private data -----------
seed ddps_ctl initiate_pd     0000 0001 68656c6c6f
seed ddps_ctl accept_empty    0000 0002
seed ddps_ctl reject_pd       0000 0003 6e6f
seed ddps_ctl terminate       0007 0004
seed ddps_ctl terminate_pd    0007 0004 00
seed ddps_ctl e_initiate      0000 0005 0004 0004 6869
seed ddps_ctl e_accept_p2p    0000 0006 c004 8004
seed ddps_ctl e_reject_noword 0000 0007 0008
seed ddps_ctl e_accept_bcd    ffff 0006 4001 c001
seed ddps_ctl unknown_code    0000 0008
seed ddps_ctl short           0001 00
seed ddps_ctl pd_512          0000 0002 "$(zeros 512)"
seed ddps_ctl pd_513          0000 0003 "$(zeros 513)"
seed ddps_ctl e_pd_508        0001 0005 00010001 "$(zeros 508)"

# ---- ddps_seg: c0 c1, then op(1) and its fields (fuzz_ddps_seg.c) ------
# An 8-octet Send into one of the receives c1 posts (auto DDP-SSN).
DS_SEND="4143 00000000 00000000 00000001 00000000"
seed ddps_seg send            01 02 08 001a $DS_SEND 0102030405060708 06
# An RDMA Write into region 0 (STag and TO placed), then a Send.
seed ddps_seg write_then_send 00 01 18 001e c140 00000000 \
	0000000000000010 "$(printf '5a%.0s' {1..16})" \
	08 0012 $DS_SEND 06
# A Read Request for region 2 (source placed): the engine answers.
seed ddps_seg read_request    03 00 18 002e 4141 00000000 00000001 \
	00000001 00000000 00000abc 0000000000000000 00000010 \
	00000002 0000000000000020 06
# Our RDMA Read into region 1, and the peer's Read Response to it.
seed ddps_seg read_response   05 00 04 01 10 00000000 0000 \
	18 001e c142 00000001 0000000000000000 \
	"$(printf 'c3%.0s' {1..16})" 06
# DDP-SSN 2 before 1: the second Send waits for the first.
seed ddps_seg reordered       01 02 00 0016 0002 4143 00000000 \
	00000000 00000002 00000000 a1a2 08 001a $DS_SEND b1b2b3b4b5b6b7b8 06
# The peer's Session Terminate; then our disconnect.
seed ddps_seg peer_terminate  00 01 09 02 0004 05 06
# A chunk with PPID 18 on the session's stream.
seed ddps_seg bad_ppid        01 01 0a 00 00000012 0004 4143 0000
# An Initiate on another stream, then a segment there before any Accept.
seed ddps_seg seg_before_accept 01 00 0f 00 0a 01 00000010 0012 $DS_SEND
# A replay of DDP-SSN 0, a Terminate with private data.
seed ddps_seg replay          00 01 00 0014 0000 $DS_SEND
seed ddps_seg terminate_pd    00 01 09 03 0004 00

# ---- rpcrdma_hdr: bounds(1) then an RPC-over-RDMA header --------------
# the vectors of tests/unit/test_rpcrdma_hdr.c (RFC 8166 §4.7), bounds
# 15 segments / 15 chunks; H: a plain segment (HLOO)
H="000000ab00000040 0000000000001000"
seed rpcrdma_hdr msg_plain     ff 01020304 00000001 00000020 00000000 \
				00000000 00000000 00000000 0102030400000000
seed rpcrdma_hdr read_chunk    ff deadbeef 00000001 00000080 00000000 \
				00000001 0000008c 11223344 00001000 \
				00007f0012340000 00000001 0000008c 55667788 \
				00000003 0000000000001000 00000000 00000000 \
				00000000
seed rpcrdma_hdr write_list    ff 00000007 00000001 00000001 00000000 \
				00000000 00000001 00000003 $H $H $H \
				00000001 00000002 $H $H 00000000 00000000
seed rpcrdma_hdr long_reply    ff 00003039 00000001 00000010 00000001 \
				00000000 00000000 00000001 00000002 $H $H
seed rpcrdma_hdr long_call     ff 00000009 00000001 00000010 00000001 \
				00000001 00000000 $H 00000001 00000000 $H \
				00000001 00000008 $H 00000000 00000001 \
				00000000 00000001 00000001 $H
seed rpcrdma_hdr err_vers      ff 0000002a 00000001 00000001 00000004 \
				00000001 00000001 00000001
seed rpcrdma_hdr err_chunk     ff 0000002b 00000001 00000001 00000004 \
				00000002
seed rpcrdma_hdr msgp          ff 00000077 00000001 00000001 00000002 \
				00000040 00000400 00000000 00000000 00000000
seed rpcrdma_hdr done          ff 00000078 00000001 00000001 00000003
seed rpcrdma_hdr tight_bounds  11 00000001 00000001 00000001 00000000 \
				00000001 00000008 $H 00000001 00000008 $H \
				00000000 00000000 00000000

# ---- rpcrdma_cm: private data (RFC 8797), then r send recv ------------
seed rpcrdma_cm message        f6ab0e1801010307
seed rpcrdma_cm defaults       f6ab0e1801000000
seed rpcrdma_cm mpa_v2_word    80100008f6ab0e180100ff00
seed rpcrdma_cm version2_first f6ab0e180201030755f6ab0e1801010f1f
seed rpcrdma_cm foreign        6e766d652d72646d612d7064

# ---- rr_plan: selector(1), then the same octets read three ways -------
# any_call: max_call(2) and a received call; call_round_trip (odd
# selector): xid(4) thresh(1) npieces(1) {flags(1) len(2)}...;
# reply_round_trip (even): xid(4) thresh(1) nwchunk(1) {nseg(1)
# {len(2)}...}... reply(1) [nseg(1) {len(2)}...] then pieces as above
seed rr_plan call_inline      00 1000 00000001 00000001 00000008 00000000 \
				00000000 00000000 00000000 00000001
seed rr_plan call_read_chunk  00 1000 00000002 00000001 00000008 00000000 \
				00000001 00000014 000000ab 00000400 \
				00000000 00001000 00000000 00000000 00000000 \
				00000002 00000000 00000000 00000000 00000400 \
				00000000
seed rr_plan call_long        00 1000 00000003 00000001 00000008 00000001 \
				00000001 00000000 000000ab 00000020 \
				00000000 00002000 00000000 00000000 00000000
seed rr_plan rt_call_pieces   01 00000005 40 04 \
				01 1400 00 0010 01 0003 00 3000
seed rr_plan rt_call_long     01 00000006 00 05 \
				00 2000 01 0005 00 0007 01 4e20 00 0100
seed rr_plan rt_reply_chunks  00 00000007 40 03 02 1000 0800 00 01 4000 \
				01 02 4000 2000 03 01 1800 00 0100 01 0700
# ---- rpcrdma_splice: c0, a 16-bit count per Write chunk, the stream ----
# the first body from chunk 1 (5 octets), the second ("abc") inline
seed rpcrdma_splice first_chunk 03 0005 00000000 00000005 00000003 61626300
# each body from a chunk of its own
seed rpcrdma_splice each_two    04 0004 0002 00000000 00000004 00000002
# no chunk: both inline with their pads
seed rpcrdma_splice inline      00 00000000 00000002 41420000 00000001 43000000
# a failed result: the chunk offered stays unused
seed rpcrdma_splice failed      03 0000 00000046

# ---- rpcrdma_nfs4walk: c0 (1: results) c1 c2 (the items to take out),
# then a COMPOUND4args or COMPOUND4res (RFC 7530 §16, RFC 5661 §16.2) ----
# XDR words, decimal, as hex
w() { local v; for v in "$@"; do printf '%08x' "$v"; done; }
# an opaque<> of n octets 'a' and its pad
opq() {
	local n=$1 i
	printf '%08x' "$n"
	for ((i = 0; i < n; i++)); do printf '61'; done
	for ((i = n; i % 4; i++)); do printf '00'; done
}
TAG=$(opq 3)
STATEID=$(w 1)$(zeros 12)
SEQ_A=$(w 53)$(zeros 16)$(w 7 0 0 1)
SEQ_R=$(w 53 0)$(zeros 36)
PUTFH_A=$(w 22)$(opq 20)
GETATTR_A=$(w 9 2 24 3145728)
GETATTR_R=$(w 9 0 2 16 0)$(opq 8)
READ_A=$(w 25)$STATEID$(w 0 4096 70000)
FATTR=$(w 1 2)$(opq 4)
# SEQUENCE PUTFH READ GETATTR, both ways (slot 0 taken out)
seed rpcrdma_nfs4walk args_read  00 00 00 $TAG $(w 1 4) $SEQ_A $PUTFH_A \
			       $READ_A $GETATTR_A
seed rpcrdma_nfs4walk res_read   01 01 00 $(w 0) $TAG $(w 4) $SEQ_R \
			       $(w 22 0 25 0 1) "$(opq 50)" $GETATTR_R
# PUTFH WRITE GETATTR; CREATE NF4LNK GETFH
seed rpcrdma_nfs4walk args_write 00 ff ff $TAG $(w 0 3) $PUTFH_A \
			       $(w 38) $STATEID $(w 0 0 2) "$(opq 30)" \
			       $GETATTR_A
seed rpcrdma_nfs4walk args_link  00 01 00 $TAG $(w 0 3) $PUTFH_A \
			       $(w 6 5) "$(opq 20)" "$(opq 3)" $FATTR $(w 10)
# READLINK; two READs, the first failed; CREATE's result
seed rpcrdma_nfs4walk res_link   01 01 00 $(w 0) $TAG $(w 2 22 0 27 0) \
			       "$(opq 12)"
seed rpcrdma_nfs4walk res_reads  01 03 00 $(w 0) $TAG $(w 3 22 0 25 5 25 0 0) \
			       "$(opq 9)"
seed rpcrdma_nfs4walk res_create 01 00 00 $(w 0) $TAG $(w 1 6 0) \
			       $(zeros 20) $(w 1 2)
# an operation no minor version has, then READ
seed rpcrdma_nfs4walk args_unknown 00 00 00 $TAG $(w 1 3) $PUTFH_A \
			       $(w 99) "$(opq 5)" $(w 1) $READ_A
# EXCHANGE_ID (SP4_NONE), CREATE_SESSION (AUTH_SYS), OPEN (GUARDED,
# CLAIM_NULL), LOCK (a new lock owner)
seed rpcrdma_nfs4walk args_session 00 00 00 $TAG $(w 1 4) \
			       $(w 42) $(zeros 8) "$(opq 8)" $(w 0 0 0) \
			       $(w 43) $(zeros 16) $(w 0 0 0 0 0 0 0) \
			       $(w 0 0 0 0 0 0 0) $(w 1073741824 1 1 0) \
			       "$(opq 5)" $(w 0 0 0) \
			       $(w 18 0 2 0) $(zeros 8) "$(opq 4)" $(w 1 1) \
			       $FATTR $(w 0) "$(opq 4)" \
			       $(w 12 2 0 0 0 0 0 1 0) $STATEID $(w 0) \
			       $(zeros 8) "$(opq 4)"
