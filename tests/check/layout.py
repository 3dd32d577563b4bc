#!/usr/bin/env python3
"""layout: the include rules of src/, checked on every run of the suite.

The rules live in one file, src/layers (a line per folder: the folders
it may include from; and the facade's headers).  This checks:

1. Every folder under src/ includes only from itself, the public headers
   (include/corotop) and the folders src/layers lists for it.  A folder
   missing from src/layers fails: a new folder states what it may call
   there.
2. No include cycle between folders (the graph of src/layers is checked
   to be acyclic, so rule 1 implies it for the real includes).
3. A UI file (src/ui/...) includes from src/engine only the facade.
4. A facade header includes only other facade headers (besides system,
   include/corotop and src/common ones): the facade defines its own types,
   so an internal header can change without reaching the UI.
5. Every meson.build links no corotop folder its layer does not allow
   (the probe, behind the public headers, excepted), and links -- itself
   or through what it links -- every folder its layer allows.
6. docs/ARCHITECTURE.md's layer table (between its markers) is the one
   made from src/layers.

Usage: layout.py SRC_DIR [--doc ARCHITECTURE.md] [--write-doc
ARCHITECTURE.md] [--self-test].  Prints each violation as "file:line:
message" and exits 1 when there is one.
"""
import os
import re
import sys

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


def check(src, allowed, facade):
    bad = []
    c = cycle(allowed)
    if c:
        bad.append('src/layers: folders include each other: ' +
                   ' -> '.join(c))
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
                if folder not in allowed:
                    bad.append('%s: folder %s is not in src/layers' %
                               (where, folder))
                    continue
                if to != folder and to not in allowed[folder]:
                    bad.append('%s: %s may not include %s (from %s)' %
                               (where, folder, inc, to))
                    continue
                if (folder == 'ui' or folder.startswith('ui/')) and \
                        inc.startswith('engine/') and inc not in facade:
                    bad.append('%s: UI includes engine-internal %s' %
                               (where, inc))
                me = os.path.relpath(path, src)
                if me in facade and not inc.startswith('common/') and \
                        inc not in facade:
                    bad.append('%s: facade header includes engine-internal '
                               '%s' % (where, inc))
    return bad


LAYERS_HELP = """
The layering lives in one file, src/layers (read here; nothing else
states it):
    FOLDER: FOLDERS IT MAY INCLUDE FROM
one line per folder under src/ (besides itself and include/corotop), and
    facade: HEADER...
the engine headers the UI may include.  Comments start with #.
"""


def load_layers(path):
    """(allowed, facade) from a layers file; raises ValueError on a line
    that is neither."""
    allowed, facade = {}, set()
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        if ':' not in line:
            raise ValueError('%s:%d: no ":" in %r' % (path, n, line))
        key, rest = line.split(':', 1)
        key, words = key.strip(), rest.split()
        if key == 'facade':
            facade.update(words)
        elif key in allowed:
            raise ValueError('%s:%d: %s twice' % (path, n, key))
        else:
            allowed[key] = words
    for f, deps in allowed.items():
        for d in deps:
            if d not in allowed:
                raise ValueError('%s: %s may include %s, which is no '
                                 'folder of the file' % (path, f, d))
    return allowed, facade


MESON_DEP_DEF = re.compile(r'^\s*(\w+_dep)\s*=\s*declare_dependency', re.M)
MESON_DEP_USE = re.compile(r'\b(\w+_dep)\b')
# Linked by anyone: the library behind the public headers (include/corotop).
PUBLIC_DEPS = {'probe'}


def meson_graph(src):
    """{folder: set of corotop folders its meson.build names} for every
    folder of src with a meson.build (comments left out)."""
    owner, text = {}, {}
    for dirpath, _, names in os.walk(src):
        if 'meson.build' not in names:
            continue
        folder = os.path.relpath(dirpath, src)
        t = '\n'.join(l.split('#', 1)[0] for l in
                      open(os.path.join(dirpath, 'meson.build'),
                           encoding='utf-8'))
        text[folder] = t
        for m in MESON_DEP_DEF.finditer(t):
            owner[m.group(1)] = folder
    graph = {}
    for folder, t in text.items():
        graph[folder] = {owner[m.group(1)] for m in MESON_DEP_USE.finditer(t)
                         if m.group(1) in owner and
                         owner[m.group(1)] != folder}
    return graph


def check_meson(src, allowed):
    """Each meson.build links no folder its layer does not allow, and
    every folder its layer allows is linked (directly or through what it
    links): the build states the layering, and states nothing else."""
    bad = []
    graph = meson_graph(src)

    def closure(f):
        seen, todo = set(), list(graph.get(f, ()))
        while todo:
            g = todo.pop()
            if g not in seen:
                seen.add(g)
                todo.extend(graph.get(g, ()))
        return seen

    for folder in sorted(graph):
        if folder == '.' or folder not in allowed:
            continue
        may = set(allowed[folder])
        for g in sorted(graph[folder] - may - PUBLIC_DEPS):
            bad.append('%s/meson.build: links %s, which its layer (src/'
                       'layers) does not allow' % (folder, g))
        for g in sorted(may - closure(folder)):
            if g in graph:
                bad.append('%s/meson.build: its layer allows %s, which it '
                           'does not link' % (folder, g))
    return bad


DOC_BEGIN = '<!-- layers: made from src/layers by tests/check/layout.py ' \
    '--write-doc; edit src/layers, not this table -->'
DOC_END = '<!-- /layers -->'


def doc_table(allowed):
    rows = ['| folder | may include |', '|---|---|']
    for f in allowed:
        deps = ', '.join('`%s`' % d for d in allowed[f]) or '(nothing of corotop)'
        rows.append('| `%s` | %s |' % (f, deps))
    return '\n'.join(rows)


def check_doc(doc, allowed, write=False):
    """The table between the markers of doc is doc_table(allowed)."""
    text = open(doc, encoding='utf-8').read()
    if DOC_BEGIN not in text or DOC_END not in text:
        return ['%s: no layer table markers' % doc]
    a = text.index(DOC_BEGIN) + len(DOC_BEGIN)
    b = text.index(DOC_END)
    want = '\n' + doc_table(allowed) + '\n'
    if text[a:b] == want:
        return []
    if write:
        open(doc, 'w', encoding='utf-8').write(text[:a] + want + text[b:])
        return []
    return ['%s: the layer table is not src/layers\' (layout.py SRC '
            '--write-doc %s)' % (doc, doc)]


def self_test():
    """The checker itself: made-up trees with one of each violation."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        def put(p, text):
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            open(os.path.join(d, p), 'w').write(text)
        put('layers', 'common:\nwire:\nprobe: wire\n'
            'engine/ctp: common\nengine: common engine/ctp\n'
            'ui/tui: common engine engine/ctp\n'
            'facade: engine/engine.h\n')
        allowed, facade = load_layers(os.path.join(d, 'layers'))
        put('common/a.h', '')
        put('engine/ctp/model.h', '#include "common/a.h"\n')
        put('engine/engine.h', '#include "engine/ctp/model.h"\n')
        put('ui/tui/v.c', '#include "engine/engine.h"\n'
            '#include "engine/ctp/model.h"\n')
        put('common/b.c', '#include "engine/engine.h"\n')
        put('probe/p.c', '#include "a.h"\n')
        put('newdir/x.c', '#include "common/a.h"\n')
        bad = check(d, allowed, facade)
        want = ['ui/tui/v.c:2: UI includes engine-internal',
                'engine/engine.h:1: facade header includes engine-internal',
                'common/b.c:1: common may not include engine/engine.h',
                'probe/p.c:1: "a.h" is not root-relative',
                'newdir/x.c:1: folder newdir is not in src/layers']
        for w in want:
            if not any(b.startswith(w) for b in bad):
                print('self-test: missed "%s" in %s' % (w, bad))
                return 1
        if len(bad) != len(want):
            print('self-test: extra findings: %s' % bad)
            return 1
        # The build: engine/ctp links the engine, which its layer does
        # not allow; engine allows engine/ctp and does not link it.
        put('common/meson.build', 'common_dep = declare_dependency()\n')
        put('engine/ctp/meson.build', 'ctp_dep = declare_dependency('
            'dependencies: [common_dep, engine_dep])\n')
        put('engine/meson.build', '# ctp_dep is not linked\n'
            'engine_dep = declare_dependency(dependencies: [common_dep])\n')
        put('ui/tui/meson.build', 'tui_dep = declare_dependency('
            'dependencies: [engine_dep, ctp_dep, common_dep])\n')
        bad = check_meson(d, allowed)
        want = ['engine/ctp/meson.build: links engine,',
                'engine/meson.build: its layer allows engine/ctp']
        for w in want:
            if not any(b.startswith(w) for b in bad):
                print('self-test: missed "%s" in %s' % (w, bad))
                return 1
        if len(bad) != len(want):
            print('self-test: extra meson findings: %s' % bad)
            return 1
        # The document's table, stale and then rewritten.
        put('doc.md', 'x\n%s\n| old |\n%s\ny\n' % (DOC_BEGIN, DOC_END))
        if not check_doc(os.path.join(d, 'doc.md'), allowed):
            print('self-test: a stale layer table went unseen')
            return 1
        check_doc(os.path.join(d, 'doc.md'), allowed, write=True)
        if check_doc(os.path.join(d, 'doc.md'), allowed):
            print('self-test: --write-doc left the table stale')
            return 1
        put('bad-layers', 'common: ui\nui: common\n')
        allowed, _ = load_layers(os.path.join(d, 'bad-layers'))
        if not cycle(allowed):
            print('self-test: a folder cycle went unseen')
            return 1
    print('self-test: ok')
    return 0


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith('-'):
        print(__doc__ + LAYERS_HELP)
        return 2
    src = args[0]
    if '--self-test' in args:
        return self_test()
    try:
        allowed, facade = load_layers(os.path.join(src, 'layers'))
    except (OSError, ValueError) as e:
        print('layout: %s' % e)
        return 1
    bad = check(src, allowed, facade) + check_meson(src, allowed)
    for opt, write in (('--doc', False), ('--write-doc', True)):
        if opt in args:
            bad += check_doc(args[args.index(opt) + 1], allowed, write)
    for b in bad:
        print(b)
    print('layout: %d violation%s' % (len(bad), '' if len(bad) == 1 else 's'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
