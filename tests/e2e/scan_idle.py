#!/usr/bin/env python3
"""scan_idle: the lost-wakeup lint on a process that was never prepared
and keeps no list corotop reads -- proven by the kernel's accessed bits
(docs/SCAN.md, "Idle proofs"), not by saved bytes that stay the same.

    scan_idle.py COROTOP UCTX_TARGET FCTX_PARKED [CORO2_PARKED]

- A ucontext scheduler (UCTX_TARGET 3 0 --stuck --mmap --forever): three
  workers yield forever at the same depth, a round each millisecond,
  saving the same bytes each time; one coroutine is parked for good in
  stuck_wait.  Each on a stack of its own mapping.  With the threshold at
  1 s, stuck_wait alone is flagged (WAKE?, "idle": true) and no worker
  ever is; the program ends on its SIGTERM, as it would have.  (A worker
  flagged would mean the kernel saw its stack untouched for over 2 s:
  the program not given a CPU once in that time, which no busy machine
  here comes near; it is not a speed the test waits on.)
- Raw Boost.Context (FCTX_PARKED 4 --flip: four tasks parked on stacks of
  their own): all four, truly parked, are flagged; once they run again
  (an 'f' on its stdin moves each), the same corotop stops flagging them
  (their proof ended), and the program exits 0 when its stdin closes.

- Boost.Coroutine2 (CORO2_PARKED 3, when given: four generators parked
  for good, each on Boost.Context's default 128 KiB stack, which glibc
  maps one by one): every generator, named, is proven idle and flagged.

Every wait has a deadline of 60 s (a bound for a hung run, not a speed
expectation).  Exit status: 0 every check holds, 1 one does not
(printed), 77 skipped.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

DEADLINE = 60


def fail(msg):
    print('FAIL ' + msg)
    sys.exit(1)


def flagged(snap):
    return sorted(c['name'] for c in snap['coroutines']
                  if 'lost-wakeup' in c['warn'])


class Watch:
    """One corotop -b -f json -p PID, read as it prints."""

    def __init__(self, cor, pid, env):
        self.p = subprocess.Popen([cor, '-b', '-n', '1000', '-d', '5',
                                   '-f', 'json', '-p', str(pid)], env=env,
                                  stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, encoding='utf-8')
        self.seen = []

    def until(self, what, cond):
        """Snapshots until cond(snap) holds: that one (fail at the
        deadline); every one seen goes to self.seen."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            line = self.p.stdout.readline()
            if not line:
                fail('%s: corotop ended (%s)' % (what, self.p.wait()))
            snap = json.loads(line)
            self.seen.append(snap)
            if cond(snap):
                return snap
        fail('%s: not within %d s; last: %s'
             % (what, DEADLINE, json.dumps(self.seen[-1:])))

    def end(self):
        self.p.kill()
        self.p.wait()


def check_uctx(cor, target, env, sanitized):
    u = subprocess.Popen([target, '3', '0', '--stuck', '--mmap', '--forever'],
                         stdout=subprocess.PIPE, encoding='utf-8')
    w = None
    try:
        if u.stdout.readline() != 'coroutines=3 forever\n':
            fail('uctx-target did not start')
        w = Watch(cor, u.pid, env)
        w.until('uctx-target: stuck_wait flagged',
                lambda s: 'stuck_wait' in flagged(s))
        # A few more snapshots: no worker ever flagged or proven idle.
        for _ in range(4):
            w.until('uctx-target', lambda s: True)
        for snap in w.seen:
            rows = [c for c in snap['coroutines'] if c['name'] == 'worker']
            bad = [c for c in rows if c['idle'] or c['warn']]
            if bad or (len(rows) != 3 and not sanitized):
                fail('uctx-target: workers %s' % json.dumps(rows))
            if flagged(snap) not in ([], ['stuck_wait']) and not sanitized:
                fail('uctx-target: flagged %s' % flagged(snap))
        last = w.seen[-1]
        stuck = [c for c in last['coroutines'] if c['name'] == 'stuck_wait']
        if len(stuck) != 1 or not stuck[0]['idle'] or \
                not stuck[0]['where'].startswith('stuck_wait+') or \
                last['scan']['idle_arms'] < 1 or \
                last['scan']['idle_unavailable']:
            fail('uctx-target: %s %s' % (last['scan'], json.dumps(stuck)))
    finally:
        if w:
            w.end()
        u.terminate()
    rest = u.stdout.read()
    if u.wait(timeout=DEADLINE) != -signal.SIGTERM or rest:
        fail('uctx-target ended with %d, then said %r' % (u.returncode, rest))
    print('ok   uctx-target: stuck_wait proven idle and flagged after 1 s%s; '
          'the workers yielding at the same depth never; ended on its '
          'SIGTERM' % ('' if sanitized else ', alone'))


def check_fctx(cor, target, env, sanitized):
    p = subprocess.Popen([target, '4', '--flip'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    w = None
    try:
        if p.stdout.readline().strip() != 'parked=4':
            fail('fctx-parked did not start')
        for _ in range(4):
            p.stdout.readline()
        w = Watch(cor, p.pid, env)
        def sure_tasks(s):
            return [c for c in s['coroutines']
                    if c['name'] == 'task' and not c['unsure']]

        # Every sure task flagged (a sanitizer's build also lists each
        # stack's dead parks, unsure: flagged with it, as in one mapping).
        snap = w.until('fctx-parked: the four tasks flagged',
                       lambda s: len(sure_tasks(s)) == 4 and
                       all('lost-wakeup' in c['warn'] for c in sure_tasks(s)))
        if not sanitized and flagged(snap) != ['task'] * 4:
            fail('fctx-parked: flagged %s' % flagged(snap))
        # They run (each parks again elsewhere): no proof any more.
        p.stdin.write('f\n')
        p.stdin.flush()
        snap = w.until('fctx-parked: unflagged once they ran',
                       lambda s: 'task' not in flagged(s))
        tasks = [c for c in snap['coroutines'] if c['name'] == 'task']
        if len(sure_tasks(snap)) != 4 or any(c['idle'] for c in tasks) or \
                (len(tasks) != 4 and not sanitized):
            fail('fctx-parked after a run: %s' % json.dumps(tasks))
    finally:
        if w:
            w.end()
        p.stdin.close()
    rest = p.stdout.read()
    if p.wait(timeout=DEADLINE) != 0 or rest:
        fail('fctx-parked ended with %d, then said %r' % (p.returncode, rest))
    print('ok   fctx-parked: its four parked tasks proven idle and flagged; '
          'unflagged once they ran; exited 0')


def check_coro2(cor, target, env):
    p = subprocess.Popen([target, '3'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    w = None
    names = ('gen_values(boost::coroutines2::detail::push_coroutine<int>&)',
             'stuck_deeper(boost::coroutines2::detail::'
             'push_coroutine<int>&, int)')

    def gens(s):
        return [c for c in s['coroutines'] if c['name'] in names and
                not c['unsure']]
    try:
        if p.stdout.readline().strip() != 'parked=4':
            fail('coro2-parked did not start')
        w = Watch(cor, p.pid, env)
        snap = w.until('coro2-parked: its generators flagged',
                       lambda s: len(gens(s)) >= 4 and
                       all(c['idle'] and 'lost-wakeup' in c['warn']
                           for c in gens(s)))
    finally:
        if w:
            w.end()
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('coro2-parked ended with %d' % p.returncode)
    print('ok   coro2-parked: its %d generators proven idle and flagged; '
          'exited 0' % len(gens(snap)))


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        return 2
    cor = sys.argv[1]
    with open(cor, 'rb') as f:
        text = f.read()
        sanitized = b'__asan_init' in text or b'__tsan_init' in text
    with tempfile.TemporaryDirectory() as where:
        cfg = os.path.join(where, 'corotop')
        os.makedirs(cfg)
        with open(os.path.join(cfg, 'config'), 'w') as f:
            f.write('lint.lost-wakeup.threshold = 1\n')
        env = dict(os.environ, XDG_CONFIG_HOME=where)
        check_uctx(cor, sys.argv[2], env, sanitized)
        check_fctx(cor, sys.argv[3], env, sanitized)
        if len(sys.argv) > 4:
            check_coro2(cor, sys.argv[4], env)
    return 0


if __name__ == '__main__':
    sys.exit(main())
