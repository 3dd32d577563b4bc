#!/usr/bin/env python3
"""first_rows: the first snapshots of a program that makes its coroutines
at start -- the demo makes 2000 and then starts its workers -- list no
coroutine before its first transition is known.

    first_rows.py COROTOP DEMO

batch text (the TUI's table, src/ui/rows/filter.c) leaves out a live
coroutine that has no transition harvested yet (TID "-") while it is
younger than a second; one that stayed unswitched longer never ran and is
listed with "-".  So in every text snapshot, a row whose TID is "-" is
dead or at least 1.0s old -- whenever the snapshots are taken, which is
why the property holds on any machine.  The header's "N shown" is the
number of rows.  JSON (-f json) lists every coroutine: its "coroutines"
array is as long as the counts say, and a coroutine just made is there
with "tid": 0 (the type JSON.md gives it).

Each run has a deadline of 120 s (a bound for a hung run).  Exit status:
0 it holds, 1 it does not (printed).
"""
import json
import re
import subprocess
import sys

ROW = re.compile(r'^\s+([0-9a-f]+) ([RSDrsd]) +(\S+) +(\S+) ')
SHOWN = re.compile(r'^Coroutines: (\d+) shown, (\d+) running, (\d+) '
                   r'suspended, (\d+) dead')


def run(corotop, demo, fmt):
    return subprocess.run(
        [corotop, '-b', '-f', fmt, '-n', '5', '-d', '1', '--', demo],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, timeout=120, encoding='utf-8',
        errors='replace', check=True).stdout


def young(age):
    """An AGE cell under a second: ns, us or ms."""
    return re.fullmatch(r'[0-9.]+(ns|us|ms)', age) is not None


def main():
    corotop, demo = sys.argv[1:3]
    faults, rows, snaps, dashes = [], 0, 0, 0
    shown = None
    for line in run(corotop, demo, 'text').split('\n'):
        m = SHOWN.match(line)
        if m:
            if shown is not None and shown != rows:
                faults.append('snapshot %d: %d shown, %d rows' %
                              (snaps, shown, rows))
            shown, rows = int(m.group(1)), 0
            snaps += 1
            continue
        m = ROW.match(line)
        if not m:
            continue
        rows += 1
        state, tid, age = m.group(2), m.group(3), m.group(4)
        if tid == '-':
            dashes += 1
            if state not in 'Dd' and young(age):
                faults.append('snapshot %d lists a coroutine before its '
                              'first transition: %s' % (snaps, line.strip()))
    if shown is not None and shown != rows:
        faults.append('snapshot %d: %d shown, %d rows' % (snaps, shown, rows))
    if snaps < 5:
        faults.append('%d text snapshots, want 5' % snaps)
    for line in run(corotop, demo, 'json').strip().split('\n'):
        v = json.loads(line)
        c = v['counts']
        listed = len(v['coroutines'])
        if listed != c['running'] + c['suspended'] + c['dead']:
            faults.append('json lists %d coroutines, counts say %d' %
                          (listed, c['running'] + c['suspended'] +
                           c['dead']))
        if any(not isinstance(x['tid'], int) for x in v['coroutines']):
            faults.append('json: a "tid" that is not a number')
    if faults:
        print('\n'.join(faults[:20]))
        return 1
    print('ok: %d text snapshots, no row before its first transition (%d '
          'rows of coroutines that never ran)' % (snaps, dashes))
    return 0


if __name__ == '__main__':
    sys.exit(main())
