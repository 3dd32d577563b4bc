#!/usr/bin/env python3
"""core_dump: corotop --core and corotop dump --core on core files of
processes that were never prepared (no probe, no preload, no ppt buffer),
taken by gdb's gcore and by the kernel; issue 30, part 2.

    core_dump.py COROTOP FCTX_PARKED UCTX_TARGET [CORO2_PARKED|-
                 [ASIO_ECHO]]

For each target, started without corotop:
  - `corotop dump -p PID --json` lists its coroutines (the live scan);
  - `gcore` dumps it; `corotop dump --core FILE --json` lists the same
    rows (id, name, where, state, unsure) with "target.core" true and
    `corotop --core FILE -b` prints one snapshot and ends;
  - the target runs on and ends as it would have (status 0, its output).
FCTX_PARKED's parked tasks are held to its own truth (the fctx= lines it
prints), as scan_attach.py does.  A kernel core (ulimit -c, SIGQUIT)
of FCTX_PARKED lists the same tasks; it is skipped, with a message,
where kernel.core_pattern sends cores elsewhere than the working
directory.  --exe: a core whose program file is gone names nothing of
the program until --exe gives it back.

FIBER_TARGET (environment: Boost.Fiber on two threads, one fiber stuck on
a condition variable) is walked through its schedulers' lists: the stuck
fiber is proven waiting and flagged after the threshold, alone, live and
in its gcore.

Programs that ran with the probe (CENSUS_TARGET, environment) or the
preload (COROTOP_PRELOAD_LIB: FCTX_PARKED under it) have their registry
read from the core instead: the exact list, each coroutine with its id,
thread, state and last address as the probe kept them.

In a sanitizer build the scans also find contexts nobody parked (ASan's
frames, TSan's runtime: docs/SCAN.md): there the truth must be in both
lists, and the two lists are not compared whole.  Every wait has a
deadline of 60 s (a bound for a hung run, not a speed expectation).
Exit status: 0 every check holds, 1 one does not (printed), 77 skipped
(no gdb).
"""
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TASKS = 8
DEADLINE = 60


def fail(msg):
    print('FAIL ' + msg)
    sys.exit(1)


def run(args, cwd=None):
    r = subprocess.run(args, stdin=subprocess.DEVNULL, cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=DEADLINE, encoding='utf-8', errors='replace')
    return r.returncode, r.stdout, r.stderr


def key(c):
    return (c['probe_id'], c['name'], c['where'], c['state'], c['unsure'])


def dump_json(cor, args, what):
    rc, out, err = run([cor, 'dump'] + args + ['--json'])
    if rc != 0:
        fail('%s: dump %s: exit %d: %s' % (what, ' '.join(args), rc, err))
    return json.loads(out.splitlines()[0])


# A sanitizer's process: gcore of it takes minutes (its shadow memory,
# terabytes of address space), and ASan turns the kernel's cores off.
SANITIZED = False


def gcore(pid, where):
    """gcore of pid: the core's path; None in a sanitizer build, whose
    processes are not dumped here (the plain build checks cores; the
    reader itself runs under ASan in unit-corefile and fuzz-corefile)."""
    if SANITIZED:
        return None
    prefix = os.path.join(where, 'core')
    rc, out, err = run(['gcore', '-o', prefix, str(pid)])
    path = '%s.%d' % (prefix, pid)
    if rc != 0 or not os.path.exists(path):
        fail('gcore %d: exit %d: %s%s' % (pid, rc, out, err))
    return path


def live_and_core(cor, pid, where, what, sanitized, truth=None):
    """The live scan's rows and the gcore's: the same (plain build), or
    both holding `truth` (a set of keys' predicates: callables)."""
    live = dump_json(cor, ['-p', str(pid)], what)['coroutines']
    # The live process's threads are rows of their own too (its
    # refreshes): the core's threads are held to them below.
    live_tids = sorted(c['probe_id'] for c in live
                       if c['state'] == 'running' and
                       c['probe_id'] == c['tid'])
    live = [c for c in live if c['probe_id'] not in live_tids]
    path = gcore(pid, where)
    if not path:
        for name, pred in (truth or {}).items():
            if not any(pred(c) for c in live):
                fail('%s: %s missing: live %s'
                     % (what, name, [key(c) for c in live]))
        print('SKIP %s: no gcore of a sanitizer\'s process; the live scan '
              'lists %d coroutines' % (what, len(live)))
        return None, live
    snap = dump_json(cor, ['--core', path], what + ' core')
    t = snap['target']
    if not t['core'] or not t['scanned'] or t['running'] or \
            t['pid'] != pid:
        fail('%s: core target %s' % (what, t))
    if snap['core']['threads'] < 1 or snap['core']['truncated'] or \
            snap['core']['files_unreadable']:
        fail('%s: core %s' % (what, snap['core']))
    rows = snap['coroutines']
    for c in rows:
        if c.get('source') != 'scan' or c['age_ns'] or c['in_state_ns']:
            fail('%s: core row %s' % (what, json.dumps(c)))
    # Each thread of the core: a running row, its id its tid, the stack
    # it was running on walked from its registers.
    threads = [c for c in rows if c['state'] == 'running']
    rows = [c for c in rows if c['state'] != 'running']
    if len(threads) != snap['core']['threads'] or \
            snap['scan']['threads_listed'] != len(threads) or \
            any(c['tid'] != c['probe_id'] or not c['tid'] or
                not c.get('parked_stack', {}).get('frames')
                for c in threads):
        fail('%s: the core\'s threads: %s' % (what, json.dumps(threads)))
    if sorted(c['tid'] for c in threads) != live_tids:
        fail('%s: the core\'s threads %s, the live process\'s %s'
             % (what, sorted(c['tid'] for c in threads), live_tids))
    if not sanitized and sorted(map(key, live)) != sorted(map(key, rows)):
        fail('%s: live and core differ:\nlive %s\ncore %s'
             % (what, sorted(map(key, live)), sorted(map(key, rows))))
    for name, pred in (truth or {}).items():
        if not any(pred(c) for c in live) or not any(pred(c) for c in rows):
            fail('%s: %s missing: live %s, core %s'
                 % (what, name, [key(c) for c in live],
                    [key(c) for c in rows]))
    print('ok   %s: gcore lists %d coroutines, as the live scan does, and '
          'its %d threads with their stacks' % (what, len(rows),
                                                len(threads)))
    return path, rows


def check_fctx_text(cor, path, pid):
    """`corotop dump --core` and `corotop --core -b` on fctx-parked's
    core: its tasks, the header naming the core, one snapshot."""
    rc, out, err = run([cor, 'dump', '--core', path])
    if rc != 0 or 'core of pid %d (fctx-parked)' % pid not in out \
            or out.count('"task" suspended') < TASKS:
        fail('dump --core: exit %d: %s%s' % (rc, out, err))
    rc, out, err = run([cor, '--core', path, '-b'])
    if rc != 0 or 'Core: 1 threads' not in out or \
            out.count('task+') < TASKS:
        fail('--core -b: exit %d: %s%s' % (rc, out, err))


def check_fctx(cor, target, where, sanitized):
    p = subprocess.Popen([target, str(TASKS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        if p.stdout.readline().strip() != 'parked=%d' % TASKS:
            fail('fctx-parked did not park its tasks')
        kept = {int(p.stdout.readline().strip()[5:], 16)
                for _ in range(TASKS)}
        path, rows = live_and_core(cor, p.pid, where, 'fctx-parked',
                                   sanitized)
        by_id = {c['probe_id']: c for c in rows}
        for at in kept:
            c = by_id.get(at)
            if not c or c['name'] != 'task' or c['unsure'] or \
                    not c['where'].startswith('task+'):
                fail('fctx-parked core: task at %#x: %s' % (at, c))
        # The text forms: dump's and batch's one snapshot, which ends.
        if path:
            check_fctx_text(cor, path, p.pid)
    finally:
        p.stdin.close()
    rest = p.stdout.read()
    if p.wait(timeout=DEADLINE) != 0 or rest:
        fail('fctx-parked ended with %d, then said %r'
             % (p.returncode, rest))
    print('ok   fctx-parked: the %d tasks %s, named; it ran on and exited 0'
          % (TASKS, 'from its core' if path else 'from the live scan'))
    return kept


def check_uctx(cor, target, where, sanitized):
    u = subprocess.Popen([target, '3', '2', '--stuck', '--hold'],
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        if not u.stdout.readline().startswith('coroutines=3 '):
            fail('uctx-target did not start')
        live_and_core(cor, u.pid, where, 'uctx-target', sanitized, {
            'stuck_wait': lambda c: c['name'] == 'stuck_wait' and
            c['where'].startswith('stuck_wait+') and not c['unsure']})
    finally:
        u.kill()
        u.wait()


def check_coro2(cor, target, where, sanitized):
    p = subprocess.Popen([target, '4'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        if p.stdout.readline().strip() != 'parked=5':
            fail('coro2-parked did not park')
        live_and_core(cor, p.pid, where, 'coro2-parked', sanitized, {
            'stuck_deeper': lambda c: c['name'].startswith('stuck_deeper(')
        })
    finally:
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('coro2-parked did not exit 0 after its gcore')


def check_asio(cor, target, where, sanitized):
    p = subprocess.Popen([target], stdout=subprocess.PIPE,
                         encoding='utf-8')
    socks = []
    try:
        line = p.stdout.readline().split()
        if len(line) != 2 or line[0] != 'listening':
            fail('asio-echo said %r' % line)
        for _ in range(3):
            s = socket.create_connection(('127.0.0.1', int(line[1])),
                                         timeout=DEADLINE)
            s.sendall(b'ping')
            if s.recv(16) != b'ping':
                fail('asio-echo did not echo')
            socks.append(s)
        live_and_core(cor, p.pid, where, 'asio-echo', sanitized)
        # It serves on after the dump.
        socks[0].sendall(b'pong')
        if socks[0].recv(16) != b'pong':
            fail('asio-echo stopped echoing after its gcore')
    finally:
        for s in socks:
            s.close()
        p.terminate()
    if p.wait(timeout=DEADLINE) != 0:
        fail('asio-echo did not exit 0 on SIGTERM')


def check_kernel(cor, target, where, kept_count):
    if SANITIZED:
        print('SKIP kernel core: ASan turns core dumps off (its shadow '
              'memory)')
        return
    with open('/proc/sys/kernel/core_pattern') as f:
        pattern = f.read().strip()
    if pattern.startswith('|') or '/' in pattern:
        print('SKIP kernel core: kernel.core_pattern is %r (cores go '
              'elsewhere than the working directory)' % pattern)
        return

    def allow_core():
        resource.setrlimit(resource.RLIMIT_CORE,
                           (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    d = os.path.join(where, 'kernel')
    os.mkdir(d)
    p = subprocess.Popen([target, str(TASKS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8', cwd=d,
                         preexec_fn=allow_core)
    if p.stdout.readline().strip() != 'parked=%d' % TASKS:
        fail('fctx-parked did not park its tasks')
    kept = {int(p.stdout.readline().strip()[5:], 16) for _ in range(TASKS)}
    p.send_signal(signal.SIGQUIT)
    rc = p.wait(timeout=DEADLINE)
    cores = [f for f in os.listdir(d) if f.startswith('core')]
    if rc != -signal.SIGQUIT or len(cores) != 1:
        print('SKIP kernel core: status %d, files %s (no core written: '
              'kernel.core_pattern %r)' % (rc, os.listdir(d), pattern))
        return
    snap = dump_json(cor, ['--core', os.path.join(d, cores[0])],
                     'kernel core')
    got = {c['probe_id'] for c in snap['coroutines']
           if c['name'] == 'task' and c['where'].startswith('task+')}
    if not kept <= got or snap['target']['pid'] != p.pid:
        fail('kernel core: tasks %s of %s; target %s'
             % (sorted(got), sorted(kept), snap['target']))
    print('ok   kernel core (SIGQUIT, ulimit -c): the %d tasks' % len(kept))


def check_exe(cor, target, where):
    """A program file that is gone: its frames are unnamed, and the
    core says one mapped file could not be read; --exe names them."""
    if SANITIZED:
        print('SKIP --exe: no gcore of a sanitizer\'s process')
        return
    d = os.path.join(where, 'moved')
    os.mkdir(d)
    prog = os.path.join(d, 'fctx-parked')
    shutil.copy(target, prog)
    p = subprocess.Popen([prog, '2'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        if p.stdout.readline().strip() != 'parked=2':
            fail('the copy did not park')
        path = gcore(p.pid, d)
    finally:
        p.stdin.close()
        p.wait(timeout=DEADLINE)
    os.unlink(prog)
    gone = dump_json(cor, ['--core', path], '--exe (gone)')
    back = dump_json(cor, ['--core', path, '--exe', target], '--exe')
    if gone['core']['files_unreadable'] != 1 or \
            any(c['name'] == 'task' for c in gone['coroutines']):
        fail('program gone: %s %s' % (gone['core'], [key(c) for c in
                                                     gone['coroutines']]))
    if back['core']['files_unreadable'] or back['core']['exe'] != os.path.realpath(target) \
            or sum(c['name'] == 'task' for c in back['coroutines']) < 2:
        fail('--exe: %s %s' % (back['core'], [key(c) for c in
                                              back['coroutines']]))
    print('ok   --exe: a gone program unnamed (1 file unreadable), named '
          'again from --exe')


def check_fiber(cor, target, where, sanitized):
    """Boost.Fiber on two threads, one fiber stuck on a condition variable
    (FIBER_TARGET --stuck --hold), never prepared: its scheduler's lists
    prove the stuck fiber waits ("waiting": true), so it alone is flagged
    WAKE? once the threshold (1 s here) has passed; a gcore shows it
    waiting too; the program ends on its signal as it would have."""
    cfg = os.path.join(where, 'xdg', 'corotop')
    os.makedirs(cfg)
    with open(os.path.join(cfg, 'config'), 'w') as f:
        f.write('lint.lost-wakeup.threshold = 1\n')
    p = subprocess.Popen([target, '2', '100', '--stuck', '--hold'],
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        if not p.stdout.readline().startswith('fibers='):
            fail('fiber-target did not start')
        snap = dump_json(cor, ['-p', str(p.pid)], 'fiber-target')
        stuck = [c for c in snap['coroutines']
                 if c['name'] == 'stuck_wait_for_signal()']
        if len(stuck) != 1 or not stuck[0]['waiting'] or \
                stuck[0]['unsure'] or not snap['scan']['fiber_layout'] or \
                snap['scan']['schedulers'] != 2:
            fail('fiber-target: %s %s' % (snap['scan'],
                                          [key(c) + (c['waiting'],)
                                           for c in snap['coroutines']]))
        # dump's text says which one its scheduler shows waiting.
        rc, out, err = run([cor, 'dump', '-p', str(p.pid)])
        waiting = [line for line in out.splitlines()
                   if 'its scheduler\'s lists say' in line]
        if rc != 0 or not 1 <= len(waiting) <= 2 or \
                not any('"stuck_wait_for_signal()"' in line
                        for line in waiting):
            fail('fiber-target: dump: %s%s' % (out, err))
        # Flagged after the threshold, and nothing else.
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.dirname(cfg))
        deadline = time.monotonic() + DEADLINE
        while True:
            r = subprocess.run([cor, '-b', '-n', '3', '-d', '10', '-f',
                                'json', '-p', str(p.pid)], env=env,
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, timeout=DEADLINE,
                               encoding='utf-8')
            last = json.loads(r.stdout.splitlines()[-1])
            flagged = [c['name'] for c in last['coroutines']
                       if 'lost-wakeup' in c['warn']]
            if flagged or time.monotonic() > deadline:
                break
        if flagged != ['stuck_wait_for_signal()'] and not sanitized:
            fail('fiber-target: flagged %s' % flagged)
        if 'stuck_wait_for_signal()' not in flagged:
            fail('fiber-target: the stuck fiber not flagged: %s' % flagged)
        path = gcore(p.pid, where)
        core = dump_json(cor, ['--core', path], 'fiber-target core') \
            if path else snap
        stuck = [c for c in core['coroutines']
                 if c['name'] == 'stuck_wait_for_signal()']
        if len(stuck) != 1 or not stuck[0]['waiting']:
            fail('fiber-target core: %s' % [key(c) for c in
                                             core['coroutines']])
    finally:
        p.terminate()
    if p.wait(timeout=DEADLINE) != -signal.SIGTERM:
        fail('fiber-target ended with %d, not on its SIGTERM'
             % p.returncode)
    print('ok   fiber-target: the stuck fiber proven waiting by its '
          'scheduler\'s lists, flagged WAKE? after 1 s%s; %sthe program '
          'ended on its signal' % ('' if SANITIZED else ', alone',
                                   'its gcore too; ' if path else ''))


def check_registry_probe(cor, target, where):
    """A program that links the probe: its core's registry is read, not
    scanned -- every parked coroutine with its id, thread, last address
    and state as the probe kept them (the target's `coro K` answers)."""
    if SANITIZED:
        print('SKIP census-target core: no gcore of a sanitizer\'s process')
        return
    p = subprocess.Popen([target], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')

    def ask(line):
        p.stdin.write(line + '\n')
        p.stdin.flush()
        return p.stdout.readline().strip()

    try:
        if not p.stdout.readline().startswith('ready '):
            fail('census-target did not start')
        if ask('park 3') != 'ok parked 3':
            fail('census-target did not park')
        truth = []
        for k in range(3):
            f = dict(kv.split('=') for kv in ask('coro %d' % k).split()[1:])
            truth.append(f)
        path = gcore(p.pid, where)
        ask('quit')
    finally:
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('census-target did not exit 0 after its gcore')
    snap = dump_json(cor, ['--core', path], 'census-target core')
    if not snap['core']['registry'] or snap['target']['scanned'] or \
            snap['core']['registry_unread']:
        fail('census-target: no registry read: %s %s'
             % (snap['target'], snap['core']))
    rows = {c['probe_id']: c for c in snap['coroutines']}
    for f in truth:
        c = rows.get(int(f['id']))
        if not c or 'source' in c or c['state'] != 'suspended' or \
                c['tid'] != int(f['tid']) or \
                int(c['addr'], 16) != int(f['addr'], 0) or \
                'census_target' not in c['where']:
            fail('census-target: coroutine %s: %s' % (f, c))
    print('ok   census-target (the probe linked): its registry read from '
          'the core, %d coroutines with their ids, threads and addresses'
          % len(truth))


def check_registry_preload(cor, target, preload, where):
    """A program that ran under the preload: its core's registry lists
    every task, named, parked, on its thread, and the root running."""
    if SANITIZED:
        print('SKIP preload core: no gcore of a sanitizer\'s process')
        return
    env = dict(os.environ, LD_PRELOAD=preload)
    p = subprocess.Popen([target, '3'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8', env=env)
    try:
        if p.stdout.readline().strip() != 'parked=3':
            fail('fctx-parked under the preload did not park')
        for _ in range(3):
            p.stdout.readline()
        path = gcore(p.pid, where)
    finally:
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('fctx-parked under the preload did not exit 0')
    snap = dump_json(cor, ['--core', path], 'preload core')
    rows = snap['coroutines']
    tasks = [c for c in rows if c['name'] == 'task' and
             c['state'] == 'suspended' and c['tid'] == p.pid and
             'source' not in c]
    roots = [c for c in rows if c['kind'] == 'root' and
             c['state'] == 'running']
    if not snap['core']['registry'] or len(tasks) != 3 or len(roots) != 1:
        fail('preload core: %s %s' % (snap['core'], [key(c) for c in rows]))
    print('ok   fctx-parked under the preload: its registry read from the '
          'core: 3 tasks parked on thread %d, the root running' % p.pid)


def main():
    cor, fctx, uctx = map(os.path.abspath, sys.argv[1:4])
    if not shutil.which('gcore'):
        print('SKIP gcore (gdb) is not installed: scripts/lib.sh installs '
              'it')
        return 77
    global SANITIZED
    with open(fctx, 'rb') as f:
        text = f.read()
        sanitized = b'__asan_init' in text or b'__tsan_init' in text
    SANITIZED = sanitized
    with tempfile.TemporaryDirectory(prefix='corotop-core-') as where:
        kept = check_fctx(cor, fctx, where, sanitized)
        check_uctx(cor, uctx, where, sanitized)
        if len(sys.argv) > 4 and sys.argv[4] != '-':
            check_coro2(cor, sys.argv[4], where, sanitized)
        if len(sys.argv) > 5:
            check_asio(cor, sys.argv[5], where, sanitized)
        check_exe(cor, fctx, where)
        if os.environ.get('FIBER_TARGET'):
            check_fiber(cor, os.environ['FIBER_TARGET'], where, sanitized)
        if os.environ.get('CENSUS_TARGET'):
            check_registry_probe(cor, os.environ['CENSUS_TARGET'], where)
        if os.environ.get('COROTOP_PRELOAD_LIB'):
            check_registry_preload(cor, fctx,
                                   os.environ['COROTOP_PRELOAD_LIB'], where)
        check_kernel(cor, fctx, where, len(kept))
        # A file that is no core: refused with the reason, exit 1.
        rc, out, err = run([cor, 'dump', '--core', fctx])
        if rc != 1 or 'not a core' not in err:
            fail('dump --core PROGRAM: exit %d: %s' % (rc, err))
        print('ok   a program given as --core is refused: %s'
              % err.strip())
    return 0


if __name__ == '__main__':
    sys.exit(main())
