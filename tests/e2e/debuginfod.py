#!/usr/bin/env python3
"""debuginfod.py: WHERE and NAME of a program whose switches all happen in a
scheduler library of its own (tests/targets/sched_target.c, in GNU Pth's
shape), through the corotop binary in batch JSON mode.

  debuginfod.py rule COROTOP SCHED_TARGET
      The parked philosopher's WHERE is the program's mysched_wait, not
      the library's ts_yield or ts_park (every shared library is the
      runtime's), and its NAME philosopher, not the library's trampoline;
      with --runtime=mysched_ its WHERE is philosopher (a function prefix
      makes the program's own frames the runtime's); with
      --runtime=libtestsched --own-lib=libtestsched the library is the
      program's again: WHERE is the library's ts_park.
  debuginfod.py debuginfod COROTOP STRIPPED DEBUGFILE
      STRIPPED (the same program with no symbols and no DWARF) is named
      module+offset without DEBUGINFOD_URLS; with DEBUGINFOD_URLS naming a
      local Debian debuginfod that serves DEBUGFILE from a temporary
      directory, corotop names its functions (mysched_wait, philosopher).
      Skipped (77) when debuginfod is not installed (apt-get install
      debuginfod; scripts/test installs it).

Every wait has a deadline and nothing asserts how fast anything ran: the
server is waited for until it serves the file (debuginfod-find, a fresh
client cache each time), corotop until a snapshot shows the names.  The
server gets a free loopback port (retried when another process takes it
first), its database and every cache live in a temporary directory, and it
is stopped on every path out, as is every corotop started here.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 90
procs = []


def fail(msg):
    print('debuginfod.py: FAIL: ' + msg, file=sys.stderr)
    sys.exit(1)


def skip(msg):
    print('debuginfod.py: SKIP: ' + msg)
    sys.exit(77)


def stop(p):
    """Stop p (SIGTERM, then SIGKILL) and reap it."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def stop_all():
    for p in procs:
        stop(p)


def suspended(snapshot):
    return [c for c in snapshot['coroutines'] if c['state'] == 'suspended']


def watch(argv, env, want, what):
    """Run corotop (argv) until a snapshot has a suspended coroutine for
    which want(where, name) holds; that coroutine.  Fails at the deadline
    with the last suspended coroutines seen."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    procs.append(p)
    end = time.monotonic() + DEADLINE_S
    last = []
    try:
        for line in p.stdout:
            if line.startswith('{'):
                last = suspended(json.loads(line))
                for c in last:
                    if want(c['where'], c['name']):
                        return c
            if time.monotonic() > end:
                break
        fail('%s: no snapshot within %d s (last: %s)' % (
            what, DEADLINE_S,
            [(c['where'], c['name']) for c in last]))
    finally:
        stop(p)
        procs.remove(p)


def corotop_argv(corotop, target, *options):
    return [corotop, '-b', '-f', 'json', '-d', '2', *options, '--',
            target, '3', '2', '--stuck', '--hold']


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('DEBUGINFOD_')}
    env.update(extra)
    return env


def mode_rule(corotop, target):
    env = clean_env()
    c = watch(corotop_argv(corotop, target), env,
              lambda w, n: w.startswith('mysched_wait+') and
              n == 'philosopher', 'the library skipped')
    print('rule: where %s, name %s' % (c['where'], c['name']))
    c = watch(corotop_argv(corotop, target, '--runtime=mysched_'), env,
              lambda w, n: w.startswith('philosopher+') and
              n == 'philosopher', '--runtime=mysched_')
    print('--runtime=mysched_: where %s, name %s' % (c['where'], c['name']))
    c = watch(corotop_argv(corotop, target, '--own-lib=libtestsched'), env,
              lambda w, n: w.startswith('ts_'), '--own-lib')
    print('--own-lib=libtestsched: where %s, name %s' % (c['where'],
                                                          c['name']))


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if 'Build ID:' in line:
            return line.split()[-1]
    fail('%s has no build ID' % path)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def serves(port, bid, tmp, n):
    """Whether the server on port hands out bid's debug info now; each ask
    with a fresh client cache (libdebuginfod remembers a miss)."""
    env = clean_env(DEBUGINFOD_URLS='http://127.0.0.1:%d' % port,
                    DEBUGINFOD_CACHE_PATH=os.path.join(tmp, 'probe%d' % n),
                    DEBUGINFOD_TIMEOUT='5')
    r = subprocess.run(['debuginfod-find', 'debuginfo', bid], env=env,
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0


def start_server(tmp, srv, bid):
    """A debuginfod serving srv on a free loopback port, once it serves
    bid; its port."""
    n = 0
    for attempt in range(5):
        port = free_port()
        log = open(os.path.join(tmp, 'debuginfod%d.log' % attempt), 'w')
        p = subprocess.Popen(
            ['debuginfod', '-F', srv, '-p', str(port),
             '-d', os.path.join(tmp, 'db%d.sqlite' % attempt),
             '-t', '0', '-g', '0'],
            stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        end = time.monotonic() + DEADLINE_S
        while p.poll() is None and time.monotonic() < end:
            n += 1
            if serves(port, bid, tmp, n):
                return port
            time.sleep(0.2)
        stop(p)  # exited (the port was taken?) or never served
        procs.remove(p)
    fail('debuginfod never served %s (logs in %s)' % (bid, tmp))


def mode_debuginfod(corotop, stripped, debugfile):
    for tool in ('debuginfod', 'debuginfod-find', 'readelf'):
        if not shutil.which(tool):
            skip('%s is not installed (apt-get install debuginfod '
                 'binutils)' % tool)
    module = os.path.basename(stripped)
    bid = build_id(stripped)
    if build_id(debugfile) != bid:
        fail('%s and %s have different build IDs' % (stripped, debugfile))
    tmp = tempfile.mkdtemp(prefix='corotop-debuginfod-')
    try:
        # Without DEBUGINFOD_URLS: the stripped program's frames are
        # module+offset, and stay so.
        c = watch(corotop_argv(corotop, stripped), clean_env(),
                  lambda w, n: w.startswith(module + '+0x'),
                  'no debuginfod')
        if c['name'] not in ('', module):
            fail('without debug info, name %r' % c['name'])
        print('without DEBUGINFOD_URLS: where %s, name %s' % (c['where'],
                                                             c['name']))
        srv = os.path.join(tmp, 'srv')
        os.mkdir(srv)
        shutil.copy(debugfile, srv)
        port = start_server(tmp, srv, bid)
        env = clean_env(DEBUGINFOD_URLS='http://127.0.0.1:%d' % port,
                        DEBUGINFOD_CACHE_PATH=os.path.join(tmp, 'cache'))
        c = watch(corotop_argv(corotop, stripped), env,
                  lambda w, n: w.startswith('mysched_wait+') and
                  n == 'philosopher', 'debuginfod')
        print('with DEBUGINFOD_URLS: where %s, name %s' % (c['where'],
                                                          c['name']))
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGTERM, lambda *a: (stop_all(), sys.exit(1)))
    try:
        if sys.argv[1] == 'rule':
            mode_rule(sys.argv[2], sys.argv[3])
        elif sys.argv[1] == 'debuginfod' and len(sys.argv) == 5:
            mode_debuginfod(sys.argv[2], sys.argv[3], sys.argv[4])
        else:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
    finally:
        stop_all()


if __name__ == '__main__':
    main()
