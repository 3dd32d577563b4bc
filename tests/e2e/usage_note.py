#!/usr/bin/env python3
"""usage_note: corotop without a terminal says "no terminal: printing
batch snapshots instead" when it goes on to print them, and only then: a
command line it refuses (exit 2) gets the reason alone, not a note that
announces snapshots that never come.

    usage_note.py COROTOP

Each case runs corotop with stdout on a pipe (no terminal, no -b) and a
deadline of 60 s (a bound for a hung run, not a speed expectation).
Exit status: 0 every case holds, 1 one does not (it is printed).
"""
import os
import subprocess
import sys

NOTE = 'no terminal (or TERM=dumb): printing batch snapshots instead'

# (arguments, exit status, whether the note is printed)
CASES = [
    (['-s', 'nosuchcolumn', '--', 'true'], 2, False),
    (['-F', 'nosuchcolumn=1', '--', 'true'], 2, False),
    (['-F', '!(', '--', 'true'], 2, False),
    (['--shm', '/etc/passwd'], 2, False),
    (['--no-such-option', '--', 'true'], 2, False),
    # The run that does print snapshots: the note, once.
    (['-n', '1', '-d', '1', '--', 'true'], 0, True),
]


def main():
    corotop = sys.argv[1]
    env = dict(os.environ, TERM='xterm')
    bad = 0
    for args, want_rc, want_note in CASES:
        r = subprocess.run([corotop] + args, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, timeout=60, encoding='utf-8',
                           errors='replace')
        notes = r.stderr.count(NOTE)
        ok = r.returncode == want_rc and notes == (1 if want_note else 0)
        print('%s corotop %s: exit %d, note %d time(s)' %
              ('ok  ' if ok else 'FAIL', ' '.join(args), r.returncode, notes))
        if not ok:
            print('  want exit %d, note %s; stderr:\n%s' %
                  (want_rc, 'once' if want_note else 'never',
                   r.stderr.rstrip()))
            bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
