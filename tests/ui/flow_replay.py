"""flow_replay: the 'replay' UI flow (corotop --replay), for harness.py.

The recording is heph-fixture's (heph_fixture.c): fixed bytes, ten
seconds, eight coroutines on two threads.  FIXTURE below is what that
program writes, transcribed from it; the flow computes from FIXTURE what
corotop must show at each position -- the header's totals, the table's
rows, the detail view's line and transitions -- and checks the screen's
own text against it, unmasked, besides comparing each screen with its
golden (which masks durations and rates, as for the live flows).

Replaying is deterministic but for playing, which moves with the clock:
that step has no golden and checks only that the position advances past
where it started (5 s, known), whichever state the first capture after
Space finds (still playing, or already stopped at the end however long
the machine took to draw it); the screen it stops at (the end, paused
again) has one.  A dead coroutine's linger counts the recording's time:
the flow sets it to LINGER in corotop's config (the flows' default, a
day, would keep 1004 listed to the end).
"""
import os
import re
import subprocess

import harness as h
import normalize as nz

# ---- the recording, as heph_fixture.c writes it ----------------------------

END = 10000       # ms: the recording's length (corotop_end)
LINGER = 3000     # ms: a dead coroutine stays visible (config linger)
TID = {1: 4243, 2: 4243, 3: 4244, 4: 4244, 5: 4244, 6: 4243, 7: 4244,
       8: 4244}
BIRTH = {1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 6000}
FIXTURE = {  # id: [(start ms, end ms, 'R' running | 'S' suspended)]
    1: [(0, 500, 'R'), (500, 2000, 'S'), (2000, 2500, 'R'),
        (2500, 7000, 'S'), (7000, 7500, 'R'), (7500, END, 'S')],
    2: [(500, 1500, 'R'), (1500, 3500, 'S'), (3500, 4500, 'R'),
        (4500, 6000, 'S'), (6000, 6500, 'R'), (6500, END, 'S')],
    3: [(0, 1000, 'R'), (1000, 4500, 'S'), (4500, 5500, 'R'),
        (5500, END, 'S')],
    4: [(1000, 2000, 'R'), (2000, 3500, 'S'), (3500, 4000, 'R')],  # dies
    5: [(0, 2000, 'S'), (2000, 2500, 'R'), (2500, 5500, 'S'),
        (5500, 6000, 'R'), (6000, 8000, 'S'), (8000, 8500, 'R'),
        (8500, END, 'S')],
    6: [(0, END, 'S')],
    7: [(0, 9000, 'S'), (9000, END, 'R')],
    8: [(6000, 7000, 'R'), (7000, END, 'S')],
}
LOSSES = [(1, 5000, 3)]  # (id, ms, count)
# Coroutine 1's stack while parked (2.5 s to 7 s), named by the recording.
PARKED = [' Parked stack (recorded):',
          '   #0  chan_recv+0x40 (chan.c:55)',
          '   #1  dispatch+0x61 (server.c:88)',
          '   #2  accept_loop+0x2b (server.c:44)']
NAME = 'fixture.heph (fixture-server --port 8080)'


def probe(k):
    return '%x' % (0x1000 + k)


def dur(ms):
    """duration_format (src/common/duration.h) of whole milliseconds."""
    if ms == 0:
        return '0ns'
    return '%.1fms' % ms if ms < 1000 else '%.1fs' % (ms / 1000)


def coro_at(k, t):
    """Coroutine k at t ms as corotop models it, or None (not visible)."""
    ivs = FIXTURE[k]
    death = ivs[-1][1] if ivs[-1][1] < END else None
    dead = death is not None and t >= death
    if BIRTH[k] > t or (dead and t - death > LINGER):
        return None
    begun = [iv for iv in ivs if iv[0] <= t]
    stop = death if dead else t
    run = sum(min(e, stop) - s for s, e, st in begun if st == 'R')
    if dead:
        state, since, age = 'D', death, death - BIRTH[k]
    elif begun:
        state, since, age = begun[-1][2], begun[-1][0], t - BIRTH[k]
    else:  # born, no transition yet
        state, since, age = 'S', BIRTH[k], t - BIRTH[k]
    return {
        'ID': probe(k), 'S': state, 'TID': str(TID[k]) if begun else '-',
        'AGE': dur(age), 'IN-STATE': dur(t - since),
        'SWITCHES': str(len(begun)),
        'SW/s': str(sum(1 for iv in begun if iv[0] > t - 1000)),
        'RUN%': '%.1f' % (100.0 * run / age if age else 0.0),
        'LOST': str(sum(c for i, ms, c in LOSSES if i == k and ms <= t)),
        'begun': begun, 'in_state_ms': t - since,
    }


def visible(t):
    return [c for c in (coro_at(k, t) for k in sorted(FIXTURE)) if c]


def header_lines(t):
    """Lines 1 and 2 of the screen at t (the Warnings meter: only the
    test config's STALL lint can trip, on a coroutine running for > 0)."""
    starts = [s for ivs in FIXTURE.values() for s, _, _ in ivs]
    cs = visible(t)
    n = {st: sum(1 for c in cs if c['S'] == st) for st in 'RSD'}
    stall = sum(1 for c in cs if c['S'] == 'R' and c['in_state_ms'] > 0)
    return (' Events %d/s  lost %d  total %d' % (
        sum(1 for s in starts if t - 1000 < s <= t),
        sum(c for _, ms, c in LOSSES if ms <= t),
        sum(1 for s in starts if s <= t)),
        ' Coroutines %d: R %d  S %d  D %d   Warnings WAKE? 0 STALL %d '
        'STORM 0 DEAD 0' % (len(cs), n['R'], n['S'], n['D'], stall))


def title(t, speed=1):
    """Line 0 at t, paused: " corotop  replay NAME  || POS / LEN  xS
    HH:MM:SS" (the wall clock: the epoch puts 0 at 12:00:00 UTC)."""
    return ' corotop  replay %s  || 0:%02d.%03d000 / 0:10.000  x%d  ' \
        '12:00:%02d' % (NAME, t // 1000, t % 1000, speed, t // 1000)


# ---- checks against the model ----------------------------------------------

def secs(t):
    return '%g s' % (t / 1000)


def check_at(fl, s, t, what, speed=1):
    """The header and every table row at t ms, cell by cell (up to WHERE,
    the first cell that may hold blanks)."""
    got = s.text[:3]
    want = [title(t, speed=speed)] + list(header_lines(t))
    fl.check(got == want, '%s: header at %s' % (what, secs(t)),
             '\n'.join('got  %r\nwant %r' % gw for gw in zip(got, want)
                       if gw[0] != gw[1]))
    titles = next((nz.title_tokens(x) for x in s.text
                   if nz.title_tokens(x)), None)
    rows = [x.split() for x in s.text[5:-1] if re.match(r'^\s+1\d\d\d ', x)]
    bad = []
    cs = visible(t)
    if not titles or len(rows) != len(cs):
        bad.append('%d rows, want %d (%s)' % (
            len(rows), len(cs), ' '.join(c['ID'] for c in cs)))
    else:
        for row, c in zip(rows, cs):
            for i, (name, _, _) in enumerate(titles):
                if name == 'WHERE':
                    break
                if name in c and (i >= len(row) or row[i] != c[name]):
                    bad.append('%s %s: %r, want %r' % (
                        c['ID'], name, row[i] if i < len(row) else None,
                        c[name]))
    fl.check(not bad, '%s: the table at %s as recorded' % (what, secs(t)),
             '\n'.join(bad) + '\n' + h.screen_dump(s))


def check_detail(fl, s, k, t, what):
    """The detail view of coroutine k at t: its state line, and its
    transitions (slot, when, thread, state; a recording keeps no ring
    slots, so SLOT is "-")."""
    c = coro_at(k, t)
    names = {'R': 'running', 'S': 'suspended', 'D': 'dead'}
    line = ' %s for %s, age %s, %s switches (%s/s), %s%% running, %s lost' \
        % (names[c['S']], c['IN-STATE'], c['AGE'], c['SWITCHES'],
           c['SW/s'], c['RUN%'], c['LOST'])
    fl.check(line in s.text, '%s: "%s"' % (what, line.strip()),
             h.screen_dump(s))
    want = [('-', dur(t - st), str(TID[k]), names[state])
            for st, _, state in c['begun']][-8:]
    got = [m.groups() for m in (re.match(
        r'^\s+(-)\s+\d+\s+(\S+) ago\s+(\d+) (\w+)', x)
        for x in s.text) if m]
    fl.check(got == want, '%s: its %d transitions as recorded' % (
        what, len(want)), 'got  %s\nwant %s' % (got, want))


def position(s):
    """The header's position in ms and whether it plays, or None."""
    m = re.search(r'  (>|\|\|) (\d+):(\d\d)\.(\d{3})\d* / ', s.text[0])
    if not m:
        return None
    return ((int(m.group(2)) * 60 + int(m.group(3))) * 1000 +
            int(m.group(4)), m.group(1) == '>')


def message(text):
    return h.has(r'^ %s$' % re.escape(text))


def playing(s):
    """the header says it plays (>)"""
    return bool(position(s)) and position(s)[1]


def past(t):
    """The header's position is later than t ms (playing or not)."""
    def m(s):
        p = position(s)
        return bool(p) and p[0] > t
    m.__doc__ = 'the position is past %s' % secs(t)
    return m


def check_same_loss(fl, s, path):
    """The TUI and batch mode report the same loss on the same run: the
    TUI's header at the end, batch JSON's events.lost and batch text's
    "N lost" at the end of the same recording are one number (one
    counter, the model's), LOSSES' total."""
    m = re.search(r'  lost (\d+)  ', s.text[1])
    env = dict(os.environ, HOME=fl.dir,
               XDG_CONFIG_HOME=os.path.join(fl.dir, 'no-config'))
    got = {'tui': int(m.group(1)) if m else None}
    for fmt in ('json', 'text'):
        r = subprocess.run([fl.args.corotop, '--replay', path, '-b', '-f',
                            fmt], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, encoding='utf-8', timeout=60)
        if fmt == 'json':
            last = r.stdout.strip().split('\n')[-1]
            lm = re.search(r'"events":\{"harvested":\d+,"lost":(\d+)', last)
        else:
            lm = None
            for line in r.stdout.split('\n'):
                lm = re.match(r'^Events: \d+ total, [0-9.]+/s, (\d+) lost',
                              line) or lm
        got['batch ' + fmt] = int(lm.group(1)) if r.returncode == 0 and \
            lm else None
    want = sum(c for _, _, c in LOSSES)
    fl.check(set(got.values()) == {want},
             'the TUI and batch (JSON and text) report the same loss of '
             'one recording: %d' % want,
             ', '.join('%s: %s' % kv for kv in sorted(got.items())))


# ---- the flow --------------------------------------------------------------

def flow_replay(fl):
    """corotop --replay of heph-fixture's recording, --paused: the start,
    } (end), T 4s, ] and [ (next and previous transition, a death is
    one), Enter (detail: recorded transitions, the parked stack, named),
    ] there (its own next transition, past a loss), Esc, T 50%, + (x2),
    F1 (replay keys first), Space (plays to the end and stops), 80x24
    (the header keeps the time); q quits with status 0."""
    if not fl.args.heph_fixture:
        raise h.Skip('no --heph-fixture')
    path = os.path.join(fl.dir, 'fixture.heph')
    r = subprocess.run([fl.args.heph_fixture, path], stderr=subprocess.PIPE,
                       encoding='utf-8', timeout=10)
    if r.returncode:
        raise h.Abort('heph-fixture: %s' % r.stderr.strip())
    fl.write_config(linger=LINGER // 1000)
    fl.open(env_extra=['TZ=UTC'])  # the header's wall clock
    fl.info = nz.Info('tid1 %d\ntid2 %d\n' % (TID[1], TID[3]))
    fl.start_replay(path, '--paused', wait=h.has(r'^ corotop  replay '))

    s = fl.step('start', marker=h.has(re.escape(title(0))))
    check_at(fl, s, 0, 'start')
    s = fl.step('end', keys=['}'], marker=message('end: 0:10.000000'))
    check_at(fl, s, END, 'end')
    check_same_loss(fl, s, path)
    fl.step('goto-prompt', keys=['T'], text='4s',
            marker=h.has(r'^ Go to \(.*\): 4s$'))
    s = fl.step('at-4s', keys=['Enter'], marker=message('at: 0:04.000000'))
    check_at(fl, s, 4000, 'T 4s')
    fl.check(coro_at(4, 4000)['S'] == 'D' and
             h.has(r'^\s+1004 D ')(s),
             'T 4s: 1004 is dead (D) at the moment it dies')
    s = fl.step('next-transition', keys=[']'],
                marker=message('transition: 0:04.500000'))
    check_at(fl, s, 4500, ']')
    # Back: 1004's death at 4 s is the transition before 4.5 s.
    s = fl.step('prev-transition', keys=['['],
                marker=message('transition: 0:04.000000'))
    check_at(fl, s, 4000, '[')
    s = fl.step('detail-1001', keys=['Enter'],
                marker=h.both(h.has(r'^ Coroutine 1001  \(corotop id 1\)$'),
                              h.has(r'^ Last transitions ')))
    check_detail(fl, s, 1, 4000, 'detail at 4 s')
    i = s.text.index(PARKED[0]) if PARKED[0] in s.text else -1
    fl.check(i > 0 and s.text[i:i + 4] == PARKED and s.text[i + 4] == '',
             'detail at 4 s: the recorded parked stack, its frames named, '
             'then a blank line', h.screen_dump(s))
    s = fl.step('detail-next', keys=[']'],
                marker=h.both(message('its transition: 0:07.000000'),
                              h.has(r'^ running for ')))
    check_detail(fl, s, 1, 7000, 'detail at 7 s')
    fl.check(' \u2504\u2504 3 events lost \u2504\u2504' in s.text and
             not any(x.startswith(' Parked stack') for x in s.text),
             'detail at 7 s: the 3 lost events before its transition 4, '
             'no parked stack (it runs)', h.screen_dump(s))
    s = fl.step('back', keys=['Escape'],
                marker=h.both(h.has(r'^\s+ID'), h.has(r'^\s+1008 S ')),
                golden=False)
    check_at(fl, s, 7000, 'back at 7 s')
    s = fl.step('half', keys=['T'], text='50%\r',
                marker=message('at: 0:05.000000'))
    check_at(fl, s, 5000, 'T 50%')
    s = fl.step('faster', keys=['+'], marker=message('speed x2'))
    check_at(fl, s, 5000, '+', speed=2)
    s = fl.step('help', keys=['F1'], marker=h.has(r'^ Replay keys$'))
    fl.check(s.text[5] == ' Replay keys' and
             s.text[6].startswith('  Space Z ') and
             s.text.index(' Keys') > 6,
             'help: the replay keys come first', h.screen_dump(s))
    # g is not taken: it goes to the first row in replay too (T is "go
    # to a time").
    fl.check(h.has(r'^  Home g\s+first row$')(s) and
             not h.has(r'^  Space Z\s+pause')(s),
             'help: the usual keys without those replay takes (Space, '
             'Z)', h.screen_dump(s))
    fl.step('help-back', keys=['Escape'], marker=h.has(r'^\s+ID'),
            golden=False)
    # Play: 5 s of recording at x2 take 2.5 s, and then it stops.  A
    # machine that draws nothing in those 2.5 s never shows '>': the
    # marker is "it plays, or it has played" (the position left 5 s).
    start = 5000
    s1 = fl.step('play', keys=['Space'],
                 marker=h.either(playing, past(start)),
                 golden=False)
    # Waited for, not slept on: a refresh that shows a position past the
    # start (however long the machine takes to draw it).
    try:
        s2 = fl.wait(past(start), 'playing: a later position',
                     timeout=h.WAIT)
    except h.Abort:
        s2 = fl.capture()
    p2 = position(s2)
    fl.check(p2 and start < p2[0] <= END,
             'playing: the position advances (%s, then %s)' % (
                 secs(start), p2 and secs(p2[0])),
             '%s\n%s' % (s1.text[0], s2.text[0]))
    s = fl.step('played-to-end',
                marker=h.both(h.has(re.escape(title(END, speed=2))),
                              message('the target has exited; q quits')),
                timeout=h.WAIT)
    check_at(fl, s, END, 'played to the end', speed=2)
    s = fl.resize_step(80, 24, '80x24',
                       h.both(h.size(80, 24), h.has(r'^F1Help'),
                              h.has(r'^ corotop  replay fixture\.heph  ')))
    want = title(END, speed=2).replace(NAME, 'fixture.heph')
    fl.check(s.text[0] == want, '80x24: the header drops the command, '
             'keeps the time', 'got  %r\nwant %r' % (s.text[0], want))
    fl.keys('q')
    fl.finish(0, 'quit')
