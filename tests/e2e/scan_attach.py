#!/usr/bin/env python3
"""scan_attach: corotop -p on a process that was never prepared (no probe,
no preload, no ppt buffer) that runs raw Boost.Context tasks: it scans the
process's memory and lists every parked task, named by its function, as
`corotop dump -p PID`, `corotop dump -p PID --json` and batch JSON show
it; the process runs on and ends as it would have.  A ucontext scheduler
(UCTX_TARGET --stuck --hold, glibc's swapcontext) shows its stuck
coroutine the same way, and `corotop serve -p` serves it.  `sleep`, which
has no coroutine, is scanned and
shows none but its thread; `--no-scan` refuses it, as before.

    scan_attach.py COROTOP FCTX_PARKED UCTX_TARGET [CORO2_PARKED|-
                   [ASIO_ECHO]]

CORO2_PARKED (Boost.Coroutine2 generators, each parked inside
gen_values, one three frames deep in stuck_deeper) and ASIO_ECHO
(boost::asio::spawn: an acceptor and one coroutine per connection) are
checked when given: every parked coroutine found and named; Coroutine2's
extra rows are each generator's first park at its entry (fiber_entry),
kept by its control block at its stack's top (docs/SCAN.md counts them);
asio's are none.

FCTX_PARKED (tests/targets/fctx_parked.c) prints each parked task's
fcontext_t: the truth the scan is held to.  In a sanitizer build the scan
also finds contexts nobody parked (ASan's own frames, TSan's runtime:
docs/SCAN.md); only the plain build asserts there are none.  Every wait has a deadline of
60 s (a bound for a hung run, not a speed expectation).
Exit status: 0 every check holds, 1 one does not (printed), 77 skipped.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TASKS = 16
DEADLINE = 60


def fail(msg):
    print('FAIL ' + msg)
    sys.exit(1)


def corotop(args):
    r = subprocess.run(args, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=DEADLINE, encoding='utf-8', errors='replace')
    return r.returncode, r.stdout, r.stderr


def split_threads(what, rows, tids):
    """Each thread of the process (tids) is a running row of its own,
    its id its thread's (refreshes read their registers): checked, and
    the other rows returned."""
    threads = {c['probe_id']: c for c in rows if c['probe_id'] in tids}
    if set(threads) != set(tids) or any(
            c['state'] != 'running' or c['tid'] != c['probe_id']
            for c in threads.values()):
        fail('%s: thread rows %s, threads %s'
             % (what, json.dumps(list(threads.values())), sorted(tids)))
    return [c for c in rows if c['probe_id'] not in tids]


def check_rows(what, rows, kept, sanitized, tids):
    scanned = [c for c in rows if c.get('source') == 'scan']
    if len(scanned) != len(rows):
        fail('%s: %d of %d rows without "source":"scan"'
             % (what, len(rows) - len(scanned), len(rows)))
    rows = split_threads(what, rows, tids)
    by_id = {c['probe_id']: c for c in rows}
    for at in kept:
        c = by_id.get(at)
        if c is None:
            fail('%s: task at %#x not listed' % (what, at))
        if c['unsure'] or c['state'] != 'suspended' or c['name'] != 'task':
            fail('%s: task at %#x listed as %s' % (what, at, json.dumps(c)))
        if not c['where'].startswith('task+'):
            fail('%s: task at %#x parked at %s' % (what, at, c['where']))
        frames = c.get('parked_stack', {}).get('frames', [])
        if not frames or not frames[0]['symbol'].startswith('task+'):
            fail('%s: task at %#x has stack %s' % (what, at, frames))
        if c['age_ns'] != 0 or c['switches'] != 0:
            fail('%s: task at %#x: age and switches not 0 (unknown)'
                 % (what, at))
    extra = [c for c in rows if c['probe_id'] not in kept]
    print('ok   %s: %d tasks listed, %d other contexts (%d unsure)'
          % (what, len(kept), len(extra), sum(c['unsure'] for c in extra)))
    if extra and not sanitized:
        fail('%s: contexts nobody parked: %s'
             % (what, [hex(c['probe_id']) for c in extra]))


def task_ids(pid):
    """The thread ids of process pid."""
    return sorted(int(t) for t in os.listdir('/proc/%d/task' % pid))


def first_scanned(cor, pid):
    """The rows of `corotop -b -n 1 -d 5 -f json -p PID`'s one snapshot:
    batch mode holds a scanned process's first snapshot until the first
    scan is in (a sanitizer's process takes a while to scan), so it lists
    what the scan found, never an empty table."""
    rc, out, err = corotop([cor, '-b', '-n', '1', '-d', '5', '-f', 'json',
                            '-p', str(pid)])
    if rc != 0:
        fail('batch json: exit %d: %s' % (rc, err))
    snap = json.loads(out.splitlines()[0])
    if snap['scan']['passes'] < 1:
        fail('batch json: the snapshot came before the first scan: %s'
             % snap['scan'])
    return snap['coroutines']


def check_serve(cor, pid):
    """corotop serve -p PID on the same process: /snapshot lists the
    stuck coroutine with "source":"scan" once the first scan is in (polled
    within a deadline), and /metrics counts suspended coroutines."""
    c = subprocess.Popen([cor, 'serve', '--listen', '127.0.0.1:0', '-p',
                          str(pid)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         encoding='utf-8', errors='replace')
    try:
        line = c.stderr.readline()
        m = re.search(r'listening on (http://127\.0\.0\.1:\d+)/', line)
        if not m:
            fail('serve: said %r' % line)
        url = m.group(1)
        deadline = time.monotonic() + DEADLINE
        while True:
            with urllib.request.urlopen(url + '/snapshot',
                                        timeout=DEADLINE) as r:
                snap = json.loads(r.read())
            if snap['scan']['passes'] >= 1:
                break
            if time.monotonic() > deadline:
                fail('serve: no scan within %d s' % DEADLINE)
            time.sleep(0.1)
        with urllib.request.urlopen(url + '/metrics', timeout=DEADLINE) as r:
            metrics = r.read().decode()
    finally:
        c.terminate()
        c.wait(timeout=DEADLINE)
    rows = snap['coroutines']
    stuck = [x for x in rows if x['name'] == 'stuck_wait']
    if len(stuck) != 1 or stuck[0].get('source') != 'scan' or \
            not snap['target']['scanned']:
        fail('serve: /snapshot %s' % json.dumps(rows))
    # At least the stuck one: a refresh between the two requests may
    # have rescanned (a sanitizer's extra contexts come and go).
    m = re.search(r'^corotop_coroutines\{state="suspended"\} (\d+)$',
                  metrics, re.M)
    if not m or int(m.group(1)) < 1:
        fail('serve: /metrics counts no suspended coroutine')
    print('ok   serve -p: /snapshot lists stuck_wait from the scan, '
          '/metrics counts %s suspended' % m.group(1))


def check_coro2(cor, target, sanitized):
    gens = 6
    p = subprocess.Popen([target, str(gens)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        line = p.stdout.readline().strip()
        if line != 'parked=%d' % (gens + 1):
            fail('coro2-parked said %r' % line)
        tids = task_ids(p.pid)
        rc, out, err = corotop([cor, 'dump', '-p', str(p.pid), '--json'])
    finally:
        p.stdin.close()
    if p.wait(timeout=DEADLINE) != 0:
        fail('coro2-parked did not exit 0')
    if rc != 0:
        fail('dump --json of coro2-parked: exit %d: %s' % (rc, err))
    rows = split_threads('coro2-parked',
                         json.loads(out.splitlines()[0])['coroutines'], tids)
    named = [c['name'] for c in rows]
    gen = named.count('gen_values(boost::coroutines2::detail::'
                      'push_coroutine<int>&)')
    stuck = named.count('stuck_deeper(boost::coroutines2::detail::'
                        'push_coroutine<int>&, int)')
    # A sanitizer's frames keep old parks of stuck_deeper's recursion
    # too: there, none may be missing; in the plain build, none extra.
    if gen < gens or stuck < 1 or \
            (not sanitized and (gen != gens or stuck != 1)):
        fail('coro2-parked: rows %s' % named)
    extra = [c for c in rows if not c['name']]
    for c in extra:
        if 'fiber_entry' not in c['where'] and not sanitized:
            fail('coro2-parked: an extra row parked at %s' % c['where'])
    print('ok   coro2-parked: %d generators found and named; %d entry '
          'parks listed too' % (gens + 1, len(extra)))


def check_asio(cor, target):
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
        tids = task_ids(p.pid)
        rc, out, err = corotop([cor, 'dump', '-p', str(p.pid), '--json'])
    finally:
        for s in socks:
            s.close()
        p.terminate()
    if p.wait(timeout=DEADLINE) != 0:
        fail('asio-echo did not exit 0 on SIGTERM')
    if rc != 0:
        fail('dump --json of asio-echo: exit %d: %s' % (rc, err))
    rows = split_threads('asio-echo',
                         json.loads(out.splitlines()[0])['coroutines'], tids)
    stacks = [' '.join(f['symbol'] for f in
                       c.get('parked_stack', {}).get('frames', []))
              for c in rows]
    echo = sum('asio_echo.cpp:29' in st for st in stacks)
    accept = sum('asio_echo.cpp:58' in st for st in stacks)
    if echo != 3 or accept != 1 or len(rows) != 4 or \
            any(c['unsure'] for c in rows):
        fail('asio-echo: %d echo, %d accept of %d rows: %s'
             % (echo, accept, len(rows), stacks))
    print('ok   asio-echo: the acceptor and 3 connections, nothing else')


def main():
    cor, target = sys.argv[1], sys.argv[2]
    with open(target, 'rb') as f:
        text = f.read()
        sanitized = b'__asan_init' in text or b'__tsan_init' in text
    p = subprocess.Popen([target, str(TASKS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        first = p.stdout.readline().strip()
        if first != 'parked=%d' % TASKS:
            fail('the target said %r' % first)
        kept = set()
        for _ in range(TASKS):
            line = p.stdout.readline().strip()
            if not line.startswith('fctx='):
                fail('the target said %r' % line)
            kept.add(int(line[5:], 16))

        rc, out, err = corotop([cor, 'dump', '-p', str(p.pid), '--json'])
        if rc != 0:
            fail('dump --json: exit %d: %s' % (rc, err))
        snap = json.loads(out.splitlines()[0])
        if not snap['target']['attached'] or not snap['target']['scanned']:
            fail('dump --json: target %s' % snap['target'])
        if snap['scan']['passes'] < 1 or snap['scan']['found'] < TASKS:
            fail('dump --json: scan %s' % snap['scan'])
        check_rows('dump --json', snap['coroutines'], kept, sanitized,
                   task_ids(p.pid))

        rc, out, err = corotop([cor, 'dump', '-p', str(p.pid)])
        if rc != 0:
            fail('dump: exit %d: %s' % (rc, err))
        tasks = [l for l in out.splitlines() if '"task" suspended' in l]
        frames = [l for l in out.splitlines()
                  if l.startswith('      task+')]
        if len(tasks) < TASKS or len(frames) < TASKS:
            fail('dump: %d task lines, %d frames:\n%s'
                 % (len(tasks), len(frames), out))
        if not sanitized and 'Suspended (%d)' % TASKS not in out:
            fail('dump: no "Suspended (%d)":\n%s' % (TASKS, out))
        if 'scanned' not in out.splitlines()[0]:
            fail('dump: first line %r' % out.splitlines()[0])
        print('ok   dump: %d tasks with their stacks' % len(tasks))

        check_rows('batch json', first_scanned(cor, p.pid), kept,
                   sanitized, task_ids(p.pid))
    finally:
        p.stdin.close()
    rest = p.stdout.read()
    rc = p.wait(timeout=DEADLINE)
    if rc != 0 or rest:
        fail('the target ended with %d, then said %r' % (rc, rest))
    print('ok   the target ran on and exited 0')

    # A ucontext scheduler: its stuck coroutine, parked in stuck_wait
    # forever, is found and named; its workers ended after their last
    # yield without calling anything more, so their ucontext_t still look
    # parked (docs/SCAN.md counts them): only their names are checked.
    u = subprocess.Popen([sys.argv[3], '3', '2', '--stuck', '--hold'],
                         stdout=subprocess.PIPE, encoding='utf-8')
    try:
        line = u.stdout.readline()
        if not line.startswith('coroutines=3 '):
            fail('uctx-target said %r' % line)
        rc, out, err = corotop([cor, 'dump', '-p', str(u.pid), '--json'])
        check_serve(cor, u.pid)
    finally:
        u.kill()
        u.wait()
    if rc != 0:
        fail('dump --json of uctx-target: exit %d: %s' % (rc, err))
    rows = split_threads('uctx-target',
                         json.loads(out.splitlines()[0])['coroutines'],
                         [u.pid])
    stuck = [c for c in rows if c['name'] == 'stuck_wait']
    if len(stuck) != 1 or not stuck[0]['where'].startswith('stuck_wait+') \
            or stuck[0]['state'] != 'suspended' or stuck[0]['unsure']:
        fail('uctx-target: stuck_wait not found as one sure row: %s'
             % json.dumps(rows))
    others = [c['name'] for c in rows if c['name'] != 'stuck_wait']
    if any(n != 'worker' for n in others) and not sanitized:
        fail('uctx-target: rows %s' % others)
    print('ok   uctx-target: stuck_wait found; %d ended workers listed too'
          % len(others))

    if len(sys.argv) > 4 and sys.argv[4] != '-':
        check_coro2(cor, sys.argv[4], sanitized)
    if len(sys.argv) > 5:
        check_asio(cor, sys.argv[5])

    # A process with no coroutine at all: scanned, no context found, its
    # one thread listed (running, with its stack); with --no-scan, the
    # old refusal with its advice.
    s = subprocess.Popen(['sleep', '60'])
    try:
        rc, out, err = corotop([cor, 'dump', '-p', str(s.pid)])
        rc2, out2, err2 = corotop([cor, 'dump', '--no-scan', '-p',
                                   str(s.pid)])
    finally:
        s.kill()
        s.wait()
    if rc != 0 or ': 0 contexts' not in out or 'Running (1)' not in out \
            or 'running, thread %d,' % s.pid not in out:
        fail('dump of sleep: exit %d: %s%s' % (rc, out, err))
    if rc2 != 1 or 'publishes no ppt buffer' not in err2:
        fail('dump --no-scan of sleep: exit %d: %s' % (rc2, err2))
    print('ok   a process without coroutines: none found, its thread '
          'listed; --no-scan refuses it, as before')
    return 0


if __name__ == '__main__':
    sys.exit(main())
