#!/usr/bin/env python3
"""The siw guest of the interop tests: boot it, run commands in it, stop it.

The guest (built by build-guest.sh) is a Debian kernel with siw and
rdma-core's tools in a busybox initramfs.  It runs under QEMU with user
networking: the guest is 10.0.2.15, host ports 127.0.0.1:H are forwarded to
guest ports 10.0.2.15:G (hostfwd), and guest connections to 10.0.2.100:G reach
host listeners on 127.0.0.1:H (guestfwd, through socat).

Commands travel on the guest's second serial port (see guest-init.sh for the
line protocol).  Everything about one running guest lives in its run
directory (config.json, console.log, qemu.log, the control socket, exit.json),
so a shell test can call this file as a command several times:

    guest.py start --run DIR --cache CACHE [--hostfwd H[:G]]... \\
                   [--guestfwd G[:H]]... [--udpfwd H[:G]]... [--open-net] \\
                   [--owner PID] [--timeout S]
    guest.py run --run DIR [-t SECONDS] CMD...   (prints output, exits with
                                                  the command's status)
    guest.py bg-start --run DIR NAME CMD...      guest.py bg-wait --run DIR NAME
    guest.py bg-kill --run DIR NAME [SIGNAL]     guest.py bg-out --run DIR NAME
    guest.py wait-listen --run DIR PORT          guest.py restart --run DIR
    guest.py stop --run DIR     guest.py status --run DIR
    guest.py console --run DIR [-n LINES]       guest.py free-ports N

and a Python test can use the class directly:

    g = Guest(run_dir, cache, hostfwd=[(p, p)], guestfwd=[(q, q)])
    g.start()                  # boots and waits until siw0 is up
    status, out = g.run('ibv_devices', timeout=30)
    g.stop()

QEMU runs under a small supervisor process that stops it when the owner
process (the test) exits, when asked to, or after a maximum lifetime, so that
no QEMU outlives its test.  Exit status 255 from the command-line tool means
the harness itself failed (the reason is on stderr).
"""

import argparse
import base64
import ctypes
import fcntl
import hashlib
import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST_ADDR = '10.0.2.15'
HOST_ADDR_IN_GUEST = '10.0.2.100'
DEFAULT_CACHE = 'build/interop-cache'
# Under TCG the kernel needs 6 s of guest time, 9-19 s of wall clock; allow
# for a loaded machine.
DEFAULT_READY_TIMEOUT = 240
# How long past a command's own timeout the host waits for its reply.
REPLY_GRACE = 30
DEFAULT_MAX_LIFE = 3600


class GuestError(Exception):
    """The guest could not be booted or did not answer."""


# --------------------------------------------------------------- helpers
def detect_accel():
    """Returns (accel, reason): 'kvm' only where KVM really works."""
    forced = os.environ.get('UIW_GUEST_ACCEL')
    if forced in ('kvm', 'tcg'):
        return forced, 'UIW_GUEST_ACCEL=' + forced
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return 'tcg', 'no usable /dev/kvm'
    # A PVM /dev/kvm (kvm_pvm) runs only PVM-aware guest kernels; an
    # ordinary kernel under it never boots.
    if os.path.exists('/sys/module/kvm_pvm'):
        return 'tcg', '/dev/kvm is PVM (kvm_pvm loaded)'
    try:
        with open('/proc/cpuinfo') as f:
            flags = set()
            for line in f:
                if line.startswith('flags'):
                    flags.update(line.split(':', 1)[1].split())
                    break
    except OSError:
        flags = set()
    if not flags & {'vmx', 'svm'}:
        return 'tcg', 'the CPU has no vmx/svm'
    return 'kvm', 'hardware virtualisation available'


def free_ports(n):
    """n distinct ports that are free on 127.0.0.1 right now, for TCP and
    for UDP (a port may be forwarded either way)."""
    socks = []
    ports = []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(('127.0.0.1', 0))
            socks.append(s)
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                u.bind(('127.0.0.1', s.getsockname()[1]))
            except OSError:
                u.close()
                continue
            socks.append(u)
            ports.append(s.getsockname()[1])
        return ports
    finally:
        for s in socks:
            s.close()


def pid_alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        return state not in ('Z', 'X')
    except (OSError, IndexError):
        return False


def wait_pid_gone(pid, timeout):
    """Waits until pid has exited; True if it did within timeout."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return not pid_alive(pid)
    try:
        while pid_alive(pid):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            # Readable when the process exits; a zombie that its parent
            # has yet to reap also counts as gone (pid_alive).
            select.select([fd], [], [], min(left, 0.5))
        return True
    finally:
        os.close(fd)


def tail(path, lines=40):
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode('utf-8', 'replace')
    except OSError:
        return '(no %s)' % path
    return '\n'.join(data.splitlines()[-lines:])


def parse_fwd(spec):
    """P, (A, B), 'P' or 'A:B' -> (A, B)."""
    if isinstance(spec, (tuple, list)):
        parts = list(spec)
    else:
        parts = str(spec).split(':')
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise ValueError('bad port mapping %r' % spec)
    a, b = int(parts[0]), int(parts[1])
    for p in (a, b):
        if not 0 < p < 65536:
            raise ValueError('bad port %d' % p)
    return a, b


CRASH_MARKERS = ('Kernel panic', 'kernel BUG at', 'BUG: ', 'Oops: ',
                 'general protection fault')


# ----------------------------------------------------------------- guest
class Guest:
    """One siw guest, described by its run directory."""

    def __init__(self, run_dir=None, cache=None, hostfwd=(), guestfwd=(),
                 accel=None, mem='1G', smp=1, append='',
                 max_life=DEFAULT_MAX_LIFE, owner=None, udpfwd=(),
                 open_net=False):
        if run_dir is None:
            run_dir = tempfile.mkdtemp(prefix='uiw-guest.')
        self.run_dir = os.path.abspath(run_dir)
        cache = os.path.abspath(cache or DEFAULT_CACHE)
        accel_reason = None
        if accel is None:
            accel, accel_reason = detect_accel()
        self.cfg = {
            'kernel': os.path.join(cache, 'guest', 'vmlinuz'),
            'initrd': os.path.join(cache, 'guest', 'initrd.gz'),
            'info': os.path.join(cache, 'guest', 'info'),
            # (host port, guest port): 127.0.0.1:H -> 10.0.2.15:G
            'hostfwd': [list(parse_fwd(x)) for x in hostfwd],
            # (guest port, host port): 10.0.2.100:G -> 127.0.0.1:H
            'guestfwd': [list(parse_fwd(x)) for x in guestfwd],
            # (host port, guest port): UDP 127.0.0.1:H -> 10.0.2.15:G
            'udpfwd': [list(parse_fwd(x)) for x in udpfwd],
            # restrict=off: the guest's own UDP (its answers to udpfwd
            # traffic included) leaves QEMU, towards 10.0.2.2 = the
            # host's loopback; with restrict=on it is dropped.
            'open_net': bool(open_net),
            'accel': accel,
            'accel_reason': accel_reason or 'chosen by the caller',
            'mem': mem,
            'smp': int(smp),
            'append': append,
            'max_life': int(max_life),
            'owner': int(owner) if owner else os.getpid(),
        }
        self._seq = 0

    # ------------------------------------------------------------ paths
    def path(self, name):
        return os.path.join(self.run_dir, name)

    @property
    def ctl_sock(self):
        return self.cfg.get('ctl_sock') or self.path('ctl.sock')

    @classmethod
    def attach(cls, run_dir):
        """The guest whose run directory is run_dir (started elsewhere)."""
        g = cls.__new__(cls)
        g.run_dir = os.path.abspath(run_dir)
        try:
            with open(g.path('config.json')) as f:
                g.cfg = json.load(f)
        except OSError as e:
            raise GuestError('no guest in %s: %s' % (run_dir, e))
        g._seq = 0
        return g

    def host_port(self, guest_port):
        """The host port forwarded to guest_port (hostfwd)."""
        for h, gp in self.cfg['hostfwd']:
            if gp == guest_port:
                return h
        raise KeyError(guest_port)

    # --------------------------------------------------------- lifecycle
    def qemu_argv(self):
        c = self.cfg
        net = ['user', 'id=n0',
               'restrict=off' if c.get('open_net') else 'restrict=on']
        for h, gp in c['hostfwd']:
            net.append('hostfwd=tcp:127.0.0.1:%d-%s:%d' % (h, GUEST_ADDR, gp))
        for h, gp in c.get('udpfwd', []):
            net.append('hostfwd=udp:127.0.0.1:%d-%s:%d' % (h, GUEST_ADDR, gp))
        for gp, h in c['guestfwd']:
            net.append('guestfwd=tcp:%s:%d-cmd:socat STDIO TCP4:127.0.0.1:%d'
                       % (HOST_ADDR_IN_GUEST, gp, h))
        kvm = c['accel'] == 'kvm'
        append = 'console=ttyS0 panic=-1 oops=panic ' + c['append']
        return ['qemu-system-x86_64', '-name', 'uiw-siw-guest',
                '-nodefaults', '-no-user-config', '-display', 'none',
                '-no-reboot', '-accel', c['accel'],
                '-cpu', 'host' if kvm else 'max',
                '-m', c['mem'], '-smp', str(c['smp']),
                '-kernel', c['kernel'], '-initrd', c['initrd'],
                '-append', append.strip(),
                '-serial', 'file:' + self.path('console.log'),
                '-serial', 'unix:%s,server=on,wait=off' % self.ctl_sock,
                '-netdev', ','.join(net),
                '-device', 'virtio-net-pci,netdev=n0,romfile=']

    def start(self, ready_timeout=DEFAULT_READY_TIMEOUT):
        """Boots the guest and waits until siw0 is up."""
        for f in (self.cfg['kernel'], self.cfg['initrd']):
            if not os.path.isfile(f):
                raise GuestError('%s is missing: run tests/interop/'
                                 'build-guest.sh first' % f)
        os.makedirs(self.run_dir, exist_ok=True)
        if self.pid('supervisor.pid') and pid_alive(self.pid('supervisor.pid')):
            raise GuestError('a guest already runs in %s' % self.run_dir)
        if len(self.path('ctl.sock')) > 100:
            self.cfg['ctl_sock'] = os.path.join(
                tempfile.mkdtemp(prefix='uiwg.'), 'ctl.sock')
        else:
            self.cfg.pop('ctl_sock', None)
        for name in ('exit.json', 'console.log', 'qemu.log', 'qemu.pid',
                     'supervisor.pid', 'supervisor.log'):
            try:
                os.unlink(self.path(name))
            except FileNotFoundError:
                pass
        try:
            os.unlink(self.ctl_sock)
        except FileNotFoundError:
            pass
        with open(self.path('config.json.tmp'), 'w') as f:
            json.dump(self.cfg, f, indent=1)
        os.replace(self.path('config.json.tmp'), self.path('config.json'))
        log = open(self.path('supervisor.log'), 'ab')
        p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), '_supervise',
             self.run_dir],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True)
        log.close()
        self._supervisor = p    # reaped in stop() when we are its parent
        with open(self.path('supervisor.pid'), 'w') as f:
            f.write('%d\n' % p.pid)
        try:
            return self.wait_ready(ready_timeout)
        except BaseException:
            self.stop()
            raise

    def pid(self, name):
        try:
            with open(self.path(name)) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def exit_info(self):
        try:
            with open(self.path('exit.json')) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def alive(self):
        q = self.pid('qemu.pid')
        if q:
            return pid_alive(q)
        # Not started yet: alive while its supervisor is.
        return self.exit_info() is None and pid_alive(self.pid('supervisor.pid'))

    def console_tail(self, lines=40):
        return tail(self.path('console.log'), lines)

    def crashed(self):
        """The first kernel crash line on the console, or None."""
        try:
            with open(self.path('console.log'), 'rb') as f:
                text = f.read().decode('utf-8', 'replace')
        except OSError:
            return None
        for line in text.splitlines():
            if any(m in line for m in CRASH_MARKERS):
                return line.strip()
        return None

    def why_dead(self):
        if self.exit_info() is None:
            # QEMU just ended: give its supervisor a moment to say why.
            wait_pid_gone(self.pid('supervisor.pid'), 5)
        ex = self.exit_info() or {}
        lines = ['QEMU is not running (%s; status %s)'
                 % (ex.get('reason', 'exited'), ex.get('qemu_status', '?'))]
        crash = self.crashed()
        if crash:
            lines.append('guest kernel crash: ' + crash)
        q = tail(self.path('qemu.log'), 10).strip()
        if q:
            lines.append('qemu.log:\n' + q)
        lines.append('console (%s), last lines:\n%s'
                     % (self.path('console.log'), self.console_tail()))
        return '\n'.join(lines)

    def wait_ready(self, timeout=DEFAULT_READY_TIMEOUT):
        t0 = time.monotonic()
        deadline = t0 + timeout
        status = None
        while time.monotonic() < deadline:
            if not self.alive() and self.exit_info() is not None:
                raise GuestError('the guest died while booting: '
                                 + self.why_dead())
            left = deadline - time.monotonic()
            try:
                # Commands sent before the guest opens its port are lost:
                # ask again every few seconds.
                rc, out = self._call('cat /tmp/boot.status 2>/dev/null || '
                                     'echo booting', 10,
                                     reply_wait=min(4, max(left, 0.1)))
            except _NoReply:
                continue
            status = out.strip()
            if status == 'ok':
                self.boot_seconds = time.monotonic() - t0
                return self.boot_seconds
            if status.startswith('FAIL'):
                _, log = self._call('cat /tmp/boot.log', 10)
                raise GuestError('guest boot failed: %s\nboot.log:\n%s\n'
                                 'console, last lines:\n%s'
                                 % (status, log, self.console_tail()))
        raise GuestError('the guest was not ready after %ds (last status: %s,'
                         ' accel %s)\nconsole (%s), last lines:\n%s'
                         % (timeout, status or 'no answer',
                            self.cfg['accel'], self.path('console.log'),
                            self.console_tail()))

    def stop(self, timeout=20):
        """Stops QEMU (through its supervisor) and waits until it is gone."""
        sup = self.pid('supervisor.pid')
        qemu = self.pid('qemu.pid')
        if sup and pid_alive(sup):
            try:
                os.kill(sup, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if not wait_pid_gone(sup, timeout):
                os.kill(sup, signal.SIGKILL)
                wait_pid_gone(sup, 5)
        if qemu and pid_alive(qemu):
            # The supervisor is gone but QEMU is not (it was killed
            # itself): end QEMU directly.
            try:
                os.kill(qemu, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wait_pid_gone(qemu, 5)
        p = getattr(self, '_supervisor', None)
        if p is not None:
            p.wait()
        if self.cfg.get('ctl_sock'):
            d = os.path.dirname(self.cfg['ctl_sock'])
            for f in (self.cfg['ctl_sock'],):
                try:
                    os.unlink(f)
                except OSError:
                    pass
            try:
                os.rmdir(d)
            except OSError:
                pass

    def restart(self, ready_timeout=DEFAULT_READY_TIMEOUT):
        """Stops the guest (crashed or not) and boots it again."""
        self.stop()
        # A new supervisor watches the same owner as before.
        self.start(ready_timeout)

    # ---------------------------------------------------------- commands
    def _lock(self):
        f = open(self.path('ctl.lock'), 'a')
        fcntl.flock(f, fcntl.LOCK_EX)
        return f

    def _call(self, cmd, timeout, reply_wait=None, attempts=1):
        """Sends one command and returns (status, output).  Without a reply
        within reply_wait (default: the command's timeout plus a grace
        period) it asks again, up to attempts times in all, with the same
        id: the guest never runs one id twice but repeats its reply.
        Raises _NoReply when no attempt got a reply."""
        if reply_wait is None:
            reply_wait = timeout + REPLY_GRACE
        self._seq += 1
        cid = '%d.%d.%d' % (os.getpid(), self._seq, time.monotonic_ns() % 10**9)
        b64 = base64.b64encode(cmd.encode()).decode()
        line = ('\n@@C %s %d %s\n' % (cid, int(timeout), b64)).encode()
        err = None
        # One lock over all attempts: the guest remembers only the last
        # command, so no other command may come in between.
        with self._lock():
            for attempt in range(attempts):
                if attempt:
                    print('guest: no reply to command %s (%s); asking again'
                          % (cid, err), file=sys.stderr)
                try:
                    return self._exchange(cid, line, reply_wait)
                except _NoReply as e:
                    err = e
                    if 'closed' in str(e):
                        # QEMU closes the channel as it exits: let it
                        # finish before deciding.
                        wait_pid_gone(self.pid('qemu.pid'), 5)
                    if not self.alive():
                        break
        raise err

    def _exchange(self, cid, line, reply_wait):
        # Not "\n" first: the newline the guest sends before the marker, the
        # first byte of its reply, is lost now and then (about one reply in
        # 300 with two guests running, here).  The MD5 sum of the output on
        # the END line catches any other loss; either way the host asks
        # again.
        begin = ('@@UIW-BEGIN %s\n' % cid).encode()
        end = ('@@UIW-END %s ' % cid).encode()
        deadline = time.monotonic() + reply_wait
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(max(0.1, min(5, reply_wait)))
            try:
                s.connect(self.ctl_sock)
            except OSError as e:
                # QEMU has not created its socket yet.
                time.sleep(min(0.2, reply_wait))
                raise _NoReply('cannot connect to %s: %s'
                               % (self.ctl_sock, e))
            try:
                s.sendall(line)
            except OSError as e:
                raise _NoReply('control channel: %s' % e)
            buf = b''
            while True:
                i = buf.find(begin)
                if i >= 0:
                    j = buf.find(end, i)
                    if j >= 0:
                        k = buf.find(b'\n', j)
                        if k >= 0:
                            break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _NoReply('no reply after %ds; received %r'
                                   % (reply_wait, buf[-200:]))
                r, _, _ = select.select([s], [], [], min(left, 1.0))
                if not r:
                    if not self.alive():
                        raise _NoReply('QEMU exited')
                    continue
                try:
                    data = s.recv(65536)
                except OSError as e:
                    raise _NoReply('control channel: %s' % e)
                if not data:
                    raise _NoReply('control channel closed')
                buf += data
        finally:
            s.close()
        fields = buf[j + len(end):k].split()
        try:
            status = int(fields[0])
            out = base64.b64decode(b''.join(buf[i + len(begin):j].split()),
                                   validate=True)
        except (IndexError, ValueError) as e:
            raise _NoReply('garbled reply (%s)' % e)
        if len(fields) < 2 or hashlib.md5(out).hexdigest() != \
                fields[1].decode('ascii', 'replace'):
            raise _NoReply('reply fails its MD5 check')
        return status, out.decode('utf-8', 'replace')

    def run(self, cmd, timeout=60):
        """Runs a shell command in the guest: (exit status, stdout+stderr).
        Status 124: the guest killed it after timeout seconds."""
        try:
            return self._call(cmd, timeout, attempts=3)
        except _NoReply as e:
            if not self.alive():
                raise GuestError('command %r: %s' % (cmd, self.why_dead()))
            raise GuestError('command %r got no reply (%s)\nconsole, last '
                             'lines:\n%s' % (cmd, e, self.console_tail()))

    def check(self, cmd, timeout=60):
        """run(), raising GuestError unless the status is 0."""
        rc, out = self.run(cmd, timeout)
        if rc != 0:
            raise GuestError('command %r failed with status %d:\n%s'
                             % (cmd, rc, out))
        return out

    def bg_start(self, name, cmd):
        """Starts cmd in the background in the guest as job name."""
        self.check('uiw-bg start %s %s' % (shlex.quote(name),
                                           shlex.quote(cmd)), 30)

    def bg_wait(self, name, timeout=60):
        """Waits for job name: (status, output), status None if it is still
        running after timeout seconds."""
        rc, msg = self.run('uiw-bg wait %s %d' % (shlex.quote(name), timeout),
                           timeout + 10)
        _, st = self.run('uiw-bg status %s' % shlex.quote(name), 30)
        out = self.bg_output(name)
        if not st.startswith('exited'):
            if st.strip() != 'running':
                raise GuestError('job %s: %s%s' % (name, st, msg))
            return None, out
        return int(st.split()[1]), out

    def bg_output(self, name):
        return self.run('uiw-bg out %s' % shlex.quote(name), 30)[1]

    def bg_kill(self, name, sig='TERM'):
        self.check('uiw-bg kill %s %s' % (shlex.quote(name),
                                          shlex.quote(sig)), 30)

    def wait_listen(self, port, timeout=30):
        """Waits until something listens on TCP port in the guest."""
        rc, out = self.run('uiw-waitport %d %d' % (port, timeout), timeout + 10)
        if rc != 0:
            raise GuestError('nothing listens on guest port %d: %s'
                             % (port, out.strip()))


class _NoReply(Exception):
    pass


# ------------------------------------------------------------ supervisor
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def supervise(run_dir):
    """Runs QEMU until it exits, the owner exits, the lifetime ends or
    SIGTERM arrives; then records why in exit.json."""
    g = Guest.attach(run_dir)
    argv = g.qemu_argv()
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    with open(g.path('qemu.log'), 'ab') as log:
        log.write(('+ %s\n' % ' '.join(shlex.quote(a) for a in argv)).encode())
        log.flush()
        q = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=log, preexec_fn=_die_with_parent)
    with open(g.path('qemu.pid'), 'w') as f:
        f.write('%d\n' % q.pid)
    qfd = os.pidfd_open(q.pid)
    fds = [qfd, rfd]
    reason = None
    try:
        ofd = os.pidfd_open(g.cfg['owner'])
        fds.append(ofd)
    except OSError:
        ofd = None
        reason = 'owner %d was gone at start' % g.cfg['owner']
    deadline = time.monotonic() + g.cfg['max_life']
    while reason is None:
        left = deadline - time.monotonic()
        if left <= 0:
            reason = 'maximum lifetime of %ds reached' % g.cfg['max_life']
            break
        r, _, _ = select.select(fds, [], [], left)
        if qfd in r:
            break
        if ofd is not None and ofd in r:
            reason = 'owner %d exited' % g.cfg['owner']
        elif rfd in r:
            reason = 'stopped on request'
    if reason is not None and q.poll() is None:
        q.terminate()           # QEMU ends cleanly on SIGTERM
        try:
            q.wait(10)
        except subprocess.TimeoutExpired:
            q.kill()
    status = q.wait()
    info = {'qemu_status': status,
            'reason': reason or 'QEMU exited by itself'}
    with open(g.path('exit.json.tmp'), 'w') as f:
        json.dump(info, f)
    os.replace(g.path('exit.json.tmp'), g.path('exit.json'))


# ------------------------------------------------------------------ CLI
def main(argv=None):
    ap = argparse.ArgumentParser(prog='guest.py',
                                 description='Run the siw interop guest.')
    sub = ap.add_subparsers(dest='op', required=True)

    def with_run(p):
        p.add_argument('--run', required=True, help='run directory')
        return p

    p = with_run(sub.add_parser('start', help='boot and wait until ready'))
    p.add_argument('--cache', default=DEFAULT_CACHE)
    p.add_argument('--hostfwd', action='append', default=[],
                   metavar='H[:G]', help='127.0.0.1:H -> guest port G')
    p.add_argument('--guestfwd', action='append', default=[],
                   metavar='G[:H]', help='guest 10.0.2.100:G -> 127.0.0.1:H')
    p.add_argument('--udpfwd', action='append', default=[],
                   metavar='H[:G]', help='UDP 127.0.0.1:H -> guest port G')
    p.add_argument('--open-net', action='store_true',
                   help='restrict=off: the guest may send UDP to 10.0.2.2 '
                        '(the host) and answer udpfwd traffic')
    p.add_argument('--accel', choices=('kvm', 'tcg'))
    p.add_argument('--mem', default='1G')
    p.add_argument('--smp', type=int, default=1)
    p.add_argument('--append', default='', help='extra kernel arguments')
    p.add_argument('--owner', type=int,
                   help='stop the guest when this process exits '
                        '(default: the caller)')
    p.add_argument('--max-life', type=int, default=DEFAULT_MAX_LIFE)
    p.add_argument('--timeout', type=int, default=DEFAULT_READY_TIMEOUT)
    p = with_run(sub.add_parser('run', help='run a command in the guest'))
    p.add_argument('-t', '--timeout', type=int, default=60)
    p.add_argument('cmd', nargs=argparse.REMAINDER)
    p = with_run(sub.add_parser('bg-start', help='start a background job'))
    p.add_argument('name')
    p.add_argument('cmd', nargs=argparse.REMAINDER)
    p = with_run(sub.add_parser('bg-wait', help='wait for a background job'))
    p.add_argument('name')
    p.add_argument('-t', '--timeout', type=int, default=60)
    p = with_run(sub.add_parser('bg-out', help="a job's output"))
    p.add_argument('name')
    p = with_run(sub.add_parser('bg-kill', help='signal a background job'))
    p.add_argument('name')
    p.add_argument('signal', nargs='?', default='TERM')
    p = with_run(sub.add_parser('wait-listen', help='wait for a listener'))
    p.add_argument('port', type=int)
    p.add_argument('-t', '--timeout', type=int, default=30)
    p = with_run(sub.add_parser('restart', help='stop and boot again'))
    p.add_argument('--timeout', type=int, default=DEFAULT_READY_TIMEOUT)
    with_run(sub.add_parser('stop', help='stop the guest'))
    with_run(sub.add_parser('status', help='running, crashed or stopped'))
    p = with_run(sub.add_parser('console', help="the console's last lines"))
    p.add_argument('-n', type=int, default=40)
    p = sub.add_parser('free-ports', help='print N free loopback ports')
    p.add_argument('n', type=int)
    p = sub.add_parser('accel', help='print the accelerator to use')
    p = sub.add_parser('_supervise')
    p.add_argument('run')
    a = ap.parse_args(argv)

    if a.op == '_supervise':
        supervise(a.run)
        return 0
    if a.op == 'free-ports':
        print(' '.join(str(p) for p in free_ports(a.n)))
        return 0
    if a.op == 'accel':
        print('%s (%s)' % detect_accel())
        return 0
    try:
        if a.op == 'start':
            g = Guest(a.run, a.cache, a.hostfwd, a.guestfwd, a.accel, a.mem,
                      a.smp, a.append, a.max_life,
                      a.owner or os.getppid(), a.udpfwd, a.open_net)
            secs = g.start(a.timeout)
            print('guest ready in %.1fs (accel %s: %s)'
                  % (secs, g.cfg['accel'], g.cfg['accel_reason']),
                  file=sys.stderr)
            return 0
        g = Guest.attach(a.run)
        if a.op == 'run':
            cmd = a.cmd[1:] if a.cmd[:1] == ['--'] else a.cmd
            if not cmd:
                ap.error('run: no command')
            rc, out = g.run(' '.join(cmd), a.timeout)
            sys.stdout.write(out)
            return rc
        if a.op == 'bg-start':
            cmd = a.cmd[1:] if a.cmd[:1] == ['--'] else a.cmd
            if not cmd:
                ap.error('bg-start: no command')
            g.bg_start(a.name, ' '.join(cmd))
            return 0
        if a.op == 'bg-wait':
            rc, out = g.bg_wait(a.name, a.timeout)
            sys.stdout.write(out)
            if rc is None:
                print('job %s still running after %ds' % (a.name, a.timeout),
                      file=sys.stderr)
                return 124
            return rc
        if a.op == 'bg-out':
            sys.stdout.write(g.bg_output(a.name))
            return 0
        if a.op == 'bg-kill':
            g.bg_kill(a.name, a.signal)
            return 0
        if a.op == 'wait-listen':
            g.wait_listen(a.port, a.timeout)
            return 0
        if a.op == 'restart':
            g.restart(a.timeout)
            return 0
        if a.op == 'stop':
            g.stop()
            return 0
        if a.op == 'status':
            if g.alive():
                print('running')
                return 0
            crash = g.crashed()
            print('crashed: ' + crash if crash else 'stopped')
            return 1
        if a.op == 'console':
            print(g.console_tail(a.n))
            return 0
    except GuestError as e:
        print('guest: %s' % e, file=sys.stderr)
        return 255
    return 255


if __name__ == '__main__':
    sys.exit(main())
