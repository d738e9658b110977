#!/usr/bin/env python3
"""One ONC RPC call over TCP, for the interop tests: the host has no
rpcinfo or showmount, and the services in the guest are reached through
forwarded ports, without rpcbind.

    rpc_probe.py [--host H] PORT PROG VERS null
        NULL (procedure 0): exits 0 when it is answered SUCCESS
    rpc_probe.py [--host H] PORT 100005 3 exports
        MOUNTPROC3_EXPORT (RFC 1813 §5.2.5): prints each exported
        directory and its groups, one export a line

The call carries AUTH_NONE (RFC 5531 §9); the stream is record-marked
(RFC 5531 §11).  Any reply other than MSG_ACCEPTED / SUCCESS is an error,
printed with its status, and the exit status is 1; no answer within
--timeout seconds is an error too.
"""

import argparse
import os
import socket
import struct
import sys

CALL, REPLY = 0, 1
MSG_ACCEPTED = 0
ACCEPT_STAT = ('SUCCESS', 'PROG_UNAVAIL', 'PROG_MISMATCH', 'PROC_UNAVAIL',
               'GARBAGE_ARGS', 'SYSTEM_ERR')
MOUNTPROC3_EXPORT = 5


class Xdr:
    """A reader of XDR (RFC 4506) items from a byte string."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def u32(self):
        if self.pos + 4 > len(self.data):
            raise ValueError('reply truncated at octet %d' % self.pos)
        v, = struct.unpack_from('>I', self.data, self.pos)
        self.pos += 4
        return v

    def opaque(self):
        n = self.u32()
        if self.pos + n > len(self.data):
            raise ValueError('opaque of %d octets runs past the reply' % n)
        v = self.data[self.pos:self.pos + n]
        self.pos += (n + 3) & ~3
        return v


def recv_record(sock):
    """One whole record: its fragments up to the last (RFC 5531 §11)."""
    out = b''
    while True:
        hdr = recv_exact(sock, 4)
        mark, = struct.unpack('>I', hdr)
        out += recv_exact(sock, mark & 0x7fffffff)
        if mark & 0x80000000:
            return out


def recv_exact(sock, n):
    buf = b''
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ValueError('connection closed after %d of %d octets'
                             % (len(buf), n))
        buf += chunk
    return buf


def call(host, port, prog, vers, proc, timeout):
    """The results of an accepted, successful call, as an Xdr reader."""
    xid = struct.unpack('>I', os.urandom(4))[0]
    # xid, CALL, rpcvers 2, prog, vers, proc, cred AUTH_NONE, verf AUTH_NONE
    msg = struct.pack('>IIIIIIIIII', xid, CALL, 2, prog, vers, proc,
                      0, 0, 0, 0)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack('>I', 0x80000000 | len(msg)) + msg)
        x = Xdr(recv_record(s))
    if x.u32() != xid:
        raise ValueError('reply to another xid')
    if x.u32() != REPLY:
        raise ValueError('not a REPLY')
    stat = x.u32()
    if stat != MSG_ACCEPTED:
        raise ValueError('MSG_DENIED (reject_stat %d)' % x.u32())
    x.u32()         # verifier flavour
    x.opaque()      # verifier body
    acc = x.u32()
    if acc != 0:
        name = ACCEPT_STAT[acc] if acc < len(ACCEPT_STAT) else str(acc)
        raise ValueError('accept_stat %s' % name)
    return x


def exports(x):
    """exports: a linked list of (ex_dir, groups) (RFC 1813 §5.2.5)."""
    out = []
    while x.u32():
        d = x.opaque().decode('utf-8', 'replace')
        groups = []
        while x.u32():
            groups.append(x.opaque().decode('utf-8', 'replace'))
        out.append((d, groups))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--timeout', type=float, default=20)
    p.add_argument('port', type=int)
    p.add_argument('prog', type=int)
    p.add_argument('vers', type=int)
    p.add_argument('what', choices=('null', 'exports'))
    a = p.parse_args()
    proc = 0 if a.what == 'null' else MOUNTPROC3_EXPORT
    try:
        x = call(a.host, a.port, a.prog, a.vers, proc, a.timeout)
        if a.what == 'exports':
            for d, groups in exports(x):
                print(d, ' '.join(groups))
    except (OSError, ValueError) as e:
        print('rpc_probe: %s:%d program %d version %d procedure %d: %s'
              % (a.host, a.port, a.prog, a.vers, proc, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
