#!/usr/bin/env python3
"""replay_live.py: a recording replays what the live view showed (issue 28).

  replay_live.py live CORTOP FIBER_TARGET
      Runs the Boost.Fiber target (fibers ping-ponging on channels over two
      threads, one stuck on a condition variable; traced with no code
      change, through the preload) under `corotop -b -f json --record`,
      then replays the recording with `--at` at the very moments of the
      live snapshots, and compares them coroutine by coroutine:
        - every coroutine in both: the same name and kind (a name the
          live view did not have yet, its symbols still loading, may be
          the replay's; so may a WHERE it showed in hex);
        - a coroutine whose state began at least STABLE_MS before the
          moment, in both (the live view shows what the harvest had read
          by then; a transition just before the moment may not be in it
          yet): the same state, WHERE, learned mark and parked stack.
      It fails unless the comparison covers the stuck fiber with its
      program WHERE and parked stack, a dispatcher, and a fiber named by
      the program's lambda; and unless `--at end` (the last moment the
      program ran) shows its fibers parked, not all dead.

  replay_live.py short CORTOP DEMO
      The bundled demo for one second, recorded with --parked-stacks: its
      stuck sessions park at the start and are closed at its exit, before
      the engine's rotation collected their stacks.  The recording still
      holds them: `convert --to folded` has the stuck sessions' stack, no
      frame of it in hex (the makecontext trampoline at its root named),
      and the replay at the end shows session-1's parked stack.

  replay_live.py fixture CORTOP FILE
      A recording made by an earlier corotop (before names, kinds and
      WHERE were recorded; tests/e2e/fixtures/demo-v0.heph.zst, the bundled
      demo) still replays: no problems, its sessions named, the stuck ones
      parked at their line at the end.
"""
import json
import os
import subprocess
import sys
import tempfile

STABLE_MS = 50


def fail(msg):
    print('replay_live.py: FAIL: ' + msg)
    sys.exit(1)


def snapshots(text):
    return [json.loads(line) for line in text.splitlines()
            if line.startswith('{')]


def replay_at(corotop, path, at):
    r = subprocess.run([corotop, '-b', '-f', 'json', '--replay', path,
                        '--at', at], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        fail('--replay %s --at %s: status %d: %s' % (
            path, at[:60], r.returncode, r.stderr.strip()))
    if r.stderr.strip():
        fail('--replay %s: said %r' % (path, r.stderr.strip()))
    return snapshots(r.stdout)


def stack(c):
    ps = c.get('parked_stack') or {}
    return [f['symbol'] for f in ps.get('frames', [])]


def compare(live, rp):
    """Mismatches, and what the comparison covered."""
    bad, seen = [], {'stable': 0, 'stuck': 0, 'dispatcher': 0,
                     'lambda': 0, 'program_where': 0}
    for v, r in zip(live, rp):
        if v['ts'] != r['ts']:
            bad.append('replayed at %d, live at %d' % (r['ts'], v['ts']))
            continue
        rc = {c['id']: c for c in r['coroutines']}
        for c in v['coroutines']:
            x = rc.get(c['id'])
            if x is None:
                bad.append('ts %d: id %d (%s) live, not replayed' % (
                    v['ts'], c['id'], c['name']))
                continue
            # The live view may show a name as "" while the symbols it
            # comes from are still loading; the recording names it.
            for k in ('name', 'kind'):
                if c[k] != x[k] and not (k == 'name' and not c[k]):
                    bad.append('ts %d id %d %s: live %r, replay %r' % (
                        v['ts'], c['id'], k, c[k], x[k]))
            seen['dispatcher'] += c['kind'] == 'dispatcher'
            seen['lambda'] += 'lambda' in c['name']
            stable = (c['in_state_ns'] >= STABLE_MS * 1000000 and
                      x['in_state_ns'] == c['in_state_ns'])
            if not stable:
                continue
            seen['stable'] += 1
            for k in ('state', 'where', 'where_learned'):
                if c[k] != x[k] and not (k == 'where' and
                                         c[k].startswith('0x')):
                    bad.append('ts %d id %d %s: live %r, replay %r' % (
                        v['ts'], c['id'], k, c[k], x[k]))
            if stack(c) != stack(x):
                bad.append('ts %d id %d parked stack: live %r, replay %r'
                           % (v['ts'], c['id'], stack(c), stack(x)))
            if c['state'] == 'suspended' and '.cpp:' in c['where']:
                seen['program_where'] += 1
                if 'stuck_wait_for_signal' in c['name'] and stack(c):
                    seen['stuck'] += 1
    return bad, seen


def converted_words(corotop, rec, tmp):
    """The chrome tracks' names and the folded lines of the recording."""
    chrome = os.path.join(tmp, 'trace.json')
    folded = os.path.join(tmp, 'trace.folded')
    for to, out in (('chrome', chrome), ('folded', folded)):
        r = subprocess.run([corotop, 'convert', '--to', to, rec, '-o', out],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail('convert --to %s: status %d: %s' % (to, r.returncode,
                                                      r.stderr))
    d = json.load(open(chrome))
    ev = d['traceEvents'] if isinstance(d, dict) else d
    tracks = {e['args'].get('name') for e in ev
              if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    return tracks, open(folded).read().splitlines()


def test_live(corotop, target):
    with tempfile.TemporaryDirectory(prefix='corotop-replay.') as tmp:
        rec = os.path.join(tmp, 'fiber.heph')
        r = subprocess.run([corotop, '-b', '-f', 'json', '-d', '5', '-n',
                            '8', '--record', rec, '--', target, '2',
                            '1000000', '--stuck', '--pace'],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail('live run: status %d: %s' % (r.returncode, r.stderr))
        live = snapshots(r.stdout)
        if len(live) != 8:
            fail('live run: %d snapshots, want 8' % len(live))
        t0 = replay_at(corotop, rec, 'start')[0]['replay']['t0']
        at = ','.join('%dns' % (v['ts'] - t0) for v in live)
        rp = replay_at(corotop, rec, at)
        if len(rp) != len(live):
            fail('%d replayed snapshots for %d live' % (len(rp), len(live)))
        bad, seen = compare(live, rp)
        end = replay_at(corotop, rec, 'end')[0]
        words = converted_words(corotop, rec, tmp)
        if bad and os.environ.get('REPLAY_LIVE_KEEP'):
            import shutil
            shutil.copy(rec, os.environ['REPLAY_LIVE_KEEP'])
            with open(os.environ['REPLAY_LIVE_KEEP'] + '.live', 'w') as f:
                f.write('\n'.join(json.dumps(v) for v in live))
    print('replay_live.py: live: %d snapshots compared: %s' % (
        len(live), ', '.join('%s %d' % kv for kv in sorted(seen.items()))))
    if bad:
        fail('%d differences:\n  ' % len(bad) + '\n  '.join(bad[:20]))
    # Not empty (how many depends on how soon the walks came).
    for k, want in (('stable', 4), ('stuck', 1), ('dispatcher', 1),
                    ('lambda', 1), ('program_where', 1)):
        if seen[k] < want:
            fail('the comparison covered %s %d times, want %d or more' % (
                k, seen[k], want))
    parked = [c for c in end['coroutines'] if c['state'] == 'suspended'
              and c['kind'] == 'coroutine']
    if not parked:
        fail('--at end: no fiber parked (%s)' % end['counts'])
    tracks, folded = words
    for want in ('stuck_wait_for_signal()', 'main::{lambda()#2}',
                 'main::{lambda()#3}', 'boost.fiber dispatcher', 'root'):
        if want not in tracks:
            fail('convert --to chrome: no track named %r (%s)' % (
                want, sorted(tracks)))
    if any('fiber_entry' in t for t in tracks):
        fail('convert --to chrome: a track named by Boost: %s' % tracks)
    if not any(';stuck_wait_for_signal()' in ln for ln in folded):
        fail('convert --to folded: the stuck fiber is missing')
    if any(f.startswith('0x') for ln in folded
           for f in ln.rsplit(' ', 1)[0].split(';')):
        fail('convert --to folded: a frame in hex')


def test_short(corotop, demo):
    with tempfile.TemporaryDirectory(prefix='corotop-replay.') as tmp:
        rec = os.path.join(tmp, 'demo.heph')
        folded = os.path.join(tmp, 'demo.folded')
        r = subprocess.run([corotop, '-b', '-f', 'json', '-d', '5',
                            '--parked-stacks', '--record', rec, '--', demo,
                            '-c', '40', '--stuck', '2', '--spawn-rate', '20',
                            '-d', '1'], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            fail('demo run: status %d: %s' % (r.returncode, r.stderr))
        r = subprocess.run([corotop, 'convert', '--to', 'folded', rec, '-o',
                            folded], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            fail('convert: status %d: %s' % (r.returncode, r.stderr))
        lines = open(folded).read().splitlines()
        end = replay_at(corotop, rec, 'end')[0]
    stuck = [ln for ln in lines if ';stuck_wait_for_reply;' in ln]
    if not stuck:
        fail('folded: no stuck session among %d stacks:\n%s' % (
            len(lines), '\n'.join(lines)))
    frames = stuck[0].rsplit(' ', 1)[0].split(';')
    if any(f.startswith('0x') for f in frames):
        fail('folded: a frame in hex: %s' % stuck[0])
    s1 = [c for c in end['coroutines'] if c['name'] == 'session-1']
    if not s1 or not stack(s1[0]):
        fail('--at end: session-1 without its parked stack: %s' % s1)
    print('replay_live.py: short: %d folded stacks, the stuck one %s' % (
        len(lines), ';'.join(frames)))


def test_fixture(corotop, path):
    snaps = replay_at(corotop, path, '50%,end')
    mid, end = snaps
    if end['counts']['seen'] != 59:
        fail('fixture: %d coroutines seen, want 59' % end['counts']['seen'])
    names = {c['name'] for c in end['coroutines']}
    for want in ('session-1', 'session-2', 'spawner', 'burn-parse'):
        if want not in names:
            fail('fixture: no coroutine named %r (%s)' % (
                want, sorted(names)))
    stuck = [c for c in end['coroutines'] if c['name'] in ('session-1',
                                                            'session-2')]
    for c in stuck:
        if (c['state'] != 'suspended' or
                not c['where'].startswith('stuck_wait_for_reply+0xc '
                                          '(workload.c:354)')):
            fail('fixture: %s at the end: %s at %s' % (
                c['name'], c['state'], c['where']))
    if end['counts']['suspended'] < 40:
        fail('fixture: at the end %s: the program still ran' % end['counts'])
    print('replay_live.py: fixture: %d coroutines, %s at the end' % (
        end['counts']['seen'], end['counts']))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ('live', 'short',
                                                  'fixture'):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == 'live':
        test_live(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == 'short':
        test_short(sys.argv[2], sys.argv[3])
    else:
        test_fixture(sys.argv[2], sys.argv[3])


if __name__ == '__main__':
    main()
