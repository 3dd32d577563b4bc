#!/usr/bin/env python3
"""scan_refresh: corotop's refreshes of a process it scans (issue 30).

    scan_refresh.py COROTOP BLOCK_TARGET [FCTX_PARKED]

BLOCK_TARGET (tests/targets/block_target.c) has a thread waiting in
epoll_wait, one in read, one running two ucontext coroutines, and its main
thread waiting for a line.  Run natively first, then under `corotop -b -f
json -p PID` (refreshes every second), then `--nonblocking`:

- every thread is a running row of its own (ID and TID its thread id),
  the waiters named by their functions (waiter_epoll, waiter_read);
- refreshes stop the running thread (threads_stopped >= 1, a pause
  reported) and never the waiting ones: the target's epoll_wait and read
  see no EINTR, and it prints and exits exactly as natively;
- a spin_task coroutine is seen running on the spinner's thread (its
  stack is its own mapping), waited for with a deadline;
- with --nonblocking no thread is ever stopped;
- FCTX_PARKED 4 --flip (raw Boost.Context tasks on stacks of their own,
  each 'f' on its input parking them again, alternately three frames
  deeper and at their entry): each task keeps one ID from pass to pass,
  its stack's range, though its saved area moves (each flip sent once a
  pass has seen the last one's parks).

Every wait has a deadline (60 s: a bound for a hung run, not a speed
expectation).  Exit status: 0 every check holds, 1 one does not.
"""
import json
import select
import subprocess
import sys
import time

DEADLINE = 60


def fail(msg):
    print('FAIL ' + msg)
    sys.exit(1)


def start(target):
    p = subprocess.Popen([target], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    ready, _, _ = select.select([p.stdout], [], [], DEADLINE)
    if not ready:
        p.kill()
        fail('block-target did not get ready')
    line = p.stdout.readline().strip()
    if not line.startswith('ready tids='):
        fail('block-target said %r' % line)
    tids = [int(t) for t in line.split('=')[1].split(',')]
    return p, tids


def finish(p):
    out, _ = p.communicate('\n', timeout=DEADLINE)
    return out.strip(), p.returncode


def snapshots(cor, pid, extra, until):
    """Batch JSON snapshots of pid, every half second, until until(list)
    holds or the deadline passes; the list."""
    b = subprocess.Popen([cor, '-b', '-f', 'json', '-d', '5', '-n', '240',
                          '-p', str(pid)] + extra,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, encoding='utf-8')
    got = []
    end = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([b.stdout], [], [], 1)
            if not ready:
                if b.poll() is not None:
                    break
                continue
            line = b.stdout.readline()
            if not line:
                break
            got.append(json.loads(line))
            if until(got):
                break
    finally:
        b.terminate()
        try:
            b.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            b.kill()
    if not got:
        fail('corotop %s printed no snapshot: %s'
             % (' '.join(extra), b.stderr.read()))
    return got


def check_flip(cor, target):
    tasks = 4
    p = subprocess.Popen([target, str(tasks), '--flip'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         encoding='utf-8')
    ready, _, _ = select.select([p.stdout], [], [], DEADLINE)
    if not ready or p.stdout.readline().strip() != 'parked=%d' % tasks:
        p.kill()
        fail('fctx-parked --flip did not get ready')

    def task_rows(g):
        return [c for c in g['coroutines'] if c.get('name') == 'task']

    def deeper(c):
        frames = (c.get('parked_stack') or {}).get('frames', [])
        return any('descend' in f['symbol'] for f in frames)

    # Parked at its entry; then, one flip ('f') after another, deeper and
    # at its entry again, each seen by a pass after the flip.
    want = [False, True, False]
    state = {'step': 0, 'after': 0}

    def parked_as(g, deep):
        rows = task_rows(g)
        return len(rows) == tasks and all(
            c['state'] == 'suspended' and deeper(c) == deep for c in rows)

    def until(got):
        g = got[-1]
        if g['scan']['passes'] <= state['after'] or \
                not parked_as(g, want[state['step']]):
            return False
        state['step'] += 1
        if state['step'] == len(want):
            return True
        state['after'] = g['scan']['passes']
        p.stdin.write('f')
        p.stdin.flush()
        return False

    try:
        got = snapshots(cor, p.pid, [], until)
    finally:
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('fctx-parked --flip did not exit 0')
    if state['step'] != len(want):
        fail('fctx-parked --flip: step %d of %d not seen in %d snapshots; '
             'the last: %s' % (state['step'], len(want), len(got),
                               [(c['state'], deeper(c))
                                for c in task_rows(got[-1])]))
    ids = {c['probe_id'] for g in got for c in task_rows(g)}
    if len(ids) != tasks:
        fail('fctx-parked --flip: %d task IDs over %d passes (want %d, '
             'one per stack): %s' % (len(ids), got[-1]['scan']['passes'],
                                     tasks, sorted(map(hex, ids))))
    print('ok   fctx-parked --flip: %d tasks, one ID each over %d passes, '
          'parked at both depths' % (tasks, got[-1]['scan']['passes']))


def main():
    cor, target = sys.argv[1], sys.argv[2]

    native = subprocess.Popen([target], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, encoding='utf-8')
    out, _ = native.communicate('\n', timeout=DEADLINE)
    want = (out.splitlines()[-1], native.returncode)
    if want != ('epoll=1 read=1 eintr=0', 0):
        fail('natively, block-target said %r, status %d' % want)
    print('ok   natively: %s, status %d' % want)

    # A sanitizer's build: its frames keep old parks on the coroutines'
    # stacks (docs/SCAN.md), so a stack seldom holds one known context
    # alone, which is what ties a running one to its thread: that is
    # checked in the plain build only.
    with open(target, 'rb') as f:
        text = f.read()
        sanitized = b'__asan_init' in text or b'__tsan_init' in text

    p, (epoller, reader, spinner) = start(target)
    pid = p.pid
    threads = {pid, epoller, reader, spinner}

    def rows(s):
        return s['coroutines']

    def thread_rows(s):
        return {c['probe_id']: c for c in rows(s)
                if c['probe_id'] in threads}

    def seen_running_on_spinner(s):
        return any(c['probe_id'] not in threads and c['state'] == 'running'
                   and c.get('tid') == spinner
                   and 'spin_task' in (c.get('name', '') + c.get('where', ''))
                   for c in rows(s))

    def spin_rows(g):
        return [c for c in rows(g) if c['probe_id'] not in threads and
                'spin_task' in c.get('name', '')]

    def depths(got):
        """The parks seen: (ID, deeper?) of each parked spin_task."""
        seen = set()
        for g in got:
            for c in spin_rows(g):
                if c['state'] != 'suspended':
                    continue
                frames = (c.get('parked_stack') or {}).get('frames', [])
                seen.add((c['probe_id'],
                          any('spin_deeper' in f['symbol'] for f in frames)))
        return seen

    def enough(got):
        s = got[-1]
        return (s['scan']['refreshes'] >= 3 and
                len(thread_rows(s)) == 4 and
                (sanitized or depths(got)) and
                any(g['scan']['threads_stopped'] >= 1 for g in got) and
                (sanitized or any(seen_running_on_spinner(g) for g in got)))

    got = snapshots(cor, pid, [], enough)
    last = got[-1]
    sc = last['scan']
    if sc['refreshes'] < 3:
        fail('%d refreshes in %d snapshots' % (sc['refreshes'], len(got)))
    tr = thread_rows(last)
    if set(tr) != threads:
        fail('thread rows %s, threads %s' % (sorted(tr), sorted(threads)))
    for tid, c in tr.items():
        if c['state'] != 'running' or c.get('tid') != tid:
            fail('thread %d row: %s' % (tid, c))
    # In a sanitizer's build the walk may end in its interceptor of the
    # call (its frames have no CFI past it): the call's own frame then.
    for tid, fn, call in ((epoller, 'waiter_epoll', 'epoll_wait'),
                          (reader, 'waiter_read', 'read')):
        frames = (tr[tid].get('parked_stack') or {}).get('frames', [])
        if not any(fn in f['symbol'] for f in frames) and not (
                sanitized and any(f['symbol'].startswith(call + '+')
                                  for f in frames)):
            fail('thread %d (%s): its stack %r' % (tid, fn, tr[tid]))
        if tr[tid]['warn']:
            fail('thread %d (%s), waiting in the kernel, warned: %s'
                 % (tid, fn, tr[tid]['warn']))
    stopped = [g['scan']['threads_stopped'] for g in got]
    if not any(n >= 1 for n in stopped) or max(stopped) > 2:
        fail('threads stopped per refresh: %s (the spinner, and main '
             'when it runs)' % stopped)
    if not any(g['scan']['pause_ns'] > 0 for g in got):
        fail('no pause reported: %s' % [g['scan'] for g in got[-1:]])
    if not sanitized and not any(seen_running_on_spinner(g) for g in got):
        fail('no spin_task row seen running on thread %d in %d snapshots'
             % (spinner, len(got)))
    print('ok   %d refreshes: 4 thread rows, the spinner stopped (%s), a '
          'spin_task seen running on it' % (sc['refreshes'],
                                            sorted(set(stopped))))
    ids = {i for i, _ in depths(got)}
    if len(ids) > 2 or (not sanitized and not ids):
        fail('spin_task parks seen (id, deeper): %s: two coroutines, '
             'one ID each' % sorted(depths(got)))

    got = snapshots(cor, pid, ['--nonblocking'],
                    lambda g: g[-1]['scan']['refreshes'] >= 2)
    for g in got:
        if not g['scan']['nonblocking'] or g['scan']['threads_stopped']:
            fail('--nonblocking: %s' % g['scan'])
    if got[-1]['scan']['refreshes'] < 2:
        fail('--nonblocking: %d refreshes' % got[-1]['scan']['refreshes'])
    print('ok   --nonblocking: %d refreshes, no thread stopped'
          % got[-1]['scan']['refreshes'])

    if len(sys.argv) > 3:
        with open(sys.argv[3], 'rb') as f:
            text = f.read()
        if b'__asan_init' in text or b'__tsan_init' in text:
            # A sanitizer's frames keep old parks of every task
            # (docs/SCAN.md): the plain build checks identities.
            print('SKIP fctx-parked --flip: a sanitizer\'s build')
        else:
            check_flip(cor, sys.argv[3])

    res = finish(p)
    if res != want:
        fail('under corotop, block-target said %r, status %d; natively '
             '%r, %d' % (res + want))
    print('ok   under corotop: %s, status %d, as natively' % res)


if __name__ == '__main__':
    main()
