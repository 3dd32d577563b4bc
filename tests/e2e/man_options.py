#!/usr/bin/env python3
"""man_options: the man page's OPTIONS against corotop's option table.
`corotop --help` is generated from the one table in
src/ui/settings/cli.c (a row per option: its letter, long name, value
name and help); every option it lists must have an entry in the OPTIONS
section of docs/corotop.1 with the same letter, name and value name, and
the page must list no option corotop does not take.

    man_options.py COROTOP MANPAGE

Exit status: 0 they agree, 1 they do not (each difference printed).
"""
import re
import subprocess
import sys

HELP_LINE = re.compile(
    r'^  (?:-(?P<short>\S), |    )--(?P<long>[a-z][a-z-]*)(?: (?P<arg>\S+))?')


def help_options(corotop):
    """{long: (short or None, arg or None)} from corotop --help."""
    out = subprocess.run([corotop, '--help'], check=True,
                         stdout=subprocess.PIPE, timeout=60,
                         encoding='utf-8').stdout
    opts = {}
    for line in out.split('\n'):
        m = HELP_LINE.match(line)
        if m:
            opts[m.group('long')] = (m.group('short'), m.group('arg'))
    return opts


def man_options(manpage):
    """The same from the .TP entries of the OPTIONS section: lines such as
    .BR \\-n ", " \\-\\-iterations " \\fIN\\fR" or .BI \\-\\-stations " N"."""
    lines = open(manpage, encoding='utf-8').read().split('\n')
    start = lines.index('.SH OPTIONS')
    end = next(i for i in range(start + 1, len(lines))
               if lines[i].startswith('.SH '))
    opts = {}
    for i in range(start, end - 1):
        if lines[i] != '.TP':
            continue
        entry = lines[i + 1]
        text = re.sub(r'\\f[BIRP]', '', entry).replace('\\-', '-')
        text = re.sub(r'^\.(BR|BI|B|IR|I) ', '', text).replace('"', '')
        m = re.match(r'^(?:-(?P<short>\S) *, *)?--(?P<long>[a-z][a-z-]*)'
                     r'(?: +(?P<arg>\S+))?\s*$', text.strip())
        if not m:
            print('docs/corotop.1:%d: an OPTIONS entry not read: %r' %
                  (i + 2, entry))
            opts[None] = None
            continue
        opts[m.group('long')] = (m.group('short'), m.group('arg'))
    return opts


def show(name, o):
    short, arg = o
    return '%s--%s%s' % ('-%s, ' % short if short else '', name,
                         ' ' + arg if arg else '')


def main():
    corotop, manpage = sys.argv[1:3]
    want = help_options(corotop)
    got = man_options(manpage)
    bad = 0
    if len(want) < 10:
        print('corotop --help lists %d options: not read' % len(want))
        return 1
    for name, o in want.items():
        if name not in got:
            print('missing from docs/corotop.1 OPTIONS: %s' % show(name, o))
            bad += 1
        elif got[name] != o:
            print('docs/corotop.1 says %s, corotop --help %s' %
                  (show(name, got[name]), show(name, o)))
            bad += 1
    for name, o in got.items():
        if name is None:
            bad += 1
        elif name not in want:
            print('docs/corotop.1 lists %s, which corotop does not take' %
                  show(name, o))
            bad += 1
    if bad:
        return 1
    print('ok: the %d options of corotop --help are the man page\'s' %
          len(want))
    return 0


if __name__ == '__main__':
    sys.exit(main())
