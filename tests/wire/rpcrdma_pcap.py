#!/usr/bin/env python3
"""Writes a pcap of one iWARP connection over TCP carrying RPC-over-RDMA
(RFC 8166), built octet by octet, for tests/wire/test_tshark_rpcordma.sh.

    rpcrdma_pcap.py OUT.pcap SCRIPT

The connection runs between A (127.0.0.1:40010, the Requester) and B
(127.0.0.1:20049, the Responder): the TCP handshake, an MPA revision 2
Request and Reply (RFC 5044 §7.1, RFC 6581 §5: CRC, no markers), then
one FPDU per TCP segment (RFC 5044 §4: ULPDU_Length, the DDP segment,
pad, CRC32c), each acknowledged.  SCRIPT says what goes in them, one
line each (blank lines and # comments ignored):

    req-pd HEX            private data of the MPA Request (raw: the RFC
    rep-pd HEX            6581 IRD/ORD word first) and of the Reply
    A>B send HDR RPC      an RDMAP Send (untagged, queue 0, the next MSN
    B>A send HDR RPC      of its direction) whose payload is HDR, the
                          RPC-over-RDMA header in hex, then RPC:
                            -                      nothing
                            call:PROG:VERS:PROC:ARGS   an RPC call
                            reply:RESULTS          an accepted, successful
                                                   RPC reply
                          (ARGS, RESULTS: hex or "-"), with the XID of
                          HDR (RFC 8166 §4.2.1: the same in both)
    A>B write STAG TO HEX an RDMA Write (tagged, RFC 5040 §4.3)
    B>A write STAG TO HEX

and prints, one line per Send, "FRAME HDR" (the frame number that
carries it).  The CRC32c is sctp_pcap.py's, checked there against RFC
3720 §B.4 before anything is written.

    rpcrdma_pcap.py --rpc-tcp OUT.pcap CALL REPLY

writes the same two ends exchanging two RPC messages (hex) over plain
TCP to port 2049, each one record (RFC 5531 §11: record marking), A's
call then B's reply: the RPC messages without RPC-over-RDMA.
"""

import struct
import sys

from sctp_pcap import (LO, OP_SEND, OP_WRITE, check_crc32c, crc32c_wire,
                       inet_sum, tagged, untagged, write_pcap)

A_PORT, B_PORT = 40010, 20049
KEYREQ = b'MPA ID Req Frame'
KEYREP = b'MPA ID Rep Frame'
MPA_CRC = 0x40                       # RFC 5044 §7.1.1: C, no M, no R
MPA_REV = 2


def tcp_ip_eth(sport, dport, seq, ack, flags, payload, ident):
    """An Ethernet (zero addresses, as Linux's lo is captured) IPv4 TCP
    frame with correct checksums."""
    hdr = struct.pack('!HHIIBBHHH', sport, dport, seq, ack, 5 << 4, flags,
                      65535, 0, 0)
    pseudo = LO + LO + struct.pack('!BBH', 0, 6, len(hdr) + len(payload))
    csum = (~inet_sum(pseudo + hdr + payload)) & 0xffff
    tcp = hdr[:16] + struct.pack('!H', csum) + hdr[18:] + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), ident & 0xffff,
                     0x4000, 64, 6, 0, LO, LO)
    ip = ip[:10] + struct.pack('!H', (~inet_sum(ip)) & 0xffff) + ip[12:]
    return bytes(12) + b'\x08\x00' + ip + tcp


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


class Conn:
    def __init__(self):
        self.frames = []
        self.seq = {'A': 1000, 'B': 5000}
        self.msn = {'A': 1, 'B': 1}
        self.port = {'A': A_PORT, 'B': B_PORT}

    def seg(self, side, flags, payload=b''):
        other = 'B' if side == 'A' else 'A'
        self.frames.append(tcp_ip_eth(self.port[side], self.port[other],
                                      self.seq[side], self.seq[other],
                                      flags, payload, len(self.frames)))
        self.seq[side] = (self.seq[side] + len(payload) +
                          (1 if flags & (SYN | FIN) else 0)) & 0xffffffff

    def handshake(self):
        self.frames.append(tcp_ip_eth(self.port['A'], self.port['B'],
                                      self.seq['A'], 0, SYN, b'', 0))
        self.seq['A'] += 1
        self.seg('B', SYN | ACK)
        self.seg('A', ACK)

    def data(self, side, payload):
        # every data segment acknowledged at once, as a quiet receiver
        # would: no segment waits for a window
        self.seg(side, PSH | ACK, payload)
        self.seg('B' if side == 'A' else 'A', ACK)

    def mpa_frame(self, side, key, pd):
        # RFC 5044 §7.1.1: key, flags, revision, PD_Length, private data
        self.data(side, key + struct.pack('!BBH', MPA_CRC, MPA_REV, len(pd))
                  + pd)

    def fpdu(self, side, ulpdu):
        # RFC 5044 §4.1: ULPDU_Length, ULPDU, pad to 4, CRC32c
        body = struct.pack('!H', len(ulpdu)) + ulpdu
        body += bytes(-len(body) % 4)
        self.data(side, body + crc32c_wire(body))

    def send(self, side, payload):
        self.fpdu(side, untagged(OP_SEND, 0, self.msn[side], 0, payload))
        self.msn[side] += 1
        return len(self.frames) - 1      # 1-based number of the data frame

    def write(self, side, stag, to, payload):
        self.fpdu(side, tagged(OP_WRITE, True, stag, to, payload))


def unhex(s):
    return b'' if s == '-' else bytes.fromhex(s)


def rpc_message(xid, spec):
    # RFC 5531 §9: rpc_msg; AUTH_NONE credentials and verifier
    if spec == '-':
        return b''
    kind, _, rest = spec.partition(':')
    if kind == 'call':
        prog, vers, proc, args = rest.split(':')
        return struct.pack('!IIIIIIIIII', xid, 0, 2, int(prog, 0),
                           int(vers, 0), int(proc, 0), 0, 0, 0, 0) + unhex(args)
    if kind == 'reply':
        # MSG_ACCEPTED, verifier AUTH_NONE, SUCCESS
        return struct.pack('!IIIIII', xid, 1, 0, 0, 0, 0) + unhex(rest)
    sys.exit('rpcrdma_pcap.py: unknown RPC part %r' % spec)


def rpc_tcp(out, call, reply):
    c = Conn()
    c.port['B'] = 2049
    c.handshake()
    for side, msg in (('A', call), ('B', reply)):
        # RFC 5531 §11: the last fragment's mark has the top bit set
        c.data(side, struct.pack('!I', 0x80000000 | len(msg)) + msg)
    write_pcap(out, c.frames)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == '--rpc-tcp':
        rpc_tcp(sys.argv[2], bytes.fromhex(sys.argv[3]),
                bytes.fromhex(sys.argv[4]))
        return
    if len(sys.argv) != 3:
        sys.exit('usage: rpcrdma_pcap.py OUT.pcap SCRIPT')
    check_crc32c()
    pd = {'req-pd': b'', 'rep-pd': b''}
    lines = []
    with open(sys.argv[2]) as f:
        for line in f:
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            if words[0] in pd:
                pd[words[0]] = unhex(words[1])
            else:
                lines.append(words)
    c = Conn()
    c.handshake()
    c.mpa_frame('A', KEYREQ, pd['req-pd'])
    c.mpa_frame('B', KEYREP, pd['rep-pd'])
    for words in lines:
        side = words[0][0]
        if words[0] not in ('A>B', 'B>A'):
            sys.exit('rpcrdma_pcap.py: bad direction %r' % words[0])
        if words[1] == 'send':
            hdr = unhex(words[2])
            xid = struct.unpack('!I', hdr[:4])[0] if len(hdr) >= 4 else 0
            n = c.send(side, hdr + rpc_message(xid, words[3]))
            print(n, words[2])
        elif words[1] == 'write':
            c.write(side, int(words[2], 0), int(words[3], 0), unhex(words[4]))
        else:
            sys.exit('rpcrdma_pcap.py: unknown line %r' % ' '.join(words))
    c.seg('A', FIN | ACK)
    c.seg('B', FIN | ACK)
    c.seg('A', ACK)
    write_pcap(sys.argv[1], c.frames)


if __name__ == '__main__':
    main()
