#!/usr/bin/env python3
"""Writes pcap files of DDP over SCTP (RFC 5043) carried in UDP (RFC 6951),
built octet by octet, for tests/wire/ddp_sctp.lua and the decoding part of
tests/wire/test_tshark_sctp.sh.

    sctp_pcap.py DIR

writes into DIR:

  session.pcap     one association between an active end A (SCTP port
                   40002, UDP port 40001) and a passive end B (SCTP port
                   5001, UDP port 9899), frames in this order (SSN: the
                   DDP-SSN, RFC 5043 §5.2.1):
                     1  A>B INIT with the Adaptation Layer Indication 1
                     2  B>A INIT-ACK with a cookie and the indication 1
                     3  A>B COOKIE-ECHO
                     4  B>A COOKIE-ACK
                     5  A>B Enhanced Initiate, SSN 0, IRD/ORD word 0x80104008
                        (A, IRD 16; D, ORD 8), private data "uiwarp-init"
                     6  B>A SACK, Enhanced Accept, SSN 0, IRD/ORD word
                        0x40080010 (B, IRD 8; ORD 16), no ULP private data
                     7  A>B SACK and two DATA chunks: an RDMA Write in two
                        tagged segments (SSN 1, not Last; SSN 2, Last)
                     8  A>B Send, untagged (SSN 3)
                     9  A>B Send with Invalidate (SSN 4)
                    10  A>B Send with SE (SSN 5)
                    11  A>B Send with SE and Invalidate (SSN 6)
                    12  A>B Read Request (SSN 7)
                    13  B>A SACK, Read Response, tagged (SSN 1)
                    14  B>A Send (SSN 2)
                    15  B>A RDMAP Terminate, DDP tagged buffer error,
                        Invalid STag, with the terminated DDP header (SSN 3)
                    16  B>A Session Terminate, function code 4 (SSN 4)
                    17  A>B SACK, Initiate on the same stream: a new
                        session, SSN 0 again, private data "retry"
                    18  B>A SACK, Reject, SSN 0, private data "busy"
                    19  A>B SACK
                    20  A>B SHUTDOWN
                    21  B>A SHUTDOWN-ACK
                    22  A>B SHUTDOWN-COMPLETE
                   B's TSNs start at 0xfffffffe, so they wrap.
  session.out      what uiwarp-wiretest would print for that session
                   (ports, RDMAP message counts per opcode, messages of
                   several segments)
  malformed.pcap   one SCTP packet a frame, each with one DATA chunk
                   that ddp_sctp.lua must flag (frame: the flaw):
                     1  PPID 16, 1 octet: no room for the DDP-SSN
                     2  PPID 17, 3 octets: no room for the function code
                     3  PPID 17, function code 9
                     4  PPID 17, Session Terminate with 4 octets of
                        private data
                     5  PPID 17, Initiate with 513 octets of private data
                     6  PPID 16, DDP-SSN and 10 octets of a tagged header
                        (14 needed)
                     7  PPID 16, DDP-SSN and 16 octets of an untagged
                        header (18 needed)
                     8  PPID 17, Enhanced Initiate with 2 octets of
                        private data: no room for the IRD/ORD word
  truncated.pcap   every DATA chunk of session.pcap cut short at every
                   length from 1 octet to one less than its own, one a
                   frame: nothing in ddp_sctp.lua may fail on them
  bad-<flaw>.pcap  session.pcap with one flaw that the session check must
                   find: crc (a DATA packet with a wrong checksum), ordered
                   (a DATA chunk without the U flag), ppid (a DATA chunk of
                   PPID 18), noadapt (an INIT-ACK without the Adaptation
                   Layer Indication), ssngap (B's DDP-SSN 3 skipped)

The SCTP checksum is CRC32c (RFC 4960 §6.8, Appendix B), computed here and
checked against RFC 3720 §B.4's examples before anything is written.
"""

import os
import struct
import sys

# RFC 4960 §3.2 chunk types
DATA, INIT, INIT_ACK, SACK, SHUTDOWN, SHUTDOWN_ACK = 0, 1, 2, 3, 7, 8
COOKIE_ECHO, COOKIE_ACK, SHUTDOWN_COMPLETE = 10, 11, 14
# RFC 4960 §3.3.1 DATA flags
FLAG_U, FLAG_B, FLAG_E = 0x04, 0x02, 0x01

PPID_SEG, PPID_CTL = 16, 17               # RFC 5043 §5.2
ADAPT_DDP = 0x00000001                    # RFC 5043 §5.1
PARAM_ADAPT, PARAM_COOKIE = 0xC006, 7     # RFC 5061 §4.2.6, RFC 4960 §3.3.3

# RFC 5043 §5.2.3, RFC 6581 §7 function codes
FC_INIT, FC_ACCEPT, FC_REJECT, FC_TERM = 1, 2, 3, 4
FC_EINIT, FC_EACCEPT = 5, 6

# RFC 5040 §4.2 RDMAP opcodes
OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND = 0, 1, 2, 3
OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, OP_TERMINATE = 4, 5, 6, 7

A_SCTP, A_UDP, B_SCTP, B_UDP = 40002, 40001, 5001, 9899
A_TAG, B_TAG = 0x11223344, 0x55667788
A_TSN0, B_TSN0 = 1000, 0xfffffffe


def crc32c(data):
    """CRC32c as SCTP uses it (RFC 4960 Appendix B): the reflected
    polynomial 0x82F63B78, register preset to ones, result complemented;
    its low octet goes first on the wire."""
    crc = 0xffffffff
    for octet in data:
        crc ^= octet
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xffffffff


def crc32c_wire(data):
    return struct.pack('<I', crc32c(data))


def check_crc32c():
    # RFC 3720 §B.4: the CRC as it appears in the PDU, octet by octet
    vectors = [
        (bytes(32), 'aa36918a'),
        (b'\xff' * 32, '43aba862'),
        (bytes(range(32)), '4e79dd46'),
        (bytes(range(31, -1, -1)), '5cdb3f11'),
    ]
    for data, want in vectors:
        got = crc32c_wire(data).hex()
        if got != want:
            sys.exit('CRC32c self-check failed: %s instead of %s' % (got, want))


def pad4(b):
    return b + bytes(-len(b) % 4)


def chunk(ctype, flags, value):
    # RFC 4960 §3.2: the length excludes the padding
    return pad4(struct.pack('!BBH', ctype, flags, 4 + len(value)) + value)


def param(ptype, value):
    return pad4(struct.pack('!HH', ptype, 4 + len(value)) + value)


def init_chunk(ctype, tag, tsn, params):
    # RFC 4960 §3.3.2: Initiate Tag, a_rwnd, OS, MIS, Initial TSN
    fixed = struct.pack('!IIHHI', tag, 0x20000, 256, 256, tsn)
    return chunk(ctype, 0, fixed + b''.join(params))


def data_chunk(tsn, sid, ppid, payload, flags=FLAG_U | FLAG_B | FLAG_E):
    # RFC 4960 §3.3.1: an unordered chunk's Stream Sequence Number is
    # not used; RFC 5043 §5.2.1 puts the DDP-SSN in the payload instead
    return chunk(DATA, flags, struct.pack('!IHHI', tsn, sid, 0, ppid) + payload)


def sack_chunk(cum_tsn):
    return chunk(SACK, 0, struct.pack('!IIHH', cum_tsn & 0xffffffff, 0x20000, 0, 0))


def sctp_packet(sport, dport, vtag, chunks, bad_crc=False):
    hdr = struct.pack('!HHI', sport, dport, vtag)
    body = b''.join(chunks)
    crc = crc32c_wire(hdr + bytes(4) + body)
    if bad_crc:
        crc = bytes(b ^ 0x5a for b in crc)
    return hdr + crc + body


def inet_sum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


LO = bytes([127, 0, 0, 1])


def udp_ip_eth(sport, dport, payload, ident):
    ulen = 8 + len(payload)
    pseudo = LO + LO + struct.pack('!BBH', 0, 17, ulen)
    udp = struct.pack('!HHHH', sport, dport, ulen, 0) + payload
    csum = (~inet_sum(pseudo + udp)) & 0xffff or 0xffff
    udp = udp[:6] + struct.pack('!H', csum) + udp[8:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), ident & 0xffff,
                     0x4000, 64, 17, 0, LO, LO)
    ip = ip[:10] + struct.pack('!H', (~inet_sum(ip)) & 0xffff) + ip[12:]
    # Ethernet with zero addresses, as Linux's lo is captured
    return bytes(12) + b'\x08\x00' + ip + udp


def write_pcap(path, frames):
    with open(path, 'wb') as f:
        # pcap file header: version 2.4, snaplen 262144, Ethernet
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        for i, frame in enumerate(frames):
            sec, usec = 1700000000 + i // 1000, (i % 1000) * 1000
            f.write(struct.pack('<IIII', sec, usec, len(frame), len(frame)))
            f.write(frame)


# DDP and RDMAP (RFC 5041 §4, RFC 5040 §4)

DDP_T, DDP_L, DDP_DV = 0x80, 0x40, 0x01
RDMAP_RV = 0x40


def tagged(op, last, stag, to, payload=b''):
    # RFC 5041 §4.2: control, RsvdULP (RDMAP control), STag, TO
    ctl = DDP_T | (DDP_L if last else 0) | DDP_DV
    return struct.pack('!BBIQ', ctl, RDMAP_RV | op, stag, to) + payload


def untagged(op, qn, msn, mo, payload=b'', inval=0, last=True):
    # RFC 5041 §4.3: control, RsvdULP (RDMAP control and the STag to
    # invalidate, RFC 5040 §4.1), QN, MSN, MO
    ctl = (DDP_L if last else 0) | DDP_DV
    return struct.pack('!BBIIII', ctl, RDMAP_RV | op, inval, qn, msn, mo) + payload


def read_request(msn, sink_stag, sink_to, size, src_stag, src_to):
    # RFC 5040 §4.4: untagged, queue 1
    hdr = struct.pack('!IQIIQ', sink_stag, sink_to, size, src_stag, src_to)
    return untagged(OP_READ_REQ, 1, msn, 0, hdr)


def terminate(msn, layer_etype, code, segment):
    # RFC 5040 §4.8: Terminate Control (layer/etype, code, the M D R
    # bits: D), then for D the length of the segment that failed and its
    # DDP header (a tagged one here)
    hdr = struct.pack('!BBH', layer_etype, code, 0x4000)
    body = hdr + struct.pack('!H', len(segment)) + segment[:14]
    return untagged(OP_TERMINATE, 2, msn, 0, body)


def seg(ssn, ddp):
    # RFC 5043 §5.2.2: the DDP-SSN, then the DDP segment
    return struct.pack('!H', ssn) + ddp


def ctl(ssn, fc, pd=b''):
    # RFC 5043 §5.2.3: the DDP-SSN, the function code, private data
    return struct.pack('!HH', ssn, fc) + pd


class Assoc:
    """Frames of one association; each direction numbers its TSNs."""

    def __init__(self):
        self.frames = []
        self.tsn = {'A': A_TSN0, 'B': B_TSN0}
        self.ident = 1
        self.payloads = []

    def send(self, side, chunks, bad_crc=False, vtag=None):
        # each end sends with the tag its peer chose (RFC 4960 §8.5)
        if side == 'A':
            tag = B_TAG if vtag is None else vtag
            pkt = sctp_packet(A_SCTP, B_SCTP, tag, chunks, bad_crc)
            frame = udp_ip_eth(A_UDP, B_UDP, pkt, self.ident)
        else:
            tag = A_TAG if vtag is None else vtag
            pkt = sctp_packet(B_SCTP, A_SCTP, tag, chunks, bad_crc)
            frame = udp_ip_eth(B_UDP, A_UDP, pkt, self.ident)
        self.ident += 1
        self.frames.append(frame)

    def data(self, side, ppid, payload, flags=FLAG_U | FLAG_B | FLAG_E):
        tsn = self.tsn[side]
        self.tsn[side] = (tsn + 1) & 0xffffffff
        self.payloads.append((ppid, payload))
        return data_chunk(tsn, 0, ppid, payload, flags)

    def seg(self, side, ssn, ddp, ppid=PPID_SEG, flags=FLAG_U | FLAG_B | FLAG_E):
        return self.data(side, ppid, seg(ssn, ddp), flags)

    def ctl(self, side, ssn, fc, pd=b''):
        return self.data(side, PPID_CTL, ctl(ssn, fc, pd))

    def acked(self, side):
        # the cumulative TSN ack for everything the other side sent
        other = 'B' if side == 'A' else 'A'
        return sack_chunk(self.tsn[other] - 1)


# RFC 6581 §9: A and B in the IRD half, C and D in the ORD half
WORD_A, WORD_B, WORD_C, WORD_D = 0x80000000, 0x40000000, 0x8000, 0x4000


def ird_ord(ird, ord_, flags):
    return struct.pack('!I', flags | ird << 16 | ord_)


def session(flaw=None):
    a = Assoc()
    adapt = param(PARAM_ADAPT, struct.pack('!I', ADAPT_DDP))
    cookie = b'uiwarp-test-cookie-0123'
    # INIT goes with a Verification Tag of 0 (RFC 4960 §8.5.1)
    a.send('A', [init_chunk(INIT, A_TAG, A_TSN0, [adapt])], vtag=0)
    ack_params = [param(PARAM_COOKIE, cookie)]
    if flaw != 'noadapt':
        ack_params.append(adapt)
    a.send('B', [init_chunk(INIT_ACK, B_TAG, B_TSN0, ack_params)])
    a.send('A', [chunk(COOKIE_ECHO, 0, cookie)])
    a.send('B', [chunk(COOKIE_ACK, 0, b'')])

    # Session 1 on stream 0: RFC 6581 §7 Enhanced Initiate and Accept,
    # the IRD/ORD word first in the private data (§9)
    a.send('A', [a.ctl('A', 0, FC_EINIT, ird_ord(16, 8, WORD_A | WORD_D) + b'uiwarp-init')])
    a.send('B', [a.acked('B'), a.ctl('B', 0, FC_EACCEPT, ird_ord(8, 16, WORD_B))])
    w1 = tagged(OP_WRITE, False, 0x1234, 0x1000, bytes(range(32)))
    w2 = tagged(OP_WRITE, True, 0x1234, 0x1020, bytes(range(16)))
    a.send('A', [a.acked('A'), a.seg('A', 1, w1), a.seg('A', 2, w2)], bad_crc=flaw == 'crc')
    a.send('A', [a.seg('A', 3, untagged(OP_SEND, 0, 1, 0, b'hello'))])
    unordered = FLAG_B | FLAG_E if flaw == 'ordered' else FLAG_U | FLAG_B | FLAG_E
    send_inv = untagged(OP_SEND_INV, 0, 2, 0, b'inv', inval=0xabcd0001)
    a.send('A', [a.seg('A', 4, send_inv, flags=unordered)])
    a.send('A', [a.seg('A', 5, untagged(OP_SEND_SE, 0, 3, 0, b'se'))])
    a.send('A', [a.seg('A', 6, untagged(OP_SEND_SE_INV, 0, 4, 0, b'', inval=0xabcd0002))])
    a.send('A', [a.seg('A', 7, read_request(1, 0x5678, 0x2000, 64, 0x1234, 0x1000))])
    resp = tagged(OP_READ_RESP, True, 0x5678, 0x2000, bytes(64))
    a.send('B', [a.acked('B'), a.seg('B', 1, resp)])
    a.send('B', [a.seg('B', 2, untagged(OP_SEND, 0, 1, 0, b'from B'),
                       ppid=18 if flaw == 'ppid' else PPID_SEG)])
    # RFC 5041 §7.2 and RFC 5040 §4.8: layer DDP (1), tagged buffer
    # error (1), Invalid STag (0), for the first segment of the Write
    gap = 1 if flaw == 'ssngap' else 0
    a.send('B', [a.seg('B', 3 + gap, terminate(1, 0x11, 0x00, w1))])
    a.send('B', [a.ctl('B', 4 + gap, FC_TERM)])

    # Session 2 on the same stream: DDP-SSNs start at 0 again (§6.1)
    a.send('A', [a.acked('A'), a.ctl('A', 0, FC_INIT, b'retry')])
    a.send('B', [a.acked('B'), a.ctl('B', 0, FC_REJECT, b'busy')])
    a.send('A', [a.acked('A')])
    a.send('A', [chunk(SHUTDOWN, 0, struct.pack('!I', (a.tsn['B'] - 1) & 0xffffffff))])
    a.send('B', [chunk(SHUTDOWN_ACK, 0, b'')])
    a.send('A', [chunk(SHUTDOWN_COMPLETE, 0, b'')])
    return a


SESSION_OUT = """port %d
udp %d
mulpdu 1400
messages write=1 read_req=1 read_resp=1 send=2 send_inv=1 send_se=1 send_se_inv=1 terminate=1
multi 1
ok
""" % (B_SCTP, B_UDP)


def malformed():
    chunks = [
        (PPID_SEG, b'\x00'),
        (PPID_CTL, b'\x00\x01\x00'),
        (PPID_CTL, ctl(1, 9, b'x')),
        (PPID_CTL, ctl(9, FC_TERM, b'oops')),
        (PPID_CTL, ctl(0, FC_INIT, bytes(513))),
        (PPID_SEG, seg(1, tagged(OP_WRITE, True, 0x1234, 0)[:10])),
        (PPID_SEG, seg(1, untagged(OP_SEND, 0, 1, 0)[:16])),
        (PPID_CTL, ctl(0, FC_EINIT, b'\x80\x10')),
    ]
    frames = []
    for i, (ppid, payload) in enumerate(chunks):
        pkt = sctp_packet(A_SCTP, B_SCTP, B_TAG, [data_chunk(A_TSN0 + i, 0, ppid, payload)])
        frames.append(udp_ip_eth(A_UDP, B_UDP, pkt, i + 1))
    return frames


def truncated():
    frames = []
    for ppid, payload in session().payloads:
        for n in range(1, len(payload)):
            pkt = sctp_packet(A_SCTP, B_SCTP, B_TAG,
                              [data_chunk(A_TSN0 + len(frames), 0, ppid, payload[:n])])
            frames.append(udp_ip_eth(A_UDP, B_UDP, pkt, len(frames) + 1))
    return frames


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: sctp_pcap.py DIR')
    out = sys.argv[1]
    check_crc32c()
    os.makedirs(out, exist_ok=True)
    write_pcap(os.path.join(out, 'session.pcap'), session().frames)
    with open(os.path.join(out, 'session.out'), 'w') as f:
        f.write(SESSION_OUT)
    write_pcap(os.path.join(out, 'malformed.pcap'), malformed())
    write_pcap(os.path.join(out, 'truncated.pcap'), truncated())
    for flaw in ('crc', 'ordered', 'ppid', 'noadapt', 'ssngap'):
        write_pcap(os.path.join(out, 'bad-%s.pcap' % flaw), session(flaw).frames)


if __name__ == '__main__':
    main()
