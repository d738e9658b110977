#!/usr/bin/env python3
"""Raw MPA connection setup against siw, from the host, byte for byte.

    mpa_probe.py request --port P --send HEX --expect HEX
        Connects to 127.0.0.1:P (forwarded to a listener in the guest),
        sends the 16-octet key "MPA ID Req Frame" followed by HEX, and
        checks that the answer is "MPA ID Rep Frame" followed by exactly
        the expected octets.

    mpa_probe.py accept --run DIR --port P --guest-cmd CMD --expect HEX
                        [--reply HEX [--fpdu HEX --fpdu-len N]]
        Listens on 127.0.0.1:P, starts CMD in the guest of run directory
        DIR (a client that dials 10.0.2.100:G, forwarded here), and checks
        that the client's Request is "MPA ID Req Frame" followed by exactly
        the expected octets.  With --reply it answers with "MPA ID Rep
        Frame" + HEX and then checks that the first N octets of the stream
        that follow start with the --fpdu octets (and that the last 4 of
        them, the CRC, are zero unless --crc is given).

HEX may contain spaces.  Exit status 0 when everything matched, 1 when the
peer answered something else (both byte strings are printed), 255 when the
harness failed (no connection, timeout).
"""

import argparse
import os
import socket
import sys
import time

sys.dont_write_bytecode = True         # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest import Guest, GuestError  # noqa: E402

KEY_REQ = b'MPA ID Req Frame'
KEY_REP = b'MPA ID Rep Frame'


class Mismatch(Exception):
    pass


def unhex(s):
    return bytes.fromhex(''.join(s.split()))


def spaced(b):
    return ' '.join('%02x' % x for x in b)


def recv_exact(sock, n, deadline):
    buf = b''
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError('got %d of %d octets (%s) before the timeout'
                               % (len(buf), n, spaced(buf)))
        sock.settimeout(left)
        try:
            data = sock.recv(n - len(buf))
        except socket.timeout:
            continue
        if not data:
            raise ConnectionError('peer closed after %d of %d octets (%s)'
                                  % (len(buf), n, spaced(buf)))
        buf += data
    return buf


def expect(what, got, want):
    if got != want:
        raise Mismatch('%s differs\n  expected %s\n  received %s'
                       % (what, spaced(want), spaced(got)))


def request(port, send, want, timeout=60):
    """Sends KEY_REQ + send to 127.0.0.1:port; checks KEY_REP + want."""
    deadline = time.monotonic() + timeout
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(KEY_REQ + send)
        got = recv_exact(s, len(KEY_REP) + len(want), deadline)
    expect('MPA Reply', got, KEY_REP + want)
    return got


def accept(guest, port, guest_cmd, want, reply=None, fpdu=None, fpdu_len=0,
           crc=False, timeout=90):
    """Listens on 127.0.0.1:port, has the guest run guest_cmd (in the
    background, job 'mpa-probe'), checks the client's Request, optionally
    answers and checks the first FPDU."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(('127.0.0.1', port))
        ls.listen(1)
        guest.bg_start('mpa-probe', guest_cmd)
        try:
            ls.settimeout(max(1, deadline - time.monotonic()))
            try:
                s, _ = ls.accept()
            except socket.timeout:
                raise TimeoutError('the guest client did not connect within '
                                   '%ds; its output:\n%s'
                                   % (timeout, guest.bg_output('mpa-probe')))
            with s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                got = recv_exact(s, len(KEY_REQ) + len(want), deadline)
                expect('MPA Request', got, KEY_REQ + want)
                if reply is None:
                    return got, None
                s.sendall(KEY_REP + reply)
                first = None
                if fpdu_len:
                    first = recv_exact(s, fpdu_len, deadline)
                    expect('first FPDU (start)', first[:len(fpdu)], fpdu)
                    if not crc:
                        expect('first FPDU (CRC field)', first[-4:],
                               b'\0\0\0\0')
                return got, first
        finally:
            # The client fails once we hang up; make sure it is gone.
            rc, _ = guest.bg_wait('mpa-probe', 20)
            if rc is None:
                guest.bg_kill('mpa-probe', 'KILL')
                guest.bg_wait('mpa-probe', 10)


def main(argv=None):
    ap = argparse.ArgumentParser(prog='mpa_probe.py')
    sub = ap.add_subparsers(dest='op', required=True)
    p = sub.add_parser('request')
    p.add_argument('--port', type=int, required=True)
    p.add_argument('--send', required=True)
    p.add_argument('--expect', required=True)
    p.add_argument('--timeout', type=int, default=60)
    p = sub.add_parser('accept')
    p.add_argument('--run', required=True)
    p.add_argument('--port', type=int, required=True)
    p.add_argument('--guest-cmd', required=True)
    p.add_argument('--expect', required=True)
    p.add_argument('--reply')
    p.add_argument('--fpdu', default='')
    p.add_argument('--fpdu-len', type=int, default=0)
    p.add_argument('--crc', action='store_true')
    p.add_argument('--timeout', type=int, default=90)
    a = ap.parse_args(argv)
    try:
        if a.op == 'request':
            got = request(a.port, unhex(a.send), unhex(a.expect), a.timeout)
            print('reply: %s' % spaced(got[len(KEY_REP):]))
        else:
            g = Guest.attach(a.run)
            got, first = accept(g, a.port, a.guest_cmd, unhex(a.expect),
                                unhex(a.reply) if a.reply else None,
                                unhex(a.fpdu), a.fpdu_len, a.crc, a.timeout)
            print('request: %s' % spaced(got[len(KEY_REQ):]))
            if first is not None:
                print('first FPDU: %s' % spaced(first))
    except Mismatch as e:
        print('mpa_probe: %s' % e, file=sys.stderr)
        return 1
    except (OSError, TimeoutError, GuestError) as e:
        print('mpa_probe: %s' % e, file=sys.stderr)
        return 255
    return 0


if __name__ == '__main__':
    sys.exit(main())
