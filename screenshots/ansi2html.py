#!/usr/bin/env python3
"""ansi2html: turn a `tmux capture-pane -e -N -p` dump into a fixed-size HTML page.

Used by scripts/screenshots.  Handles the SGR codes tmux emits: bold, dim,
italic, underline, reverse, strike, hidden, the 8/16 colors, 256 colors and
24-bit colors (';' or ':' separated); every other escape sequence is dropped.
The page is a dark terminal in DejaVu Sans Mono, sized so that COLS x ROWS
cells fit exactly; the viewport size to screenshot it is printed as "W,H".

usage: ansi2html.py COLS ROWS IN.ans OUT.html [TITLE]
"""
import html
import math
import re
import sys

FONT_PX = 15
LINE_PX = 18
PAD_PX = 10
ADVANCE = 1233 / 2048  # DejaVu Sans Mono advance width, in em

DEFAULT_FG = (0xD4, 0xD4, 0xD4)
DEFAULT_BG = (0x1B, 0x1D, 0x22)
BASE16 = [
    (0x1B, 0x1D, 0x22), (0xE0, 0x55, 0x55), (0x4E, 0xC9, 0x6B), (0xE5, 0xC0, 0x4B),
    (0x4D, 0x8F, 0xE6), (0xC6, 0x78, 0xDD), (0x3F, 0xB8, 0xC8), (0xD4, 0xD4, 0xD4),
    (0x6E, 0x73, 0x7D), (0xFF, 0x6E, 0x6E), (0x7A, 0xE5, 0x8E), (0xFF, 0xDE, 0x6B),
    (0x72, 0xA9, 0xFF), (0xE0, 0x9A, 0xF5), (0x6F, 0xDC, 0xE8), (0xFF, 0xFF, 0xFF),
]
# Pure black is used as a foreground on colored bars (cyan selection, green
# title row): keep it truly black there, where contrast matters.
FG_BLACK = (0x00, 0x00, 0x00)


def color256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = (0, 95, 135, 175, 215, 255)
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + 10 * (n - 232)
    return (v, v, v)


class Pen:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None  # None = default, else an (r, g, b) or ('idx', n)
        self.bg = None
        self.bold = self.dim = self.italic = False
        self.underline = self.reverse = self.strike = self.hidden = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.italic,
                self.underline, self.reverse, self.strike, self.hidden)


def resolve(c, default, is_fg):
    if c is None:
        return default
    if c[0] == 'idx':
        if c[1] == 0 and is_fg:
            return FG_BLACK
        return color256(c[1])
    return c


def extended(params, i):
    """Parse 38/48 arguments starting at params[i]; return (color, next i)."""
    if i + 1 < len(params) and params[i + 1] == 5 and i + 2 < len(params):
        return ('idx', params[i + 2] & 255), i + 3
    if i + 1 < len(params) and params[i + 1] == 2 and i + 4 < len(params):
        return tuple(p & 255 for p in params[i + 2:i + 5]), i + 5
    return None, len(params)


def apply_sgr(pen, text):
    params = [int(p) if p else 0 for p in re.split('[;:]', text)] if text else [0]
    i = 0
    while i < len(params):
        p = params[i]
        i += 1
        if p == 0:
            pen.reset()
        elif p == 1:
            pen.bold = True
        elif p == 2:
            pen.dim = True
        elif p == 3:
            pen.italic = True
        elif p in (4, 21):
            pen.underline = True
        elif p == 7:
            pen.reverse = True
        elif p == 8:
            pen.hidden = True
        elif p == 9:
            pen.strike = True
        elif p == 22:
            pen.bold = pen.dim = False
        elif p == 23:
            pen.italic = False
        elif p == 24:
            pen.underline = False
        elif p == 27:
            pen.reverse = False
        elif p == 28:
            pen.hidden = False
        elif p == 29:
            pen.strike = False
        elif 30 <= p <= 37:
            pen.fg = ('idx', p - 30)
        elif p == 38:
            pen.fg, i = extended(params, i - 1)
        elif p == 39:
            pen.fg = None
        elif 40 <= p <= 47:
            pen.bg = ('idx', p - 40)
        elif p == 48:
            pen.bg, i = extended(params, i - 1)
        elif p == 49:
            pen.bg = None
        elif 90 <= p <= 97:
            pen.fg = ('idx', p - 90 + 8)
        elif 100 <= p <= 107:
            pen.bg = ('idx', p - 100 + 8)
        # 5/6 (blink) and anything else: ignored


def css(key):
    fg_c, bg_c, bold, dim, italic, underline, reverse, strike, hidden = key
    fg = resolve(fg_c, DEFAULT_FG, True)
    bg = resolve(bg_c, DEFAULT_BG, False)
    if reverse:
        fg, bg = bg, fg
    if dim:
        fg = tuple((a + b) // 2 for a, b in zip(fg, bg))
    if hidden:
        fg = bg
    out = []
    if fg != DEFAULT_FG:
        out.append('color:#%02x%02x%02x' % fg)
    if bg != DEFAULT_BG:
        out.append('background:#%02x%02x%02x' % bg)
    if bold:
        out.append('font-weight:bold')
    if italic:
        out.append('font-style:italic')
    deco = [d for d, on in (('underline', underline), ('line-through', strike)) if on]
    if deco:
        out.append('text-decoration:' + ' '.join(deco))
    return ';'.join(out)


TOKEN = re.compile(r'\x1b\[([0-9;:?<=>]*)([@-~])'   # CSI
                   r'|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)'  # OSC
                   r'|\x1b[()][0-9A-Za-z]|\x1b.'     # charset, other ESC
                   r'|[\x00-\x08\x0b-\x1f\x7f]')     # stray controls


def convert(data, rows):
    pen = Pen()
    lines = data.split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    lines = (lines + [''] * rows)[:rows]
    out = []
    for line in lines:
        spans = []
        pos = 0
        for m in TOKEN.finditer(line):
            if m.start() > pos:
                spans.append((pen.key(), line[pos:m.start()]))
            if m.group(2) == 'm' and not (m.group(1) or '').startswith(('?', '<', '=', '>')):
                apply_sgr(pen, m.group(1))
            pos = m.end()
        if pos < len(line):
            spans.append((pen.key(), line[pos:]))
        parts = []
        for key, text in spans:
            style = css(key)
            text = html.escape(text, quote=False)
            parts.append('<span style="%s">%s</span>' % (style, text) if style else text)
        out.append('<div class="l">%s</div>' % ''.join(parts))
    return '\n'.join(out)


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.strip().splitlines()[-1])
    cols, rows = int(sys.argv[1]), int(sys.argv[2])
    with open(sys.argv[3], encoding='utf-8', errors='replace') as f:
        body = convert(f.read(), rows)
    title = sys.argv[5] if len(sys.argv) == 6 else 'corotop'
    width = math.ceil(cols * ADVANCE * FONT_PX) + 2 * PAD_PX
    height = rows * LINE_PX + 2 * PAD_PX
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
html, body {{ margin: 0; padding: 0; background: #{'%02x%02x%02x' % DEFAULT_BG}; overflow: hidden; }}
#t {{ padding: {PAD_PX}px; color: #{'%02x%02x%02x' % DEFAULT_FG};
     font: {FONT_PX}px/{LINE_PX}px "DejaVu Sans Mono", monospace;
     font-variant-ligatures: none; font-kerning: none; }}
.l {{ white-space: pre; height: {LINE_PX}px; overflow: hidden; }}
.l span {{ display: inline-block; height: {LINE_PX}px; vertical-align: top; }}
</style></head>
<body><div id="t">
{body}
</div></body></html>
"""
    with open(sys.argv[4], 'w', encoding='utf-8') as f:
        f.write(page)
    print(f'{width},{height}')


if __name__ == '__main__':
    main()
