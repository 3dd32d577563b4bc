#!/usr/bin/env python3
"""where_stat.py: how many suspended fibers show the program's WHERE.

Reads `corotop -b -f json` lines on stdin; for each snapshot counts the
suspended coroutines of kind "coroutine" (not a dispatcher or a root),
those whose WHERE is the program's (not Boost's, std's, a switch's
assembly or hex), and of those the ones learned at an earlier park
(`where_learned`).  Prints a line per snapshot, the totals, and the most
frequent WHERE that was not the program's.

  corotop -b -f json -d 10 -n 10 -- fiber-target 4 1000000 --stuck --pace \
      | bench/where_stat.py
"""
import json
import sys

NOT_PROGRAM = ('0x', 'boost::', 'std::', 'void boost')


def main():
    tot = prog = learned = 0
    bad = {}
    for line in sys.stdin:
        if not line.startswith('{'):
            continue
        v = json.loads(line)
        st = sp = sl = 0
        for c in v.get('coroutines', []):
            if c.get('state') != 'suspended' or \
                    c.get('kind', 'coroutine') != 'coroutine':
                continue
            w = c.get('where', '')
            st += 1
            if w.startswith(NOT_PROGRAM) or 'jump_fcontext' in w or \
                    'ontop_fcontext' in w:
                k = w.split('+')[0]
                bad[k] = bad.get(k, 0) + 1
            else:
                sp += 1
                sl += bool(c.get('where_learned'))
        tot += st
        prog += sp
        learned += sl
        print('snapshot: suspended %d program %d learned %d' % (st, sp, sl))
    print('TOTAL suspended %d program %d (%.1f%%) learned %d' % (
        tot, prog, 100.0 * prog / max(tot, 1), learned))
    for k, n in sorted(bad.items(), key=lambda x: -x[1])[:8]:
        print(' not the program\'s: %d %s' % (n, k))


if __name__ == '__main__':
    main()
