#!/usr/bin/env python3
"""layout: the include rules of src/, checked on every run of the suite.

1. Every folder under src/ may include only from itself, the public headers
   (include/corotop) and the folders ALLOWED lists for it -- the layering
   each folder's meson.build states.  A folder missing from ALLOWED fails:
   a new folder states what it may call here.
2. No include cycle between folders (the ALLOWED graph itself is checked
   to be acyclic, so rule 1 implies it for the real includes).
3. A UI file (src/ui/...) includes from src/engine only the facade:
   FACADE below.  Everything else of the engine is internal.
4. A facade header includes only other facade headers (besides system,
   include/corotop and src/common ones): the facade defines its own types,
   so an internal header can change without reaching the UI.

Usage: layout.py SRC_DIR [--self-test].  Prints each violation as
"file:line: message" and exits 1 when there is one.
"""
import os
import re
import sys

# folder -> folders it may include from (besides itself and include/).
ALLOWED = {
    'common': [],
    'wire': [],
    'probe': ['wire'],
    'preload': [],
    'engine/target': ['common'],
    'engine/launch': ['common', 'engine/target'],
    'engine/names': ['common'],
    'engine/symbols': ['common', 'engine/target', 'engine/names', 'wire'],
    'engine/model': ['common', 'engine/target', 'engine/names',
                     'engine/symbols'],
    'engine/ctp': ['common', 'wire', 'engine/target', 'engine/model'],
    'engine/calltrace': ['common', 'wire'],
    'engine/ppt': ['common', 'wire', 'engine/target'],
    'engine/heph': ['common', 'engine/model', 'engine/names',
                    'engine/symbols'],
    'engine/record': ['common', 'engine/heph', 'engine/model',
                      'engine/symbols'],
    'engine/replay': ['common', 'engine/heph', 'engine/model',
                      'engine/symbols'],
    'engine/export': ['common', 'wire'],
    'engine/stacks': ['common', 'wire', 'engine/target', 'engine/symbols',
                      'engine/model', 'engine/ctp', 'engine/calltrace',
                      'engine/export'],
    'engine/attach': ['common', 'wire', 'engine/target', 'engine/ctp',
                      'engine/ppt'],
    'cacheray': ['common'],
    'engine': ['common', 'wire', 'engine/target', 'engine/launch',
               'engine/names', 'engine/symbols', 'engine/model', 'engine/ctp',
               'engine/calltrace', 'engine/ppt', 'engine/heph',
               'engine/record', 'engine/replay', 'engine/export',
               'engine/stacks', 'engine/attach'],
    'ui/rows': ['common', 'engine', 'engine/model'],
    'ui/settings': ['common', 'engine', 'engine/model'],
    'ui/batch': ['common', 'engine', 'engine/model', 'cacheray', 'ui/rows'],
    'ui/term': ['common'],
    'ui/tui': ['common', 'engine', 'engine/model', 'ui/term', 'ui/rows',
               'ui/settings'],
    'ui/memview': ['common', 'cacheray', 'ui/term'],
    'ui/serve': ['common', 'engine', 'engine/model', 'ui/rows', 'ui/batch'],
    'convert': ['common', 'engine/heph', 'engine/export', 'engine/names',
                'engine/symbols'],
    'ui': ['common', 'engine', 'engine/model', 'cacheray', 'ui/rows',
           'ui/settings', 'ui/batch', 'ui/term', 'ui/tui', 'ui/memview',
           'ui/serve', 'convert'],
    'demo': [],
}

# What the UI may include of the engine.
FACADE = {
    'engine/engine.h',          # the facade
    'engine/model/snapshot.h',  # what a snapshot holds
    'engine/model/coro.h',      # ... its records (data only)
    'engine/model/lint.h',      # the lints' names and settings
    'engine/stacks/hotview.h',  # the hot queries' answers (data only)
    'engine/attach/pptview.h',  # the ppt queries' answers (data only)
}

INC = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def cycle(graph):
    """A cycle of graph (node -> successors) as a list, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check(src):
    bad = []
    c = cycle(ALLOWED)
    if c:
        bad.append('ALLOWED: folders include each other: ' + ' -> '.join(c))
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith(('.c', '.h', '.cpp', '.hpp')):
                continue
            path = os.path.join(dirpath, name)
            folder = os.path.relpath(dirpath, src)
            text = open(path, encoding='utf-8', errors='replace').read()
            for m in INC.finditer(text):
                inc = m.group(1)
                line = text.count('\n', 0, m.start()) + 1
                where = '%s:%d' % (os.path.relpath(path, src), line)
                if inc.startswith('corotop/'):
                    continue
                if '/' not in inc or inc.startswith('.'):
                    bad.append('%s: "%s" is not root-relative' % (where, inc))
                    continue
                if not os.path.exists(os.path.join(src, inc)):
                    bad.append('%s: "%s" does not exist' % (where, inc))
                    continue
                to = os.path.dirname(inc)
                if folder not in ALLOWED:
                    bad.append('%s: folder %s is not in ALLOWED' %
                               (where, folder))
                    continue
                if to != folder and to not in ALLOWED[folder]:
                    bad.append('%s: %s may not include %s (from %s)' %
                               (where, folder, inc, to))
                    continue
                if (folder == 'ui' or folder.startswith('ui/')) and \
                        inc.startswith('engine/') and inc not in FACADE:
                    bad.append('%s: UI includes engine-internal %s' %
                               (where, inc))
                me = os.path.relpath(path, src)
                if me in FACADE and not inc.startswith('common/') and \
                        inc not in FACADE:
                    bad.append('%s: facade header includes engine-internal '
                               '%s' % (where, inc))
    return bad


def self_test():
    """The checker itself: a made-up tree with one of each violation."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        def put(p, text):
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            open(os.path.join(d, p), 'w').write(text)
        put('common/a.h', '')
        put('engine/model/model.h', '#include "common/a.h"\n')
        put('engine/engine.h', '#include "engine/model/model.h"\n')
        put('ui/tui/v.c', '#include "engine/engine.h"\n'
            '#include "engine/model/model.h"\n')
        put('common/b.c', '#include "engine/engine.h"\n')
        put('probe/p.c', '#include "a.h"\n')
        put('newdir/x.c', '#include "common/a.h"\n')
        bad = check(d)
        want = ['ui/tui/v.c:2: UI includes engine-internal',
                'engine/engine.h:1: facade header includes engine-internal',
                'common/b.c:1: common may not include engine/engine.h',
                'probe/p.c:1: "a.h" is not root-relative',
                'newdir/x.c:1: folder newdir is not in ALLOWED']
        for w in want:
            if not any(b.startswith(w) for b in bad):
                print('self-test: missed "%s" in %s' % (w, bad))
                return 1
        if len(bad) != len(want):
            print('self-test: extra findings: %s' % bad)
            return 1
    saved = dict(ALLOWED)
    ALLOWED['common'] = ['ui']
    c = cycle(ALLOWED)
    ALLOWED.clear()
    ALLOWED.update(saved)
    if not c:
        print('self-test: a folder cycle went unseen')
        return 1
    print('self-test: ok')
    return 0


def main():
    if len(sys.argv) > 2 and sys.argv[2] == '--self-test':
        return self_test()
    bad = check(sys.argv[1])
    for b in bad:
        print(b)
    print('layout: %d violation%s' % (len(bad), '' if len(bad) == 1 else 's'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
