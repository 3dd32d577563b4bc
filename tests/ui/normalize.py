#!/usr/bin/env python3
"""normalize: turn a tmux capture of corotop into golden-file text.

Input is `tmux capture-pane -p -e` output (text with SGR escapes).  Output
is one line per screen line:

    TAG          |TEXT

TEXT is the screen text with trailing blanks removed and the volatile parts
masked.  TAG records the attributes that carry meaning (which row is
selected, which lines are highlighted, running/dead colours):

    BG/FG        BG: background of column 0 ("rev" when reverse video);
                 FG: colour and +b (bold) +d (dim) +r (reverse) of the first
                 non-blank character.  Empty when both are the defaults.

Masked, and only in the places they occur (so an ID, a state, a switch
count, an address or a title can never be masked by accident):

    header      "pid 1234" -> "pid PID", engine harvesting|asleep -> ENGINE,
                "REC FILE 1.2 MB" -> "REC FILE SIZE MB",
                "Events 12/s" -> "Events N/s", "total 43" -> "total N"; on a
                narrow screen the events line's tail, which the edge cuts at
                a place that depends on those numbers, -> "[cut]"
    table rows  (located under the column-title line, cells mapped to titles
                left to right; scrolled right -- the titles start with
                '<' -- a cell is the title's whose end (right-aligned) or
                start (left-aligned) it shares, and a cell the screen's
                left edge cuts is "~") TID -> T1/T2 (the workload's threads, from its
                info file; any other tid -> ?N, which no golden has), PID ->
                P1/P2 (the program's processes, from the same), AGE and
                IN-STATE -> DUR, SW/s -> N, RUN% -> P; each right-aligned in
                its cell so the layout stays exact.  A context a memory scan
                found: its ID (~ or ? and its address) -> ~ADDR, its
                IN-STATE (a lower bound) -> >DUR, its unknown '?' kept
                (a core's IN-STATE too)
    groups      "thread 1234:" -> "thread T1:"
    ppt view    the books line's "N/s" meter and "first frame DUR" (the
                time from attach to the first frame; "-" before it is
                kept); under the "SEQ AGE TYPE" titles the AGE cell of each
                frame row -> DUR, right-aligned in its cell
    meters      above the column titles, each thread meter's tid -> T1/T2
                and its bar and share -> "CPU" (right-aligned in the
                brackets); the running coroutine after it is kept
    warnings    an offender's IN-STATE (DUR) and tid (T1)
    detail      "<state> for DUR, age DUR, 4 switches (N/s), P% running",
                a scanned one's "<state> for at least DUR" and its
                "Coroutine ~ADDR" title,
                the ring's "WHEN ago" and TID cells, "Timeline, last DUR",
                the timeline bar (-> <bar utf8|ascii W>), and p50/p90/p99/max

Everything else (IDs, S column, row order, titles, sort marker, group
headers, the status line, PAUSED, help text, the detail structure) is kept
byte for byte.  Normalizing golden text again is a no-op, so the same
function is applied to captures and goldens at compare time.

Usage: normalize.py [INFO_FILE] < capture > normalized
"""
import re
import sys

# ---- SGR parsing -----------------------------------------------------------

COLOR_NAMES = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan',
               'white']
SGR_RE = re.compile(r'\x1b\[([0-9;:]*)m')
OTHER_ESC_RE = re.compile(
    r'\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][0-9A-B])')


def _color(n):
    if n < 8:
        return COLOR_NAMES[n]
    if n < 16:
        return 'bright' + COLOR_NAMES[n - 8]
    return 'c%d' % n


class Attr:
    __slots__ = ('fg', 'bg', 'bold', 'dim', 'rev', 'other')

    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = self.bg = None
        self.bold = self.dim = self.rev = False
        self.other = False

    def copy(self):
        a = Attr()
        a.fg, a.bg, a.bold, a.dim, a.rev = (self.fg, self.bg, self.bold,
                                            self.dim, self.rev)
        return a

    def apply(self, params):
        p = [int(x) if x else 0 for x in re.split('[;:]', params)] \
            if params else [0]
        i = 0
        while i < len(p):
            v = p[i]
            if v == 0:
                self.reset()
            elif v == 1:
                self.bold = True
            elif v == 2:
                self.dim = True
            elif v == 22:
                self.bold = self.dim = False
            elif v == 7:
                self.rev = True
            elif v == 27:
                self.rev = False
            elif 30 <= v <= 37:
                self.fg = _color(v - 30)
            elif 90 <= v <= 97:
                self.fg = _color(v - 90 + 8)
            elif 40 <= v <= 47:
                self.bg = _color(v - 40)
            elif 100 <= v <= 107:
                self.bg = _color(v - 100 + 8)
            elif v in (38, 48) and i + 2 < len(p) and p[i + 1] == 5:
                if v == 38:
                    self.fg = _color(p[i + 2])
                else:
                    self.bg = _color(p[i + 2])
                i += 2
            elif v in (38, 48) and i + 4 < len(p) and p[i + 1] == 2:
                rgb = 'rgb%02x%02x%02x' % tuple(p[i + 2:i + 5])
                if v == 38:
                    self.fg = rgb
                else:
                    self.bg = rgb
                i += 4
            elif v == 39:
                self.fg = None
            elif v == 49:
                self.bg = None
            i += 1


def parse_cells(raw):
    """[[(char, Attr)]] per line of a `capture-pane -p -e` capture.
    Attributes carry over from one line to the next, as tmux emits them."""
    attr = Attr()
    out = []
    lines = raw.split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    for line in lines:
        line = OTHER_ESC_RE.sub('', line)
        cells = []  # (char, attr)
        pos = 0
        for m in SGR_RE.finditer(line):
            for ch in line[pos:m.start()]:
                cells.append((ch, attr.copy()))
            attr.apply(m.group(1))
            pos = m.end()
        for ch in line[pos:]:
            cells.append((ch, attr.copy()))
        out.append(cells)
    return out


def parse_capture(raw):
    """[(tag, text)] per line of a `capture-pane -p -e` capture."""
    return [(_tag(cells), ''.join(c for c, _ in cells).rstrip())
            for cells in parse_cells(raw)]


def highlighted(cells):
    """The text of a line's highlighted cells (reverse video or a
    background colour), blanks at the ends dropped: a selected tab."""
    return ''.join(c for c, a in cells if a.rev or a.bg).strip()


def _tag(cells):
    bg = ''
    if cells:
        a = cells[0][1]
        bg = 'rev' if a.rev else (a.bg or '')
    fg = ''
    for ch, a in cells:
        if ch != ' ':
            fg = (a.fg or '') + ('+b' if a.bold else '') + \
                ('+d' if a.dim else '') + ('+r' if a.rev else '')
            break
    return '%s/%s' % (bg, fg) if bg or fg else ''


def has_color_escapes(raw):
    """True when the capture sets any foreground or background colour."""
    for m in SGR_RE.finditer(raw):
        p = [int(x) if x else 0 for x in re.split('[;:]', m.group(1))] \
            if m.group(1) else [0]
        for v in p:
            if 30 <= v <= 38 or 40 <= v <= 48 or 90 <= v <= 97 \
                    or 100 <= v <= 107:
                return True
    return False


# ---- masking ---------------------------------------------------------------

DUR = r'(?:\d+(?:\.\d+)?(?:ns|us|\u00b5s|ms|s)|\d+m\d\ds|\d+h\d\dm|\d+d\d\dh)'
MARKERS = '\u25b2\u25bc^v'
GROUP_RE = re.compile(r'^(\s*(?:\u2500\u2500|--) thread )(\d+)(: )')
# A row of the detail view's ring: SLOT SEQ WHEN ago TID STATE WHERE.
RING_RE = re.compile(r'^(\s*(?:\d+|-)\s+\d+)(\s+)(' + DUR + r'|DUR)( ago)'
                     r'(\s+)(\d+|T\d|\?\d+|-)( (?:running|suspended) .*)$')
BAR_RE = re.compile(r'^(\s*)([\u2588\u00b7]+|[#.]+)$')
# The ppt view's books line (ppt_view.c, ppt_draw_books) and its frame
# titles; what lies between SEQ and TYPE in a row is the AGE cell.
PPT_BOOKS_RE = re.compile(
    r'^( (?:attached|waiting for the client|process exited|not attached), '
    r'(?:static|dynamic) \d+x\d+B  )\S+(/s  delivered \d+  lost \d+  '
    r'torn \d+  first frame )(' + DUR + r'|DUR|-)(?=  |$)')
PPT_TITLES_RE = re.compile(r'^ +SEQ +AGE TYPE(?: |$)')
PPT_ROW_RE = re.compile(r'^( *\d+ )( *(?:' + DUR + r'|DUR))(?= )')


# A title, and the sort marker after it, which may sit in the gap right
# before the next title ("ID\u25b2S").  No title has a lower-case v.
TITLE_RE = re.compile('[^\\s%s]+[%s]?' % (MARKERS, MARKERS))


def _title(tok):
    return tok.rstrip(MARKERS)


def title_spans(text):
    """[(title as shown, start, end)] of a column-title line."""
    return [(m.group(), m.start(), m.end()) for m in TITLE_RE.finditer(text)]


def title_tokens(text):
    """[(title, start, end)] when `text` is the table's column-title line;
    start and end exclude the sort marker."""
    toks = title_spans(text)
    if len(toks) >= 2 and _title(toks[0][0]) == 'ID' and \
            _title(toks[1][0]) == 'S':
        return [(_title(t), s, s + len(_title(t))) for t, s, e in toks]
    return None


class Info:
    """What the workload reported: its pid, its two threads' tids, and
    whether the second got the lower one (the tid-wrap flow)."""

    def __init__(self, text=''):
        self.pid = None
        self.tids = {}
        self.pids = {}
        self.wrapped = None
        # Stations in use vary from run to run: a program started through
        # an exec (the preload flow) has its shell's process station
        # recycled at a moment that races the program's first stations.
        self.stations_vary = False
        for line in text.splitlines():
            parts = line.split()
            if parts == ['stations', 'vary']:
                self.stations_vary = True
            elif len(parts) == 2 and parts[0] == 'pid':
                self.pid = parts[1]
            elif len(parts) == 2 and parts[0] == 'wrapped':
                self.wrapped = parts[1]
            elif len(parts) == 2 and parts[0] in ('tid1', 'tid2'):
                self.tids[parts[1]] = 'T' + parts[0][-1]
            elif len(parts) == 2 and parts[0] in ('pid1', 'pid2'):
                self.pids[parts[1]] = 'P' + parts[0][-1]

    def tid(self, s):
        # "-": no switch yet; 0: what a group of such coroutines shows.
        if s in ('-', '0', 'T1', 'T2') or s.startswith('?'):
            return s
        return self.tids.get(s, '?' + s)

    def pid_cell(self, s):
        # A process of the program: P1 (the target) or P2 (its child).
        if s in ('P1', 'P2') or s.startswith('?'):
            return s
        return self.pids.get(s, '?' + s)


def _right(text, start, end, label):
    """Replace text[start:end] (a right-aligned cell's blanks + value) by
    label, right-aligned in the same width."""
    width = end - start
    if len(label) >= width:
        label = ' ' + label
    return text[:start] + label.rjust(width) + text[end:]


CELL_MASKS = {
    # A context a memory scan found: its ID is its saved context's
    # address (~: sure, ?: not proven live), which ASLR moves.
    'ID': lambda v, info: v[0] + 'ADDR' if v[0] in '~?' else v,
    'AGE': lambda v, info: 'DUR' if v != '?' else v,
    # A scan's IN-STATE is a lower bound: >DUR; a core's is not known: ?.
    'IN-STATE': lambda v, info: ('>DUR' if v.startswith('>') else
                                 v if v == '?' else 'DUR'),
    # ... and its counts are not known: '?' is kept.
    'SW/s': lambda v, info: 'N' if v != '?' else v,
    'RUN%': lambda v, info: 'P' if v != '?' else v,
    'TID': lambda v, info: info.tid(v),
    'PID': lambda v, info: info.pid_cell(v),
}


def mask_row(text, titles, info):
    toks = [(m.group(), m.start(), m.end()) for m in re.finditer(r'\S+', text)]
    if len(toks) < 2 or \
            not re.fullmatch('[~?]?[0-9a-f]+|[~?]ADDR', toks[0][0]) or \
            toks[1][0] not in ('R', 'S', 'D', 'K', 's'):
        return text  # not a coroutine row: left as is, so it shows
    # Right to left, so earlier offsets stay valid.  The masked cells come
    # before NAME and WHERE, whose text may hold blanks ("f+0x2 (a.c:3)"):
    # tokens past the titles are theirs.
    for i in range(len(toks) - 1, -1, -1):
        if i >= len(titles):
            continue
        mask = CELL_MASKS.get(titles[i][0])
        if not mask:
            continue
        tok, s, e = toks[i]
        ws = toks[i - 1][2] if i else 0
        text = _right(text, ws, e, mask(tok, info))
    return text


TABLE_TITLES = {'ID', 'S', 'TID', 'AGE', 'IN-STATE', 'SWITCHES', 'SW/s',
                'RUN%', 'SEQ', 'LOST', 'NAME', 'WHERE', 'WARN'}


def scrolled_titles(text):
    """[(title, start, end)] when `text` is the titles of the table
    scrolled right (Right): '<' first, maybe '>' last, the first title
    maybe cut by the edge."""
    if not text.startswith('<'):
        return None
    toks = [(_title(t), s, s + len(_title(t)))
            for t, s, e in title_spans(text[1:].rstrip('>').rstrip())]
    toks = [(t, s + 1, e + 1) for t, s, e in toks if t in TABLE_TITLES]
    return toks if len(toks) >= 2 else None


def mask_row_scrolled(text, titles, info):
    """A row of the scrolled table: cells found by position."""
    toks = [(m.group(), m.start(), m.end()) for m in re.finditer(r'\S+', text)]
    for i in range(len(toks) - 1, -1, -1):
        tok, s, e = toks[i]
        ws = toks[i - 1][2] if i else 0
        if s == 0 and not any(ts == 0 for _, ts, _ in titles):
            text = _right(text, 0, e, '~')  # a cell cut by the edge
            continue
        for t, ts, te in titles:
            mask = CELL_MASKS.get(t)
            if mask and te == e:
                text = _right(text, ws, e, mask(tok, info))
                break
    return text


# An offender of the warnings pane: NAME S IN-STATE WHERE tid TID id ID
# (WHERE 30 wide, narrower on a narrow screen).
WARN_ROW_RE = re.compile(r'^(     .{16} [RSDKs] )( *(?:' + DUR + r'|DUR))'
                         r'(  .{10,30} tid )(\S+)( *)( id \S+)$')


def mask_detail(text, info):
    m = WARN_ROW_RE.match(text)
    if m:
        g = list(m.groups())
        g[1] = 'DUR'.rjust(len(g[1]))
        tid = info.tid(g[3])
        g[4] = ' ' * max(1, len(g[3]) + len(g[4]) - len(tid)) \
            if g[4] else ''
        g[3] = tid
        return ''.join(g)
    m = re.match(r'^( (?:running|suspended|dead) for at least )(\S+?)'
                 r'(; found by a scan .*)$', text)
    if m:
        return m.group(1) + 'DUR' + m.group(3)
    text = re.sub(r'^( Coroutine [~?])[0-9a-f]+(?= )', r'\1ADDR', text)
    m = re.match(r'^( (?:running|suspended|dead) for )(\S+)(, age )(\S+)'
                 r'(, \d+ switches \()(\S+)(/s\), )(\S+)(% running.*)$', text)
    if m:
        g = list(m.groups())
        g[1], g[3], g[5], g[7] = 'DUR', 'DUR', 'N', 'P'
        return ''.join(g)
    m = RING_RE.match(text)
    if m:
        g = list(m.groups())
        when = g[1] + g[2]
        g[1], g[2] = '', 'DUR'.rjust(len(when))
        tid = g[4] + g[5]
        g[4], g[5] = '', info.tid(g[5]).rjust(len(tid))
        return ''.join(g)
    text = re.sub(r'^( Timeline, last )' + DUR, r'\1DUR', text)
    text = re.sub(r'\b(p\d+|max) ' + DUR + r'(?=\s|$)', r'\1 DUR', text)
    # Hot stacks: trace ids carry the table's bucket, which depends on the
    # frames' addresses (ASLR); the view's stack numbers on the order the
    # engine met them.
    text = re.sub(r'\b(trace 0x)[0-9a-f]+', r'\1TRACE', text)
    text = re.sub(r'^( Stack )\d+ ', r'\1N ', text)
    return text


def _engine(m, cut):
    """harvesting|asleep -> ENGINE; at the screen edge the word may be cut,
    so any prefix of either there too."""
    word, after = m.group(1), m.group(2)
    cut_here = cut and not after and word and \
        ('harvesting'.startswith(word) or 'asleep'.startswith(word))
    if word in ('harvesting', 'asleep') or cut_here:
        return 'engine ENGINE' + after
    return m.group(0)


def mask_ppt_books(text):
    m = PPT_BOOKS_RE.match(text)
    if not m:
        return text
    first = m.group(3) if m.group(3) == '-' else 'DUR'
    return m.group(1) + 'N' + m.group(2) + first + text[m.end():]


def mask_ppt_row(text):
    m = PPT_ROW_RE.match(text)
    if not m:
        return text
    return m.group(1) + 'DUR'.rjust(len(m.group(2))) + text[m.end():]


METER_BAR = 8  # thread_meters.c's THREAD_METER_BAR
METER_RE = re.compile(r'(\s*)(\d+|T\d|\?\d+) \[([^\]]{%d})\] ' % METER_BAR)


def mask_meters(text, info):
    """Each thread meter: its tid as in the TID column, its bar and
    share masked, widths kept."""
    def one(m):
        width = len(m.group(1)) + len(m.group(2))
        return '%*s [%*s] ' % (width, info.tid(m.group(2)), METER_BAR,
                               'CPU')
    return METER_RE.sub(one, text)


def normalize_lines(lines, info, width=None):
    """[(tag, text)] -> [str] golden lines.  `width`: the screen's, when
    known; a header meter line that fills it was cut by the screen edge at
    a place that depends on the masked values, so its tail is cut too."""
    out = []
    titles = None
    scrolled = False
    ppt_rows = False
    in_timeline = False
    for n, (tag, text) in enumerate(lines):
        last = n == len(lines) - 1
        if n == 0:
            cut = width and len(text) >= width
            text = re.sub(r'\bpid \d+', 'pid PID', text)
            text = re.sub(r'\bengine (\w*)(.?)',
                          lambda m: _engine(m, cut), text)
            text = re.sub(r'(  REC(?: STOPPED)? \S+ )\d+\.\d MB', r'\1SIZE MB',
                          text)
        elif n == 1:
            cut = width and len(text) >= width
            text = re.sub(r'^( Events )\S+/s', r'\1N/s', text)
            text = re.sub(r'\btotal \d+', 'total N', text)
            if info.stations_vary:
                text = re.sub(r'\bstations \d+/', 'stations N/', text)
            if cut:
                text = re.sub(r'^( Events N/s).*', r'\1 [cut]', text)
        elif ppt_rows and not last:
            text = mask_ppt_row(text)
        elif titles is None and PPT_TITLES_RE.match(text):
            ppt_rows = True
        elif titles is None and PPT_BOOKS_RE.match(text):
            text = mask_ppt_books(text)
        elif titles is None and n >= 4 and METER_RE.match(text):
            text = mask_meters(text, info)
        elif titles is None and title_tokens(text):
            titles = title_tokens(text)
        elif titles is None and n >= 4 and scrolled_titles(text):
            titles = scrolled_titles(text)
            scrolled = True
        elif titles is not None and not last:
            g = GROUP_RE.match(text)
            if g:
                text = g.group(1) + info.tid(g.group(2)) + g.group(3) + \
                    text[g.end():]
            elif text and scrolled:
                text = mask_row_scrolled(text, titles, info)
            elif text:
                text = mask_row(text, titles, info)
        elif n >= 4:
            if in_timeline:
                b = BAR_RE.match(text)
                if b:
                    kind = 'ascii' if b.group(2)[0] in '#.' else 'utf8'
                    text = '%s<bar %s %d>' % (b.group(1), kind,
                                              len(b.group(2)))
                in_timeline = False
            if text.startswith(' Timeline, last '):
                in_timeline = True
            text = mask_detail(text, info)
        out.append(('%-13s|%s' % (tag, text)).rstrip())
    return out


def normalize_capture(raw, info, width=None):
    return normalize_lines(parse_capture(raw), info, width)


def normalize_golden(text, info):
    """Golden text (comment lines dropped) normalized again."""
    lines = []
    for line in text.splitlines():
        if line.startswith('#'):
            continue
        tag, _, body = line.partition('|')
        lines.append((tag.strip(), body))
    return normalize_lines(lines, info)


def main(argv):
    info = Info(open(argv[1]).read() if len(argv) > 1 else '')
    raw = sys.stdin.buffer.read().decode('utf-8', errors='replace')
    for line in normalize_capture(raw, info):
        sys.stdout.buffer.write((line + '\n').encode('utf-8'))


if __name__ == '__main__':
    main(sys.argv)
