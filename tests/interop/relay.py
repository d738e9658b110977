#!/usr/bin/env python3
"""A TCP relay from a host port to a forwarded guest port that connects
each accepted connection only once something listens on the guest port.

    relay.py --run DIR --listen R --to P [--life SECONDS]

listens on 127.0.0.1:R and prints "relay listening on 127.0.0.1:R" when it
does; for each connection accepted there it waits (up to 30 s) until the
guest of run directory DIR listens on TCP port P, then connects to
127.0.0.1:P (QEMU's hostfwd to the guest's port P) and copies both ways,
passing on a half close (FIN) as a half close and a reset as a reset.  It
ends after SECONDS (default 600), or on SIGTERM / SIGINT.

Why: a client that connects twice in a row to a server that listens anew
in between (perftest -R: its rdma_cm control connection, then the data
connection on the same port, which the server listens for only after
their exchange over the first) meets a refused connection when the server
is much slower than the client, as a server in an emulated guest is
against a client on the host.  Through QEMU's user network the refusal
reaches the client as a reset after its connection was accepted (QEMU
accepts on the host side first), and perftest 4.5's retry after that uses
the rdma_cm ids it has just destroyed.  The relay holds each connection
until the guest listens; the stream itself passes unchanged.
"""

import argparse
import os
import signal
import socket
import struct
import sys
import threading
import time

# No __pycache__ in the source tree (as guest.sh asks of guest.py).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest import Guest, GuestError  # noqa: E402

WAIT_LISTEN = 30
# One guest command at a time from this process (Guest is not shared
# between threads otherwise).
GUEST_LOCK = threading.Lock()


def reset(sock):
    """Closes sock with a reset (SO_LINGER 0), as the other side did."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
    except OSError:
        pass
    sock.close()


def pump(src, dst, done):
    """Copies src to dst until src ends: a FIN becomes shutdown(SHUT_WR)
    of dst, a reset a reset of dst."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                dst.shutdown(socket.SHUT_WR)
                break
            dst.sendall(data)
    except OSError:
        # Either end reset or failed: pass it on as a reset of both.
        done.set()
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, guest, port):
    try:
        with GUEST_LOCK:
            guest.wait_listen(port, WAIT_LISTEN)
        up = socket.create_connection(('127.0.0.1', port), timeout=10)
        up.settimeout(None)
    except (GuestError, OSError) as e:
        print('relay: no connection to guest port %d: %s' % (port, e),
              file=sys.stderr)
        reset(conn)
        return
    failed = threading.Event()
    t = threading.Thread(target=pump, args=(up, conn, failed), daemon=True)
    t.start()
    pump(conn, up, failed)
    t.join()
    for s in (conn, up):
        if failed.is_set():
            reset(s)
        else:
            s.close()


def main(argv=None):
    ap = argparse.ArgumentParser(prog='relay.py')
    ap.add_argument('--run', required=True, help="the guest's run directory")
    ap.add_argument('--listen', type=int, required=True)
    ap.add_argument('--to', type=int, required=True)
    ap.add_argument('--life', type=int, default=600)
    a = ap.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    guest = Guest.attach(a.run)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(('127.0.0.1', a.listen))
    lsock.listen(8)
    print('relay listening on 127.0.0.1:%d' % a.listen, flush=True)
    end = time.monotonic() + a.life
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return 0
            lsock.settimeout(left)
            try:
                conn, _ = lsock.accept()
            except socket.timeout:
                return 0
            conn.settimeout(None)
            threading.Thread(target=serve, args=(conn, guest, a.to),
                             daemon=True).start()
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
