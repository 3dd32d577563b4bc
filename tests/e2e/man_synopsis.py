#!/usr/bin/env python3
"""man_synopsis: the man page's SYNOPSIS against what corotop says it
does.  `corotop convert --help` lists the formats --to takes, from the
converters' own table; the SYNOPSIS line of `corotop convert` in
docs/corotop.1 must name every one of them (and nothing else), so the
synopsis cannot fall behind a new converter again.

    man_synopsis.py COROTOP MANPAGE

Exit status: 0 they agree, 1 they do not (the difference printed).
"""
import re
import subprocess
import sys


def help_formats(corotop):
    out = subprocess.run([corotop, 'convert', '--help'], check=True,
                         stdout=subprocess.PIPE, timeout=60,
                         encoding='utf-8').stdout
    tail = out.split('Formats:\n', 1)[1]
    return [m.group(1) for m in re.finditer(r'(?m)^  (\S+)\s', tail)]


def synopsis_formats(manpage):
    """The formats on the `.B corotop convert` line's next line, in man's
    bold: \\fBchrome\\fR|\\fBjsonl\\fR|..."""
    lines = open(manpage, encoding='utf-8').read().split('\n')
    end = lines.index('.SH DESCRIPTION')
    at = lines.index('.B corotop convert', 0, end)
    line = lines[at + 1]
    m = re.search(r'\\-\\-to\\fR (\S+)', line)
    if not m:
        sys.exit('no --to on the synopsis line: %r' % line)
    return re.findall(r'\\fB([a-z0-9-]+)\\fR', m.group(1))


def main():
    corotop, manpage = sys.argv[1:3]
    want = help_formats(corotop)
    got = synopsis_formats(manpage)
    if not want:
        print('corotop convert --help lists no formats')
        return 1
    if sorted(got) != sorted(want):
        print('docs/corotop.1 SYNOPSIS: convert --to %s' % '|'.join(got))
        print('corotop convert --help:  %s' % ', '.join(want))
        print('missing from the synopsis: %s' %
              (' '.join(f for f in want if f not in got) or '-'))
        print('not a format: %s' %
              (' '.join(f for f in got if f not in want) or '-'))
        return 1
    print('ok: the synopsis names %s' % ', '.join(got))
    return 0


if __name__ == '__main__':
    sys.exit(main())
