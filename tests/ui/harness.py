#!/usr/bin/env python3
"""harness: drive corotop's interactive interface in tmux and compare screens
with golden files.

    harness.py --tmux TMUX --corotop COROTOP --workload SCRIPTED
               [--ppt-target PPT_TARGET] [--heph-fixture HEPH_FIXTURE]
               FLOW...
    harness.py ... --regen FLOW...     rewrite the goldens of FLOW
    harness.py --list                  the flows, one a line

Each flow gets its own tmux server (-L corotop-ui-FLOW-PID, no config file),
one window of 100x30 running an interactive bash (TERM=xterm-256color,
LANG=C.UTF-8, HOME and XDG_CONFIG_HOME in a scratch directory holding a
corotop config, CONFIG, that makes the screens independent of time: lints
that never trip by themselves, and dead coroutines that stay listed for a
day instead of 3 s, so no step races their expiry; a flow that needs
another linger rewrites the config before it starts corotop,
Flow.write_config).  The flow types a command line into that shell:

    stty -a > stty-before; corotop -d 2 -- scripted 3 CTL INFO;
    echo corotop-rc=$? > rc; stty -a > stty-after

so corotop's exit status and the terminal modes it leaves behind are both
observable.  scripted (scripted.c) sets up a fixed table and idles; lines
written to the CTL fifo make it close two coroutines, exit, or both at
once.

The ppt flow attaches instead (corotop -p): it starts ppt-target
(tests/targets/ppt_target.c, --ppt-target) in the background of the
same shell, its stdin on a fifo the harness holds open for writing (so it
never reads EOF) and writes commands to ("tick 30"), then types

    stty -a > stty-before; corotop -d 2 -p $PID;
    echo corotop-rc=$? > rc; stty -a > stty-after

Without --ppt-target that flow is skipped.

The replay flow (flow_replay.py) runs no workload: heph-fixture
(heph_fixture.c, --heph-fixture) writes a fixed recording into the scratch
directory, and the shell, started with TZ=UTC, gets

    stty -a > stty-before; corotop -d 2 --replay FILE --paused;
    echo corotop-rc=$? > rc; stty -a > stty-after

Without --heph-fixture that flow is skipped.

Synchronisation is never a bare sleep: every step sends keys, then polls
`capture-pane` (every 50 ms) until the step's marker is on the screen (at
most WAIT, 30 s) and then until the normalized screen (normalize.py) equals
the golden (at most CONVERGE, 30 s more).  The bounds are deadlines, never
expectations of speed: a passing step takes as long as the machine needs,
only a broken one waits them out; so is the 60 s bound of every tmux call.
The only sleeps are the two "paused: the screen stays frozen" checks and
the exit flow's "the final state stays", which look for a change that
must not come; a slow machine makes them weaker, never wrong, and the
step after each pause check shows the change arriving once resumed.  On a
mismatch the step fails with a diff of golden and screen; the flow goes on
with its next step when the marker was seen (so one run reports every
broken screen), and stops when it was not.  Checks that goldens cannot
express (column alignment, no colour, no UTF-8, terminal restored, exit
status) are separate assertions.

Goldens are tests/ui/golden/FLOW-NN-STEP.txt.  --regen writes each one from
the screen once the marker is seen and the normalized screen has been
stable for 0.5 s; a regenerated golden records whatever corotop draws, bugs
included, so every regenerated file must be reviewed by eye before it is
committed (see regen-goldens.sh).  A golden that records a behaviour some
check reports as a bug says so in its header (KNOWN_BUGS below).

Exit status: 0 all passed, 1 a failure, 77 (meson's skip) without tmux or
when every flow asked for was skipped.
"""
import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Flows kept in modules of their own (flow_replay.py) `import harness`:
# that must be this module, even when it runs as __main__, so that they
# share its classes (Abort, Skip) rather than load a second copy.
sys.modules.setdefault('harness', sys.modules[__name__])
import normalize as nz  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.join(HERE, 'golden')
WAIT = 30.0         # deadline of every wait for a marker, a file, a prompt
POLL = 0.05
STABLE = 0.5        # --regen: the screen must not change for this long
CONVERGE = WAIT     # deadline from the marker to the golden
TMUX_TIMEOUT = 60.0  # deadline of one tmux command
WIDTH, HEIGHT = 100, 30
PROMPT = 'ui$'
STATUS = 3          # the workload's exit status in every flow

# Lints depend on time (suspended > 5 s, running > 1 s); pin them so the
# WARN column and the warnings meter are the same at every capture: the
# running coroutine always stalls, nothing else ever trips.  Dead
# coroutines stay listed for a day (the default linger is 3 s), so the
# steps that look at D rows never race their expiry, however slow the
# machine; the flows that test the expiry (dead) or depend on it (replay,
# preload, exit) set their own linger (Flow.write_config).
CONFIG = """\
# corotop UI tests: lints that do not depend on time.
lint.lost-wakeup.threshold = 86400
lint.stall.threshold = 0
lint.dead-station.threshold = 86400
linger = 86400
"""

# tmux itself runs in UTF-8 whatever the caller's locale (the flows set the
# locale of the pane), and never nested in the caller's tmux.
TMUX_ENV = {k: v for k, v in os.environ.items()
            if k not in ('TMUX', 'TMUX_PANE', 'LC_ALL', 'LC_CTYPE')}
TMUX_ENV['LANG'] = 'C.UTF-8'

# Pane state a program must leave as it found it (tmux formats).
PANE_FLAGS = ('alternate_on', 'cursor_flag', 'keypad_flag',
              'keypad_cursor_flag', 'mouse_any_flag', 'mouse_standard_flag',
              'mouse_button_flag', 'mouse_all_flag', 'mouse_sgr_flag',
              'insert_flag', 'wrap_flag', 'origin_flag')


class Abort(Exception):
    """The flow can not go on (a marker never showed up)."""


class Skip(Exception):
    """The flow can not run here (a program it needs was not given)."""


def log(msg=''):
    print(msg, flush=True)


# ---- screen predicates (markers) -------------------------------------------

class Screen:
    def __init__(self, raw, info, width):
        self.raw = raw
        self.cells = nz.parse_cells(raw)
        self.parsed = nz.parse_capture(raw)
        self.text = [t for _, t in self.parsed]
        self.norm = nz.normalize_lines(self.parsed, info, width)

    def has(self, regex):
        return any(re.search(regex, t) for t in self.text)

    def selected(self):
        """Text of the highlighted table/list row, or None."""
        for n, (tag, text) in enumerate(self.parsed):
            if 5 <= n < len(self.parsed) - 1 and \
                    tag.split('/')[0] in ('cyan', 'rev'):
                return text
        return None

    def tab(self):
        """The ppt view's selected buffer tab (highlighted on line 4)."""
        return nz.highlighted(self.cells[4]) if len(self.cells) > 4 else ''

    def titles(self):
        for t in self.text:
            tt = nz.title_tokens(t)
            if tt:
                return tt
        return None


def has(regex):
    def m(s):
        return s.has(regex)
    m.__doc__ = 'screen shows /%s/' % regex
    return m


def lacks(regex):
    def m(s):
        return not s.has(regex)
    m.__doc__ = 'screen does not show /%s/' % regex
    return m


def selected(cid):
    def m(s):
        row = s.selected()
        return row is not None and re.match(r'^\s*%s\s' % cid, row)
    m.__doc__ = 'row %s is selected' % cid
    return m


def row(n, cid):
    def m(s):
        # Rows start under the column titles (thread meters may sit above
        # them).
        first = next((k + 1 for k, t in enumerate(s.text)
                      if nz.title_tokens(t)), 5)
        return len(s.text) > first + n and \
            re.match(r'^\s*%s\s' % cid, s.text[first + n])
    m.__doc__ = 'table row %d is %s' % (n, cid)
    return m


def size(w, h):
    def m(s):
        return len(s.text) == h and max(len(t) for t in s.text) <= w
    m.__doc__ = 'the screen is %dx%d' % (w, h)
    return m


def tab(name):
    def m(s):
        return s.tab() == name
    m.__doc__ = 'the ppt tab %r is selected' % name
    return m


def both(*ms):
    def m(s):
        return all(x(s) for x in ms)
    m.__doc__ = ' and '.join(x.__doc__ for x in ms)
    return m


def either(*ms):
    def m(s):
        return any(x(s) for x in ms)
    m.__doc__ = '(%s)' % ' or '.join(x.__doc__ for x in ms)
    return m


TABLE = has(r'Coroutines 12: R 1 +S 11 ')   # the workload's final state
TABLE_ROWS = both(TABLE, has(r'^\s+100c S '), has(r'^\s+1001 S '))


# ---- the session -----------------------------------------------------------

class Flow:
    def __init__(self, args, name):
        self.args = args
        self.name = name
        self.failures = []
        self.step_no = 0
        self.run_no = 0
        self.sock = 'corotop-ui-%s-%d' % (name, os.getpid())
        self.dir = tempfile.mkdtemp(prefix='corotop-ui-%s-' % name)
        self.info = nz.Info()
        self.files = {}
        self.workload_pid = None
        self.workload_exe = args.workload
        self.corotop_pid = None
        self.ppt_fd = None
        self.ppt_answers = 0
        self.server = False
        os.makedirs(os.path.join(self.dir, 'config', 'corotop'))
        self.write_config()

    def write_config(self, linger=None):
        """(Re)write the scratch corotop config: CONFIG, with `linger =
        LINGER` (seconds a dead coroutine stays listed) instead of its
        86400 when linger is given.  corotop reads it when it starts, so
        it applies from the next start on."""
        text = CONFIG
        if linger is not None:
            text = re.sub(r'(?m)^linger = \d+$', 'linger = %d' % linger,
                          text)
        with open(os.path.join(self.dir, 'config', 'corotop', 'config'),
                  'w') as f:
            f.write(text)

    # tmux plumbing
    def tmux(self, *a, check=True):
        """Run one tmux command on this flow's server; its stdout.  The
        timeout is a deadline for a hung server, not a speed bound."""
        try:
            r = subprocess.run(
                [self.args.tmux, '-u', '-L', self.sock] + list(a),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=TMUX_ENV, timeout=TMUX_TIMEOUT, encoding='utf-8',
                errors='replace')
        except subprocess.TimeoutExpired:
            raise Abort('tmux %s: no answer within %.0f s' %
                        (' '.join(a), TMUX_TIMEOUT)) from None
        if check and r.returncode:
            raise Abort('tmux %s: %s' % (' '.join(a), r.stderr.strip()))
        return r.stdout

    def open(self, lang='C.UTF-8', env_extra=()):
        """Start the pane's shell; env_extra: more NAME=VALUE for it."""
        env = ['env', '-u', 'NO_COLOR', '-u', 'LC_ALL', '-u', 'LC_CTYPE',
               '-u', 'LC_MESSAGES', '-u', 'LINES', '-u', 'COLUMNS',
               '-u', 'ESCDELAY', '-u', 'PROMPT_COMMAND'] + list(env_extra)
        env += ['TERM=xterm-256color', 'LANG=' + lang,
                'HOME=' + self.dir,
                'XDG_CONFIG_HOME=' + os.path.join(self.dir, 'config'),
                'HISTFILE=/dev/null', 'PS1=%s ' % PROMPT,
                'bash', '--noprofile', '--norc', '-i']
        self.tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'ui',
                  '-c', self.dir, '-x', str(WIDTH), '-y', str(HEIGHT),
                  'exec ' + ' '.join(shlex.quote(w) for w in env))
        self.server = True
        self.tmux('set-option', '-g', 'status', 'off')
        self.wait_prompt('the shell starts')
        self.base_flags = self.pane_flags()

    def close(self):
        if self.server:
            self.server = False
            try:
                self.tmux('kill-server', check=False)
            except Abort as e:  # the SIGKILLs below still end our programs
                log('close: %s' % e)
        # kill-server hangs up on the shell and corotop, which ends the
        # workload; make sure, in case one of them ignored it.  ppt-target
        # ends when its fifo has no writer left (EOF).
        if self.ppt_fd is not None:
            os.close(self.ppt_fd)
            self.ppt_fd = None
        self.kill_ours()
        if self.failures and os.environ.get('COROTOP_UI_KEEP'):
            log('kept %s' % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def capture(self):
        out = self.tmux('capture-pane', '-p', '-e', '-t', 'ui', ';',
                        'display-message', '-p', '-t', 'ui', '#{pane_width}')
        raw, width = out.rstrip('\n').rsplit('\n', 1)
        return Screen(raw + '\n', self.info, int(width))

    def keys(self, *names):
        self.tmux('send-keys', '-t', 'ui', *names)

    def type(self, text):
        self.tmux('send-keys', '-t', 'ui', '-l', text)

    def type_corotop(self, args, env='', cd=''):
        """Type `[cd CD;] ENV corotop ARGS` (shell words, quoted by the
        caller) into the shell and Enter; its exit status and the
        terminal's modes before and after go to the flow's files
        (self.files)."""
        self.run_no += 1
        n = self.run_no
        f = {k: os.path.join(self.dir, '%s%d' % (k, n))
             for k in ('rc', 'stty-before', 'stty-after')}
        q = shlex.quote
        self.files = f
        self.type('%sstty -a > %s; %s%s %s; echo corotop-rc=$? > %s; '
                  'stty -a > %s%s' % (
                      'cd %s; ' % q(cd) if cd else '', q(f['stty-before']),
                      env, q(self.args.corotop), args, q(f['rc']),
                      q(f['stty-after']), '; cd ..' if cd else ''))
        self.keys('Enter')

    def resize(self, w, h):
        self.tmux('resize-window', '-t', 'ui', '-x', str(w), '-y', str(h))

    def pane_flags(self):
        out = self.tmux('display-message', '-p', '-t', 'ui',
                        ' '.join('#{%s}' % f for f in PANE_FLAGS))
        return dict(zip(PANE_FLAGS, out.split()))

    # reporting
    def fail(self, what, detail=''):
        self.failures.append(what)
        log('FAIL %s/%s' % (self.name, what))
        if detail:
            log(detail.rstrip('\n'))

    def ok(self, what):
        log('ok   %s/%s' % (self.name, what))

    def check(self, cond, what, detail=''):
        if cond:
            self.ok(what)
        else:
            self.fail(what, detail)
        return cond

    # waiting
    def wait(self, pred, what, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while True:
            s = self.capture()
            if pred(s):
                return s
            if time.monotonic() > deadline:
                raise Abort('%s: timed out after %.0f s waiting until %s; '
                            'screen:\n%s' % (what, timeout, pred.__doc__,
                                             screen_dump(s)))
            time.sleep(POLL)

    def wait_file(self, path, what, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise Abort('%s: %s did not appear within %.0f s; screen:\n%s'
                            % (what, os.path.basename(path), timeout,
                               screen_dump(self.capture())))
            time.sleep(POLL)
        with open(path) as f:
            return f.read()

    def wait_prompt(self, what):
        def at_prompt(s):
            lines = [t for t in s.text if t.strip()]
            return bool(lines) and lines[-1] == PROMPT
        at_prompt.__doc__ = 'the shell prompt %r is the last line' % PROMPT
        return self.wait(at_prompt, what)

    # corotop
    def start(self, opts='', env='', wait=TABLE_ROWS):
        """Type the corotop command line into the shell; wait for `wait`."""
        self.run_no += 1
        n = self.run_no
        f = {k: os.path.join(self.dir, '%s%d' % (k, n))
             for k in ('ctl', 'info', 'rc', 'stty-before', 'stty-after')}
        os.mkfifo(f['ctl'])
        q = shlex.quote
        # (The last printf erases the screen below the cursor: a resize
        # while corotop ran reflows this command line under the alternate
        # screen, and the prompt after it would land on a line with the
        # command's leftovers -- as it does when the build directory's
        # path is of an unlucky length.)
        cmd = ('stty -a > %s; %s%s -d 2 %s-- %s %d %s %s; '
               'echo corotop-rc=$? > %s; stty -a > %s; printf "\\033[J"' %
               (q(f['stty-before']), env, q(self.args.corotop),
                opts + ' ' if opts else '', q(self.args.workload), STATUS,
                q(f['ctl']), q(f['info']), q(f['rc']), q(f['stty-after'])))
        self.files = f
        self.workload_pid = None
        self.workload_exe = self.args.workload
        self.type(cmd)
        self.keys('Enter')
        text = self.wait_file(f['info'], 'the workload starts')
        if text.startswith('error'):
            raise Abort('workload: ' + text.strip())
        self.info = nz.Info(text)
        self.workload_pid = int(self.info.pid)
        self.corotop_pid = parent_of(self.workload_pid)
        return self.wait(wait, 'corotop shows the table')

    def start_ppt(self):
        """Start ppt-target in the background of the shell, its stdin on a
        fifo this harness keeps open, then type corotop -p $PID; wait until
        corotop shows its table, attached."""
        self.run_no += 1
        n = self.run_no
        f = {k: os.path.join(self.dir, '%s%d' % (k, n))
             for k in ('ppt-in', 'ppt-out', 'rc', 'stty-before',
                       'stty-after')}
        os.mkfifo(f['ppt-in'])
        # O_RDWR: opening does not wait for a reader, and while we hold it
        # the target never reads EOF.
        self.ppt_fd = os.open(f['ppt-in'], os.O_RDWR)
        self.ppt_answers = 0
        self.files = f
        q = shlex.quote
        self.type('%s < %s > %s & PID=$!' % (
            q(self.args.ppt_target), q(f['ppt-in']), q(f['ppt-out'])))
        self.keys('Enter')
        ready = self.ppt_answer('ppt-target starts')
        if not re.fullmatch(r'ready \d+', ready):
            raise Abort('ppt-target: %s' % ready)
        self.workload_pid = int(ready.split()[1])
        self.workload_exe = self.args.ppt_target
        self.info = nz.Info('pid %d\n' % self.workload_pid)
        self.wait_prompt('ppt-target runs in the background')
        self.type('stty -a > %s; %s -d 2 -p $PID; echo corotop-rc=$? > %s; '
                  'stty -a > %s' % (q(f['stty-before']), q(self.args.corotop),
                                    q(f['rc']), q(f['stty-after'])))
        self.keys('Enter')
        s = self.wait(has(r'^ corotop  pid \d+ attached, agent pid \d+ '),
                      'corotop attaches')
        self.corotop_pid = child_running(self.shell_pid(), self.args.corotop)
        return s

    def start_replay(self, recording, opts='', wait=None):
        """Type corotop --replay RECORDING (no workload) into the shell;
        wait for `wait` (default: the replay header)."""
        self.workload_pid = None
        self.type_corotop('-d 2 --replay %s%s' % (
            shlex.quote(recording), ' ' + opts if opts else ''))
        s = self.wait(wait or has(r'^ corotop  replay '), 'corotop replays')
        self.corotop_pid = child_running(self.shell_pid(), self.args.corotop)
        return s

    def shell_pid(self):
        return int(self.tmux('display-message', '-p', '-t', 'ui',
                             '#{pane_pid}').strip())

    def ppt_answer(self, what):
        """The next line ppt-target writes (each command answers one)."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                with open(self.files['ppt-out']) as f:
                    lines = f.read().split('\n')
            except FileNotFoundError:
                lines = []
            # complete lines only: the last element is '' or partial
            if len(lines) - 1 > self.ppt_answers:
                self.ppt_answers += 1
                return lines[self.ppt_answers - 1]
            if time.monotonic() > deadline:
                raise Abort('%s: ppt-target did not answer within %.0f s; '
                            'screen:\n%s' % (what, WAIT,
                                              screen_dump(self.capture())))
            time.sleep(POLL)

    def ppt(self, line):
        """Send ppt-target a command; its answer must start with "ok"."""
        os.write(self.ppt_fd, (line + '\n').encode())
        answer = self.ppt_answer(line)
        if not answer.startswith('ok'):
            raise Abort('ppt-target %r: %s' % (line, answer))
        return answer

    def kill_ours(self):
        """SIGKILL this flow's corotop and workload if they still run (by
        pid, checking the pid still names the same program)."""
        for pid, exe in ((self.corotop_pid, self.args.corotop),
                         (self.workload_pid, self.workload_exe)):
            if pid and os.path.basename(exe) in proc_cmdline(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def control(self, line):
        """Write a line to the workload's control fifo (bounded: the fifo
        has a reader as long as the workload lives)."""
        fd = None
        deadline = time.monotonic() + WAIT
        while fd is None:
            try:
                fd = os.open(self.files['ctl'], os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if time.monotonic() > deadline:
                    raise Abort('the workload does not read its fifo')
                time.sleep(POLL)
        os.write(fd, (line + '\n').encode())
        os.close(fd)

    # steps
    def step(self, desc, keys=(), text=None, marker=None, golden=True,
             same_as=None, timeout=WAIT):
        """Send keys (tmux key names) and/or literal text, wait for the
        marker, then compare with golden FLOW-NN-DESC.txt (or with the
        golden named by same_as).  Returns the screen."""
        self.step_no += 1
        label = '%02d-%s' % (self.step_no, desc)
        if keys:
            self.keys(*keys)
        if text:
            self.type(text)
        s = self.wait(marker or (lambda _: True), label, timeout)
        if not golden and not same_as:
            self.ok(label)
            return s
        name = same_as or '%s-%s' % (self.name, label)
        path = os.path.join(GOLDEN_DIR, name + '.txt')
        if self.args.regen and not same_as:
            s = self.wait_stable(marker, label)
            write_golden(path, self.name, label, s)
            log('wrote %s' % os.path.relpath(path, HERE))
            return s
        if not os.path.exists(path):
            self.fail(label, 'missing golden %s (run regen-goldens.sh)' %
                      path)
            return s
        with open(path, encoding='utf-8') as f:
            want = nz.normalize_golden(f.read(), self.info)
        # The marker is there: the screen converges on the golden within a
        # few refreshes (-d 2: every 0.2 s), or it is wrong.
        deadline = time.monotonic() + min(timeout, CONVERGE)
        while s.norm != want:
            if time.monotonic() > deadline:
                diff = difflib.unified_diff(
                    want, s.norm, 'golden/' + name + '.txt', 'screen',
                    lineterm='')
                self.fail(label, '\n'.join(diff))
                return s
            time.sleep(POLL)
            s = self.capture()
        self.ok(label)
        return s

    def expect(self, keys, pred, what, timeout=WAIT):
        """Send keys; check that the screen comes to satisfy pred."""
        self.keys(*keys)
        try:
            self.wait(pred, what, timeout=timeout)
            self.ok(what)
        except Abort as e:
            self.fail(what, str(e))

    def resize_step(self, w, h, desc, marker, same_as=None, golden=True):
        """Resize the window; corotop must re-lay out on the SIGWINCH
        alone.  When it does not, that is a failure of its own, and Ctrl-L
        (a key, so curses reports the resize) lets the flow go on to the
        golden of the new size."""
        self.resize(w, h)
        try:
            self.wait(marker, 'resize to %dx%d' % (w, h), timeout=WAIT)
            self.ok('%dx%d: re-laid out on SIGWINCH alone' % (w, h))
        except Abort as e:
            self.fail('%dx%d: re-laid out on SIGWINCH alone' % (w, h),
                      str(e))
            self.keys('C-l')
        return self.step(desc, marker=marker, same_as=same_as, golden=golden)

    def wait_stable(self, marker, label):
        pred = marker or (lambda _: True)
        last, since = None, time.monotonic()
        deadline = since + WAIT
        while True:
            s = self.capture()
            if not pred(s) or s.norm != last:
                last, since = s.norm, time.monotonic()
            elif time.monotonic() - since >= STABLE:
                return s
            if time.monotonic() > deadline:
                raise Abort('%s: the screen did not settle' % label)
            time.sleep(POLL)

    def finish(self, rc_expected, what, attached=False, buffers=True):
        """corotop has been told to end: check it did, with rc_expected,
        and that the shell and the terminal are back as they were.  Then
        the workload is gone -- or, attached (-p), still runs, detached
        (its ppt buffers given back, unless it had none: scanned)."""
        s = self.wait_prompt(what + ': the shell prompt is back')
        self.check(not s.has(r'^ corotop  ') and not s.has('F10Quit'),
                   what + ': no corotop text left on the screen',
                   screen_dump(s))
        rc = self.wait_file(self.files['rc'], what).strip()
        self.check(rc == 'corotop-rc=%d' % rc_expected,
                   '%s: exit status %d' % (what, rc_expected),
                   'got %s' % rc)
        before = stty_flags(self.wait_file(self.files['stty-before'], what))
        after = stty_flags(self.wait_file(self.files['stty-after'], what))
        self.check('icanon' in after and 'echo' in after,
                   what + ': icanon and echo are on after corotop',
                   'stty -a after: %s' % ' '.join(sorted(after)))
        self.check(before == after,
                   what + ': stty modes as before corotop',
                   'lost: %s\ngained: %s' % (' '.join(sorted(before - after)),
                                             ' '.join(sorted(after - before))))
        flags = self.pane_flags()
        self.check(flags == self.base_flags,
                   what + ': pane modes (alternate screen, cursor, keypad, '
                   'mouse) as before corotop',
                   'before %s\nafter  %s' % (self.base_flags, flags))
        if attached:
            self.check(workload_alive(self.workload_pid),
                       what + ': the target still runs')
            if not buffers:
                return
            state = self.ppt('state')
            self.check(state == 'ok hmem=0 stat=0 grow=0,0',
                       what + ': every buffer detached (_ppt_hmem and '
                       '_ppt_stat back to 0)', 'state: %s' % state)
            return
        if self.workload_pid is None:  # a replay: nothing else ran
            return
        deadline = time.monotonic() + WAIT
        while workload_alive(self.workload_pid) and \
                time.monotonic() < deadline:
            time.sleep(POLL)
        self.check(not workload_alive(self.workload_pid),
                   what + ': the workload is gone')


def parent_of(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('PPid:'):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    raise Abort('the workload (pid %d) has no parent' % pid)


def child_running(ppid, exe):
    """The pid of a child of ppid running exe, or None."""
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                if int(f.read().rsplit(')', 1)[1].split()[1]) != ppid:
                    continue
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if proc_cmdline(int(d)).split('\0')[0] == exe:
            return int(d)
    return None


def proc_cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().decode(errors='replace')
    except (FileNotFoundError, ProcessLookupError):
        return ''


def workload_alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError):
        return False


def stty_flags(text):
    """The boolean modes of `stty -a` (e.g. icanon, -echo), sizes left out."""
    out = set()
    for tok in re.split(r'[;\s]+', text):
        if re.fullmatch(r'-?[a-z0-9]+', tok) and \
                not re.search(r'^(rows|columns|line|speed|baud|min|time)$',
                              tok) and not tok.isdigit():
            out.add(tok)
    return out


def screen_dump(s):
    return '\n'.join('  |' + t for t in s.text)


# Goldens that record behaviour a check in the same flow reports as a bug;
# the note goes into the golden's header so that a reviewer knows.  Remove
# the entry when the bug is fixed and the golden regenerated.
# Goldens that record a known bug, by golden name -> description.  Their
# header says so; empty when every recorded screen is the intended one.
KNOWN_BUGS = {}


def write_golden(path, flow, label, s):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    name = os.path.basename(path)[:-len('.txt')]
    with open(path, 'w', encoding='utf-8') as f:
        f.write('# corotop UI golden: flow %s, step %s, %d lines.  Written by '
                'regen-goldens.sh;\n# review by eye before committing.  '
                'Format: normalize.py.\n' % (flow, label, len(s.text)))
        if name in KNOWN_BUGS:
            f.write('# KNOWN BUG: %s\n' % KNOWN_BUGS[name])
        for line in s.norm:
            f.write(line + '\n')


# ---- invariant checks ------------------------------------------------------

def check_alignment(fl, s, what):
    """Every column title sits over its cells: right-aligned titles end
    where the cells end, left-aligned ones start where they start."""
    titles = None
    rows = []
    for t in s.text:
        if titles is None:
            titles = nz.title_tokens(t)
            continue
        toks = [(m.group(), m.start(), m.end())
                for m in re.finditer(r'\S+', t)]
        if len(toks) >= 2 and re.fullmatch('[0-9a-f]+', toks[0][0]) and \
                toks[1][0] in 'RSD':
            rows.append(toks)
    if not titles or not rows:
        return fl.fail(what + ': column titles over their cells',
                       'no table on the screen')
    bad = []
    for i, (title, ts, te) in enumerate(titles):
        cells = [r[i] for r in rows if i < len(r)]
        if not cells:
            continue
        right = all(c[2] == te for c in cells)
        left = all(c[1] == ts for c in cells)
        if not right and not left:
            bad.append('%r at columns %d-%d, cells end at %s' % (
                title, ts, te - 1, sorted({c[2] - 1 for c in cells})))
    fl.check(not bad, what + ': column titles over their cells',
             '\n'.join(bad) + '\n' + screen_dump(s))


def table_ids(s):
    return [m.group(1) for t in s.text
            for m in [re.match(r'^\s+([0-9a-f]+) [RSD] ', t)] if m]


def check_rows(fl, s, ids, what):
    got = table_ids(s)
    fl.check(got == ids, what, 'rows: %s, want %s' % (' '.join(got) or
                                                      'none', ' '.join(ids)))


def check_no_color(fl, s, what):
    fl.check(not nz.has_color_escapes(s.raw), what + ': no colour escapes',
             repr(s.raw[:400]))


def check_ascii(fl, s, what):
    bad = sorted({c for c in s.raw if ord(c) > 127})
    fl.check(not bad, what + ': ASCII only',
             'non-ASCII: %s\n%s' % (' '.join('U+%04X' % ord(c) for c in bad),
                                     screen_dump(s)))


# ---- flows -----------------------------------------------------------------

def flow_start(fl):
    """The table as corotop first shows it, and its layout.  No row shows
    WHERE 0x0: 100c, which never ran, has "-" for its WHERE as for its
    TID.  No screen from the first paint on has a row whose TID is "-"
    but 100c's: a coroutine is a row once its first transition is known
    (or, 100c, once it stayed a second without one: it never ran)."""
    fl.open()
    fl.start()
    placeholders = []

    def table_rows(s):
        placeholders.extend(
            t for t in s.text
            if re.match(r'^\s+(?!100c )[0-9a-f]+ [RSD]\s+-\s', t))
        return TABLE_ROWS(s)
    table_rows.__doc__ = TABLE_ROWS.__doc__
    s = fl.step('table', marker=table_rows)
    fl.check(not placeholders,
             'no row with TID - before its first transition, from the '
             'first paint on', '\n'.join(placeholders))
    check_alignment(fl, s, 'table')
    fl.check(not s.has(r'(^|\s)0x0(\s|$)') and
             s.has(r'^\s+100c S\s+-\s.* never-ran\s+-\s*$'),
             'no WHERE 0x0: the coroutine that never ran shows - for its '
             'TID and WHERE', screen_dump(s))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_sort(fl):
    """< wraps to the last column, > comes back and goes on, I inverts;
    a sort column the screen does not show is named on the status line."""
    fl.open()
    fl.start()
    # (the last column, whichever it is: WARN today)
    fl.step('prev-wraps-to-last', keys=['<'],
            marker=has(r'^ sorted by (?!ID$)\S+$'))
    fl.step('next-back-to-id', keys=['>'], marker=has(r'^ sorted by ID$'))
    s = fl.step('next-state', keys=['>'], marker=has(r'^ sorted by S$'))
    check_alignment(fl, s, 'sorted by S')
    fl.step('invert', keys=['I'], marker=has(r'^ sorted by S \(inverted\)$'))
    fl.step('next-switches-inverted', keys=['>', '>', '>', '>'],
            marker=has(r'^ sorted by SWITCHES \(inverted\)$'))
    fl.step('prev-id-inverted', keys=['<'] * 5,
            marker=has(r'^ sorted by ID \(inverted\)$'))
    # SWITCHES is not in the table at 100 columns: once the one-shot
    # message goes, the status line goes on naming it; scrolled to it,
    # it is on the screen and the line is blank.
    fl.step('switches', keys=['I'] + ['>'] * 5,
            marker=has(r'^ sorted by SWITCHES$'), golden=False)
    fl.step('switches-off-screen', keys=['j'],
            marker=has(r'^ sorted by SWITCHES: off screen \(Right scrolls '
                       r'to it\)$'))
    fl.step('switches-scrolled-to', keys=['Right'],
            marker=both(has(r'^<.* SWITCHES'), lacks(r'sorted by')),
            golden=False)
    fl.step('id-shown', keys=['Left', '<'] + ['<'] * 4 + ['j'],
            marker=both(lacks(r'sorted by'), has(r'^\s+1002 S ')),
            golden=False)
    # A rate sorts busiest first on the first press: the running 1007
    # (RUN% near 100) heads the table, the arrow points down; I inverts.
    fl.step('run-busiest-first', keys=['>'] * 7,
            marker=both(has(r'^ sorted by RUN%$'), row(0, '1007')),
            golden=False)
    fl.step('run-arrow-down', keys=['Right'],
            marker=has(r'RUN%\u25bc'), golden=False)
    s = fl.step('run-inverted', keys=['I'],
                marker=both(has(r'^ sorted by RUN% \(inverted\)$'),
                            has(r'RUN%\u25b2')),
                golden=False)
    ids = table_ids(s)
    fl.check(ids[-1:] == ['1007'], 'RUN% inverted: the running 1007 last',
             screen_dump(s))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_search(fl):
    """/ incremental search, Enter keeps it, n and N cycle, Esc clears
    it, no match."""
    fl.open()
    fl.start()
    fl.step('prompt', keys=['/'], marker=has(r'^Search:$'))
    fl.step('typed', text='cafe',
            marker=both(has(r'^Search: cafe$'), selected('1003')))
    s = fl.step('kept', keys=['Enter'],
                marker=both(has(r'search: cafe$'), has('F10Quit')))
    fl.check(s.text[3] == ' search: cafe',
             'the status line says " search: cafe" (one leading blank, as '
             '" filter: ..." has)', 'status line: %r' % s.text[3])
    fl.step('next', keys=['n'], marker=selected('1006'))
    fl.step('next-2', keys=['n'], marker=selected('100b'), golden=False)
    fl.step('next-wraps', keys=['n'], marker=selected('1003'))
    fl.step('prev-wraps', keys=['N'], marker=selected('100b'))
    fl.step('esc-clears', keys=['Escape'],
            marker=both(lacks(r'search: cafe'), has('F10Quit'),
                        selected('100b')), golden=False)
    fl.step('no-match', keys=['/'], text='qqq',
            marker=has(r"no match for 'qqq'"), golden=False)
    fl.step('no-match-kept', keys=['Enter'],
            marker=both(has(r"^ no match for 'qqq'$"), has('F10Quit')))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_filter_substring(fl):
    """\\ filters on a substring of any cell; Esc clears the filter."""
    fl.open()
    fl.start()
    fl.step('typed', keys=['\\'], text='bee', marker=has(r'^Filter: bee$'))
    fl.step('kept', keys=['Enter'],
            marker=both(has(r'^ filter: bee$'), has('F10Quit')))
    fl.step('edited', keys=['\\'], text='x', marker=has(r'^Filter: beex$'),
            golden=False)
    # Esc cancels the edit: the filter is "bee" again.
    fl.step('cancelled', keys=['Escape'],
            marker=both(has(r'^ filter: '), has('F10Quit')),
            same_as='filter-substring-02-kept')
    fl.step('cleared', keys=['Escape'],
            marker=both(lacks('filter:'), has(r'^\s+1001 S ')))
    fl.step('nothing-matches', keys=['\\'], text='zzz\r',
            marker=has('no coroutine matches the filter'))
    # The line opens with the filter in it: Ctrl-W deletes a word, Ctrl-U
    # the whole line, as in readline.
    fl.step('ctrl-w', keys=['\\'], text=' zz bee',
            marker=has(r'^Filter: zzz zz bee$'), golden=False)
    fl.step('word-deleted', keys=['C-w'], marker=has(r'^Filter: zzz zz\s*$'),
            golden=False)
    fl.step('line-deleted', keys=['C-u'], marker=has(r'^Filter:\s*$'),
            golden=False)
    fl.step('retyped', keys=[], text='bee\r',
            marker=both(has(r'^ filter: bee$'), has('F10Quit')),
            same_as='filter-substring-02-kept')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_filter_regex(fl):
    """\\ with a leading ! filters on a regex matched against each name
    cell (so ^ and $ anchor at the ID cell's ends); a bad regex is reported
    and does not apply."""
    fl.open()
    fl.start()
    fl.step('regex', keys=['\\'], text='!^100[2-4]$\r',
            marker=has(r'^ filter: !\^100\[2-4\]\$$'))
    s = fl.step('bad-regex', keys=['\\'] + ['BSpace'] * 11, text='!(\r',
                marker=has(r"bad regex"))
    check_rows(fl, s, ['1002', '1003', '1004'],
               'a rejected regex leaves the previous filter in effect')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_filter_field(fl):
    """\\ with field terms: state=S, id=0x1003, combined terms, an
    unknown field, name= (a substring) and name== (the whole name)."""
    fl.open()
    fl.start()
    fl.step('state', keys=['\\'], text='state=S\r',
            marker=has(r'^ filter: state=S$'))
    # Which row ends up selected when the selected coroutine is filtered
    # out depends on which intermediate filters got a rebuild, i.e. on how
    # the typed keys were batched (see the typeahead flow).  So each step
    # keeps the selected coroutine in the next filter's rows.
    fl.step('id', keys=['\\'] + ['BSpace'] * 7, text='id=0x1003\r',
            marker=has(r'^ filter: id=0x1003$'))
    fl.step('state-and-substring', keys=['\\'] + ['BSpace'] * 9,
            text='state=s cafe\r', marker=has(r'^ filter: state=s cafe$'))
    s = fl.step('unknown-field', keys=['\\'] + ['BSpace'] * 12,
                text='foo=1\r', marker=has(r"no column 'foo'"))
    check_rows(fl, s, ['1003', '1006', '100b'],
               'a rejected filter leaves the previous one in effect')
    # name= looks for a substring, as htop's filter does; name== is the
    # whole name.
    s = fl.step('name-substring', keys=['\\', 'C-u'], text='name=PARS\r',
                marker=has(r'^ filter: name=PARS$'), golden=False)
    check_rows(fl, s, ['1003', '1009'],
               'name=PARS keeps parser and parser-2')
    s = fl.step('name-exact', keys=['\\', 'C-u'], text='name==parser\r',
                marker=has(r'^ filter: name==parser$'), golden=False)
    check_rows(fl, s, ['1003'], 'name==parser keeps parser alone')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_detail(fl):
    """Enter drills into a coroutine; Esc, Backspace and Left go back."""
    fl.open()
    fl.start()
    fl.step('1001', keys=['Enter'], marker=has(r'^ Coroutine 1001 '))
    fl.step('back-esc', keys=['Escape'], marker=TABLE_ROWS,
            same_as='start-01-table')
    fl.step('1006-full-ring', keys=['j'] * 5 + ['Enter'],
            marker=has(r'^ Coroutine 1006 '))
    fl.step('back-backspace', keys=['BSpace'],
            marker=both(TABLE_ROWS, selected('1006')))
    fl.step('1007-running', keys=['j', 'Enter'],
            marker=has(r'^ Coroutine 1007 '))
    fl.step('back-left', keys=['Left'],
            marker=both(TABLE_ROWS, selected('1007')), golden=False)
    fl.step('100c-never-ran', keys=['G', 'Enter'],
            marker=has(r'^ Coroutine 100c '))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_hot(fl):
    """H shows the hot stacks the workload stored (60/30/6/4 samples), one
    row per function stack: the two stacks that differ only in hot_leaf_b's
    pc are one row of 10, whose %TOTAL (40) is hot_leaf_b's time in every
    stack; the columns say their windows.  L shows rows by line, then by
    address (the 6 and the 4 apart; %TOTAL of hot_leaf_b+0x1 is that pc's
    36 in two stacks), then by function again.  t switches to
    the caller -> callee tree, C closes it, + opens a node, E opens all; z
    zeroes the counts; x writes them, folded; the detail view of 1001
    lists its own hot stack; Esc goes back.  The window is an hour: with
    the default 30 s, a machine slow enough to take that long over the
    steps would see the stacks leave it (--hot-window 3600)."""
    fl.open()
    fl.start(opts='--hot-window 3600')
    fl.control('hot')
    fl.step('list', keys=['H'],
            marker=both(has(r'^\s+60\.0\s+60\.0\s+60\s+hot_leaf_a '
                            r'\u2190 hot_mid \u2190 hot_root$'),
                        has(r'^\s+10\.0\s+40\.0\s+10\s+hot_leaf_b '
                            r'\u2190 hot_root$'),
                        has(r'^%SELF \d+s %TOTAL \d+s SAMPLES all  STACK by '
                            r'function'),
                        has(r'^ Hot stacks by function: ')))
    fl.step('down', keys=['j'], marker=has(r'^\s+#0\s+hot_leaf_b\+0x1 '),
            golden=False)
    fl.step('merged', keys=['j'],
            marker=has(r'^ Stack \d+ \(trace 0x[0-9a-f]+\), the heaviest '
                       r'of 2 merged: 2 frames'))
    fl.step('by-line', keys=['L'],
            marker=both(has(r'^\s+60\.0\s+60\.0\s+60\s+hot_leaf_a '
                            r'\(scripted\.c:\d+\) \u2190 hot_mid:\d+ '
                            r'\u2190 hot_root:\d+$'),
                        has(r'^\s+10\.0\s+40\.0\s+10\s+hot_leaf_b '
                            r'\(scripted\.c:\d+\) \u2190 hot_root:\d+$'),
                        has(r'STACK by line'), has(r'L by address')))
    fl.step('by-address', keys=['L'],
            marker=both(has(r'^\s+6\.0\s+36\.0\s+6\s+hot_leaf_b\+0x1 '),
                        has(r'^\s+4\.0\s+4\.0\s+4\s+hot_leaf_b\+0x2 '),
                        has(r'^ Hot stacks by address: '),
                        has(r'L by function')))
    fl.step('by-function', keys=['L'],
            marker=both(has(r'^\s+10\.0\s+40\.0\s+10\s+hot_leaf_b '
                            r'\u2190 hot_root$'), lacks(r'hot_leaf_b\+0x2')),
            golden=False)
    fl.step('tree', keys=['t'],
            marker=both(has(r'^\s+100\.0\s+0\.0\s+\u25be hot_root$'),
                        has(r'^\s+60\.0\s+60\.0\s+hot_leaf_a$')))
    fl.step('closed', keys=['C'],
            marker=both(has(r'\u25b8 hot_root$'), lacks('hot_mid')))
    fl.step('open-one', keys=['+'],
            marker=both(has(r'\u25be hot_root$'), has(r'\u25b8 hot_mid$'),
                        lacks('hot_leaf_a')), golden=False)
    fl.step('open-all', keys=['E'], marker=has(r'hot_leaf_a$'),
            golden=False)
    s = fl.step('export', keys=['x'],
                marker=has(r'hot stacks written to corotop-\d+\.folded'),
                golden=False)
    m = re.search(r'corotop-(\d+)\.folded', '\n'.join(s.text))
    path = os.path.join(fl.dir, m.group(0)) if m else ''
    folded = open(path).read() if os.path.exists(path) else ''
    fl.check(sorted(folded.splitlines()) ==
             ['hot_root;hot_leaf_b 10', 'hot_root;hot_mid;hot_leaf_a 60',
              'hot_root;hot_mid;hot_leaf_b 30'],
             'x writes the folded stacks, root first, with their weights',
             'in %s: %r' % (path, folded))
    fl.step('back', keys=['Escape'], marker=TABLE_ROWS, golden=False)
    fl.step('detail-1001', keys=['Enter'],
            marker=has(r'^\s+100\.0\s+60\s+hot_leaf_a\+0x1 \(scripted\.c:\d+\) '
                       r'\u2190 hot_mid'))
    fl.step('zeroed', keys=['Escape', 'H', 'z'],
            marker=both(has('hot-stack counts zeroed'),
                        lacks(r'hot_leaf_a.*\u2190')), golden=False)
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_help(fl):
    """F1 and ? show the same help; Esc, F1 and ? go back.  Long notes
    wrap (at 80 columns too), and a glossary of the header's words and
    the warnings ends it."""
    fl.open()
    s0 = fl.start()
    titles = [t for t, _, _ in s0.titles()]
    s = fl.step('f1', keys=['F1'], marker=has(r'^ Keys$'))
    # Narrow help is one column, scrolled with the movement keys: G (End)
    # shows the glossary, a page up the column explanations.
    s2 = fl.step('f1-end', keys=['G'],
                 marker=has(r'^ Header words and warnings$'))
    s3 = fl.step('f1-columns', keys=['PPage'], marker=has(r'^ Columns$'),
                 golden=False)
    missing = [t for t in titles
               if not any(x.has(r'^\s+%s\s' % re.escape(t))
                          for x in (s, s2, s3))]
    fl.check(not missing, 'help explains every column of the table',
             'not on the help screen: %s\n%s' % (' '.join(missing),
                                                  screen_dump(s2)))
    fl.step('esc-back', keys=['Escape'], marker=TABLE_ROWS,
            same_as='start-01-table')
    fl.step('question-mark', keys=['?'], marker=has(r'^ Keys$'),
            same_as='help-01-f1')
    fl.step('question-mark-back', keys=['?'], marker=TABLE_ROWS,
            same_as='start-01-table')
    fl.step('f1-again', keys=['F1'], marker=has(r'^ Keys$'),
            same_as='help-01-f1')
    fl.step('f1-back', keys=['F1'], marker=TABLE_ROWS,
            same_as='start-01-table')
    # 80 columns: every note wraps at a word, none is cut.
    fl.resize_step(80, 24, '80x24', marker=size(80, 24))
    s4 = fl.step('f1-80x24-end', keys=['F1', 'G'],
                 marker=has(r'slot leaks\. \(dead-station'))
    fl.check(s4.has(r'^  window$') and
             all(len(x.rstrip()) <= 80 for x in s4.text),
             'help wraps its long lines at 80 columns',
             screen_dump(s4))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_pause(fl):
    """Space freezes the display (header says PAUSED), scrolling still
    works, Space resumes; Z does the same."""
    fl.open()
    fl.start()
    s1 = fl.step('paused', keys=['Space'], marker=has(r'\[PAUSED\]'))
    # Refreshes come every 0.2 s (-d 2) and AGE has 0.1 s steps: unpaused,
    # the raw screen changes within 0.6 s.
    time.sleep(0.6)
    s2 = fl.capture()
    fl.check(s1.raw == s2.raw, 'paused: the screen stays frozen',
             '\n'.join(difflib.unified_diff(s1.text, s2.text, lineterm='')))
    fl.step('paused-scrolls', keys=['j'],
            marker=both(has(r'\[PAUSED\]'), selected('1002')))
    s1 = fl.step('resumed', keys=['Space'],
                 marker=both(lacks(r'PAUSED'), selected('1002')))
    try:
        fl.wait(lambda s: s.raw != s1.raw, 'resumed', timeout=WAIT)
        fl.ok('resumed: the screen refreshes again')
    except Abort as e:
        fl.fail('resumed: the screen refreshes again', str(e))
    fl.step('paused-z', keys=['Z'],
            marker=both(has(r'\[PAUSED\]'), selected('1002')),
            same_as='pause-02-paused-scrolls')
    fl.step('resumed-z', keys=['Z'],
            marker=both(lacks(r'PAUSED'), selected('1002')),
            same_as='pause-03-resumed')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_group(fl):
    """t groups the rows by thread (a header per thread, and the status
    line says so), t again ungroups; sorting applies within the groups.
    On a short screen End and Home (the keys tmux sends, which are not
    xterm's) go to the last row and back to the first, the first group's
    header over it."""
    fl.open()
    fl.start()
    fl.step('grouped', keys=['t'],
            marker=both(has(r'thread \d+: '),
                        has(r'^ grouped by thread \(t ungroups\)$')))
    fl.step('grouped-by-state', keys=['>'],
            marker=both(has(r'thread \d+: '), has(r'^ sorted by S$')))
    # (any key clears the one-shot "sorted by" message)
    fl.step('ungrouped', keys=['t'], marker=both(lacks('thread'),
                                                   has(r'^\s+1007 R ')))
    fl.step('regrouped', keys=['<', 't'],
            marker=both(has(r'thread \d+: '), has(r'grouped by thread')),
            golden=False)
    fl.resize_step(100, 14, '100x14',
                   both(has(r'thread \d+: '), size(100, 14)), golden=False)
    fl.step('end', keys=['End'],
            marker=both(selected('100b'), lacks('not run yet')),
            golden=False)
    fl.step('home', keys=['Home'],
            marker=both(selected('100c'), row(0, '\u2500\u2500 not run yet: 1'),
                        has(r'^ grouped by thread')))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_resize(fl):
    """40x10 still shows a table; smaller says so; back to 100x30 is the
    start screen again, with nothing left over."""
    fl.open()
    fl.start()
    # The key bar on the last line tells a new layout from the old screen
    # cropped by tmux.
    s = fl.resize_step(40, 10, '40x10',
                       both(has(r'^\s+1001 S '), size(40, 10),
                            has(r'^F1Help')))
    check_alignment(fl, s, '40x10')
    fl.resize_step(30, 8, '30x8', both(has(r'needs 40x10'), size(30, 8)))
    fl.resize_step(WIDTH, HEIGHT, 'back-to-100x30',
                   both(TABLE_ROWS, size(WIDTH, HEIGHT), has(r'^F1Help')),
                   same_as='start-01-table')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_typeahead(fl):
    """Keys that arrive together act in order: a move after a re-sort or
    a filter change moves in the new rows."""
    fl.open()
    fl.start()
    # One send-keys each: the keys reach corotop in one burst.
    fl.expect(['I', 'g'], selected('100c'),
              'I then g: the first row of the inverted table (100c) is '
              'selected')
    # Back to ascending, first row (1001); "bee" keeps 1002 and 1008, and
    # the selection lands on 1002; j then moves to 1008.
    fl.expect(['I', 'g', '\\', 'b', 'e', 'e', 'Enter', 'j'],
              both(has(r'filter: bee$'), selected('1008')),
              'I, g, filter "bee", then j: the second row (1008) is '
              'selected')
    fl.keys('q')
    fl.finish(0, 'quit')


EXITED = has(r'exited \(status %d\)' % STATUS)
# The thread meters ("  TID [  CPU] name") go a refresh or so after the
# exit: a target that exited has no threads.
NO_METERS = lacks(r'^\s+\d+ \[[^]]*\] ')
DEAD_2 = has(r'Coroutines 12: R 1 +S 9 +D 2 ')      # 1004 and 100a closed
# After the exit nothing runs: the coroutine that was running is dead
# (docs/TRACING.md, "After the program exits").
EXIT_DEAD_3 = has(r'Coroutines 12: R 0 +S 9 +D 3 ')
EXPIRED = has(r'Coroutines 10: R 1 +S 9 +D 0 ')     # 1004, 100a gone
EXIT_EXPIRED = has(r'Coroutines 10: R 0 +S 9 +D 1 ')  # ... after the exit


def flow_exit(fl):
    """The target closes two coroutines and exits at once (close-exit):
    the header and the status line say so, and the table freezes on the
    final state, the two dead rows in it and the coroutine that was
    running dead at the exit; q then exits with the target's
    status.  Again with a linger of 1 s: the dead rows stay past it and
    the ages stop (the engine's clock stopped at the exit)."""
    fl.open()
    fl.start()
    fl.step('table', marker=TABLE_ROWS, same_as='start-01-table')
    # One line: the closes and the exit come together, so no step has to
    # see the dead rows before the exit (the flows' linger is a day).
    fl.control('close-exit')
    fl.step('target-exited', marker=both(EXITED, EXIT_DEAD_3))
    fl.keys('q')
    fl.finish(STATUS, 'quit after the target exited')

    # linger = 1: a clock that did not stop at the exit drops 1004 and
    # 100a within 1 s of it, and the ages move.
    linger = 1
    fl.write_config(linger=linger)
    fl.start()
    fl.control('close-exit')
    # corotop takes the closes from the target's stations and the exit
    # from SIGCHLD, on two threads: when the second comes more than the
    # linger after the first (a thread left unscheduled that long), the
    # rows expire before the clock stops.  Both ends are final states;
    # the flow waits for either and checks the dead rows only when they
    # made it (the guard is printed, not asserted: it cannot be forced).
    s = fl.step('exited-linger-%d' % linger,
                marker=both(EXITED, NO_METERS, either(EXIT_DEAD_3, EXIT_EXPIRED)),
                golden=False)
    dead = EXIT_DEAD_3(s)
    if not dead:
        log('note: the dead rows expired before corotop saw the exit; '
            'the frozen check below covers the ages only')
    # Past the linger (and a refresh, -d 2) of the engine's clock.  (A
    # machine too slow to refresh in that time makes this weaker, never
    # wrong.)
    time.sleep(linger + 1)
    s2 = fl.step('frozen', marker=EXITED,
                 same_as='exit-02-target-exited' if dead else None,
                 golden=dead)
    fl.check(s2.text[4:-1] == s.text[4:-1] and
             (EXIT_DEAD_3(s2) if dead else EXIT_EXPIRED(s2)),
             'the final state stays: %sages stopped' %
             ('dead rows kept, ' if dead else ''),
             screen_dump(s) + '\n' + screen_dump(s2))
    fl.keys('q')
    fl.finish(STATUS, 'quit after the target exited (linger %d s)' % linger)


def flow_warnings(fl):
    """w lists each warning and its offenders by name and WHERE; Enter
    on an offender opens its detail view, which says which warning flags
    it and why; Esc goes back to the table, the offender selected.  At 80
    columns the pane wraps its notes and keeps each offender's tid and
    id."""
    fl.open()
    fl.start()
    fl.step('pane', keys=['w'],
            marker=both(has(r'^ STALL +stall +on'),
                        has(r'^ +ticker +R .* 0x401600 ')))
    fl.step('detail', keys=['Enter'],
            marker=both(has(r'^ Coroutine 1007 "ticker"'),
                        has(r'^ Flagged STALL \(stall, threshold')))
    # Back on the table, with the offender selected.
    fl.step('back', keys=['Escape'],
            marker=both(TABLE_ROWS, selected('1007')))
    # At 80 columns the notes wrap at a blank and the offender's line
    # keeps its tid and id: nothing is cut.
    fl.resize_step(80, 30, '80x30', both(TABLE, size(80, 30)), golden=False)
    s = fl.step('pane-80', keys=['w'],
                marker=both(has(r'^ STALL +stall +on'),
                            has(r' tid T?\d+ +id 1007$')))
    fl.check(s.has(r'^   Suspended longer than the threshold: nobody '
                   r'resumed it, so a wakeup may have$') and
             s.has(r'^     been lost\.$') and
             all(len(x) <= 80 for x in s.text),
             '80 columns: the lost-wakeup note wraps at a blank, indented',
             screen_dump(s))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_hscroll(fl):
    """Right scrolls the table as htop does: every column comes back
    (AGE, SWITCHES, RUN%, SEQ, LOST were dropped at 100 columns) and WHERE
    is wide, '<' marks more on the left and '>' more on the right; at the
    far end WARN shows and '>' is gone; Left all the way is the fitted
    table again.  Right on a screen the table fits says so."""
    fl.open()
    fl.start()
    fl.step('right', keys=['Right'],
            marker=both(has(r'^<.* AGE IN-STATE SWITCHES   SW/s  RUN%'
                            r'      SEQ  LOST NAME'),
                        has(r' >$'), lacks(r'WARN')))
    fl.step('far-right', keys=['Right'] * 12,
            marker=both(has(r'^<.*WHERE +WARN$'), has(r'0x401600 +STALL$')))
    fl.step('back', keys=['Left'] * 12, marker=both(TABLE_ROWS, lacks('^<')),
            same_as='start-01-table')
    s = fl.resize_step(200, 30, 'fits-200',
                       both(TABLE_ROWS, size(200, 30), has(r'  SEQ  LOST ')),
                       golden=False)
    fl.step('nothing-to-scroll', keys=['Right'],
            marker=has(r'the whole table fits: nothing to scroll'),
            golden=False)
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_tid_wrap(fl):
    """The pid counter wraps between the workload's two threads (forced:
    COROTOP_SCRIPTED_WRAP makes scripted move it back, as a busy machine
    does), so the thread started second has the lower tid: the screens that
    list threads by tid are the same as without a wrap -- the table and its
    thread meters (T1 first), the rows grouped by thread, the table scrolled
    right.  Skipped where the counter cannot be moved (not root)."""
    fl.open()
    try:
        fl.start(env='COROTOP_SCRIPTED_WRAP=1 ')
    except Abort as e:
        if 'pid counter' in str(e):
            raise Skip(str(e))
        raise
    fl.check(fl.info.wrapped == 'yes', 'the second thread has the lower tid',
             'the workload says wrapped %s' % fl.info.wrapped)
    fl.step('table', marker=TABLE_ROWS, same_as='start-01-table')
    fl.step('grouped', keys=['t'], marker=has(r'thread \d+: '),
            same_as='group-01-grouped')
    fl.step('ungrouped', keys=['t'], marker=both(lacks('thread'),
                                                 has(r'^\s+1007 R ')),
            same_as='start-01-table')
    fl.step('right', keys=['Right'],
            marker=both(has(r'^<.* AGE IN-STATE SWITCHES   SW/s  RUN%'
                            r'      SEQ  LOST NAME'),
                        has(r' >$'), lacks(r'WARN')),
            same_as='hscroll-01-right')
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_detail_scroll(fl):
    """On a short screen the detail view scrolls: its key bar says which
    lines show; Down and PgDn move through it, PgUp back; at the top Up
    goes on to the coroutine above; J and K go to the next and previous
    coroutine, at its top."""
    fl.open()
    fl.start()
    fl.resize_step(100, 16, '100x16',
                   both(TABLE, has(r'^\s+1001 S '), size(100, 16)),
                   golden=False)
    fl.step('1006', keys=['j'] * 5 + ['Enter'],
            marker=both(has(r'^ Coroutine 1006 '),
                        has(r'J/KNext/Prev .* lines 1-10 of \d+$')))
    fl.step('down', keys=['Down'],
            marker=both(lacks(r'^ Coroutine 1006 '),
                        has(r'lines 2-11 of \d+$')))
    fl.step('page-down', keys=['NPage'],
            marker=both(has(r'Time in state'), has(r'lines \d+-\d+ of \d+$')))
    fl.step('top', keys=['PPage', 'PPage'],
            marker=both(has(r'^ Coroutine 1006 '),
                        has(r'lines 1-10 of \d+$')), golden=False)
    # At the top, Up goes on to the coroutine above, as it did before.
    fl.step('up-moves-on', keys=['Up'], marker=has(r'^ Coroutine 1005 '),
            golden=False)
    fl.step('next', keys=['J', 'J'],
            marker=both(has(r'^ Coroutine 1007 '), has(r'lines 1-10 of')))
    fl.step('prev', keys=['K'], marker=has(r'^ Coroutine 1006 '),
            golden=False)
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_detail_wide(fl):
    """The detail view of a coroutine parked 15 frames deep (scripted's
    deep control, --parked-stacks): the first 6 frames and "... 9 more
    frames"; E lists them all, C folds them again.  At 60 columns its
    lines are wider than the screen: Right scrolls it as the table
    scrolls, to the widest line's end (the key bar says which columns
    show), Left comes back, and Left at the left edge goes back to the
    table.  No goldens: the frames' offsets depend on the build."""
    fl.open()
    fl.start(opts='--parked-stacks')
    fl.control('deep')
    elided = has(r'^\s+\.\.\. 9 more frames \(E shows them\)$')
    s = fl.step('elided', keys=['Enter'],
                marker=both(has(r'^ Coroutine 1001 '),
                            has(r'^\s+#5\s+deep_frame\+'), elided),
                golden=False)
    fl.check(not s.has(r'^\s+#6\s'), 'six frames before the "..."',
             screen_dump(s))
    s = fl.step('expanded', keys=['E'],
                marker=both(lacks(r'more frames'),
                            has(r'^\s+#14\s+__libc_start_call_main\+'),
                            has(r'^\s+#13\s+main\+')), golden=False)
    fl.check(all(s.has(r'^\s+#%d\s+deep_frame\+' % k) for k in range(13)),
             'E lists every frame, #0-#12 in deep_frame', screen_dump(s))
    fl.step('folded', keys=['C'], marker=both(elided, lacks(r'#14\s')),
            golden=False)
    fl.step('expanded-again', keys=['E'], marker=has(r'#14\s'),
            golden=False)
    fl.resize_step(60, 30, '60x30',
                   both(has(r'^ Coroutine 1001 '), size(60, 30)),
                   golden=False)
    fl.step('right', keys=['Right'],
            marker=both(has(r'^ne 1001 "acceptor"'),
                        has(r'cols 9-68(/| of )\d+$')), golden=False)
    s = fl.step('far-right', keys=['Right'] * 40,
                marker=has(r'cols \d+-(\d+)(/| of )\1$'), golden=False)
    fl.check(s.has(r'main\.h:\d+\)\s*$') or
             s.has(r'scripted\.c:\d+\)\s*$'),
             'at the far right a long frame line ends on the screen',
             screen_dump(s))
    # Left one press at a time (one too many goes back): each moves
    # DETAIL_HSCROLL_STEP (8) columns back, until the first shows.
    for _ in range(40):
        m = re.search(r'cols (\d+)-', s.text[-1])
        if not m:
            break
        fl.keys('Left')
        left = int(m.group(1)) - 8
        s = fl.wait(has(r'^ Coroutine 1001 ') if left <= 1 else
                    has(r'cols %d-' % left), 'Left to column %d' % left)
    fl.step('left-edge', marker=both(has(r'^ Coroutine 1001 '),
                                     lacks(r'cols \d+')), golden=False)
    fl.step('left-goes-back', keys=['Left'],
            marker=both(has(r'^\s+1001 S '), lacks(r'Coroutine 1001')),
            golden=False)
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_output(fl):
    """The target prints on stdout and stderr: the table stays intact and
    the header counts the new lines; o shows them in the order written,
    without their escape sequences, following the end; Home scrolls to
    the first; Esc goes back and the count is gone."""
    fl.open()
    fl.start()
    fl.control('noise 20')
    fl.step('noisy', marker=has(r'output \+40 \(o\)'))
    fl.step('output-view', keys=['o'],
            marker=both(has(r'^partial$'), has(r'^err line 20$')))
    fl.step('output-home', keys=['g'],
            marker=both(has(r'^out line 1$'), has(r'scrolled')))
    fl.step('back', keys=['Escape'],
            marker=both(TABLE_ROWS, lacks(r'output \+')))
    fl.keys('q')
    fl.finish(0, 'quit')


def flow_record(fl):
    """--record: the header says REC with the file's name while the
    recording grows; the target exits, q, and the file replays with every
    coroutine and transition the table showed."""
    fl.open()
    rec = os.path.join(fl.dir, 'ui.heph')
    fl.start(opts='--record %s' % shlex.quote(rec))
    fl.step('recording', marker=has(r'REC ui\.heph \d+\.\d MB'))
    fl.control('exit')
    fl.step('target-exited', marker=has(r'exited \(status %d\)' % STATUS),
            timeout=WAIT)
    fl.keys('q')
    fl.finish(STATUS, 'quit after the target exited')
    out = subprocess.run([fl.args.corotop, '--replay', rec, '-b', '-f',
                          'json'], capture_output=True, text=True,
                         timeout=60)
    fl.check(out.returncode == 0 and out.stderr == '',
             'the recording replays without problems',
             'rc %d: %s' % (out.returncode, out.stderr))
    if out.returncode == 0:
        snap = json.loads(out.stdout.splitlines()[-1])
        coros = snap['coroutines']
        fl.check(len(coros) == 12 and
                 sum(c['switches'] for c in coros) == 43,
                 'the recording holds the 12 coroutines and 43 transitions',
                 '%d coroutines, %d switches' %
                 (len(coros), sum(c['switches'] for c in coros)))


def flow_quit(fl):
    """q quits, and so does F10; both restore the terminal."""
    fl.open()
    fl.start()
    fl.keys('q')
    fl.finish(0, 'q')
    fl.start()
    fl.keys('F10')
    fl.finish(0, 'F10')


def flow_sigterm(fl):
    """SIGTERM to corotop: exit status 143, the shell is back with the
    terminal as it was, the target is gone."""
    fl.open()
    fl.start()
    os.kill(fl.corotop_pid, signal.SIGTERM)
    fl.finish(128 + signal.SIGTERM, 'SIGTERM')


def flow_dead(fl):
    """Closed coroutines show as D (for as long as a flow takes: the
    flows' linger is a day), filtered (state=D) and in the detail view.
    Then, with a linger of 1 s, a coroutine whose detail view is open
    dies and expires: the view says it is gone, and Esc goes back to the
    table without it."""
    fl.open()
    fl.start()
    fl.control('close')
    fl.step('closed', marker=DEAD_2)
    fl.step('filter-dead', keys=['\\'], text='state=D\r',
            marker=has(r'^ filter: state=D$'))
    fl.step('filter-cleared', keys=['Escape'],
            marker=both(lacks('filter:'), has(r'^\s+1001 S ')),
            golden=False)
    fl.step('select-1004', keys=['g', 'j', 'j', 'j'], marker=selected('1004'),
            golden=False)
    fl.step('detail-dead', keys=['Enter'],
            marker=both(has(r'^ Coroutine 1004 '), has(r'^ dead for ')))
    fl.keys('q')
    fl.finish(0, 'quit')

    # The expiry, with nothing to do inside the linger: the detail view
    # is open before the close, then the flow waits (WAIT) for it to go.
    fl.write_config(linger=1)
    fl.start()
    fl.step('select-1004-alive', keys=['g', 'j', 'j', 'j'],
            marker=selected('1004'), golden=False)
    fl.step('detail-alive', keys=['Enter'],
            marker=both(has(r'^ Coroutine 1004 '), has(r'^ suspended for ')),
            golden=False)
    fl.control('close')
    # The view must not slide to another coroutine meanwhile.
    s = fl.step('detail-expired',
                marker=both(has('That coroutine is gone'), EXPIRED),
                golden=False)
    fl.check(not s.has(r'^ Coroutine '),
             'the detail view of an expired coroutine says it is gone',
             screen_dump(s))
    fl.step('table-expired', keys=['Escape'],
            marker=both(EXPIRED, has(r'^\s+1005 S '), lacks('is gone')))
    fl.keys('q')
    fl.finish(0, 'quit (linger 1 s)')


def flow_mono(fl):
    """-C and NO_COLOR: monochrome (reverse and bold only), no colour
    escapes at all."""
    fl.open()
    s = fl.start(opts='-C')
    s = fl.step('no-color-option', marker=TABLE_ROWS)
    check_no_color(fl, s, '-C')
    s = fl.step('no-color-detail', keys=['Enter'],
                marker=has(r'^ Coroutine 1001 '))
    check_no_color(fl, s, '-C detail')
    fl.keys('q')
    fl.finish(0, 'quit -C')
    fl.start(env='NO_COLOR=1 ')
    s = fl.step('NO_COLOR', marker=TABLE_ROWS,
                same_as='mono-01-no-color-option')
    check_no_color(fl, s, 'NO_COLOR')
    fl.keys('q')
    fl.finish(0, 'quit NO_COLOR')


def flow_ascii(fl):
    """LANG=C: ASCII only (sort marker, group headers, timeline)."""
    fl.open(lang='C')
    fl.start()
    s = fl.step('table', marker=TABLE_ROWS)
    check_ascii(fl, s, 'table')
    check_alignment(fl, s, 'table')
    s = fl.step('inverted', keys=['I'], marker=has(r'\(inverted\)$'))
    check_ascii(fl, s, 'inverted')
    s = fl.step('grouped', keys=['t'], marker=has(r'thread \d+: '))
    check_ascii(fl, s, 'grouped')
    s = fl.step('detail', keys=['Enter'],
                marker=has(r'^ Coroutine 1001 '))
    check_ascii(fl, s, 'detail')
    fl.keys('q')
    fl.finish(0, 'quit')


PPT_KEYS = has(r'^Esc back  Tab next buffer ')   # not a prompt line


def ppt_seqs(s):
    """SEQ of the ppt view's frame rows, top to bottom."""
    out, rows = [], False
    for t in s.text[:-1]:
        if rows:
            m = re.match(r'^\s+(\d+) ', t)
            if m:
                out.append(m.group(1))
        rows = rows or bool(re.match(r'^\s+SEQ\s+AGE TYPE', t))
    return out


def check_seqs(fl, s, seqs, what):
    got = ppt_seqs(s)
    fl.check(got == seqs, what, 'frames: %s, want %s' % (
        ' '.join(got) or 'none', ' '.join(seqs)))


def flow_ppt(fl):
    """corotop -p on ppt-target: the ppt view (P) on buffer demo before and
    after frames come, Tab and Shift-Tab between buffers, the filter
    (count=7, type=io; Esc clears it, then goes back), search load=5.5, the
    bad buffer's ABI error, Space pauses; q quits and leaves the target
    running, detached."""
    if not fl.args.ppt_target:
        raise Skip('no --ppt-target')
    fl.open()
    fl.start_ppt()
    # Attached: demo waits for the target's next save ("the client").
    fl.step('no-frames', keys=['P'],
            marker=both(tab('demo'), has(r'^ waiting for the client, '),
                        has(r'^ No frames yet: the client attaches at its next save\.$'), PPT_KEYS))
    # Frame k of demo: tick count=k load=k/4 work=k us; io fd=-k.  SEQ
    # counts from the attach, so tick k is SEQ k and io k is SEQ 30+k.
    fl.ppt('tick 30')
    fl.ppt('io 3')
    fl.ppt('grow 3')
    s = fl.step('demo', marker=both(tab('demo'), has(r'  delivered 33  '),
                                    selected('33'),
                                    has(r'^\s+12\s+\S+ tick ')))
    check_seqs(fl, s, [str(k) for k in range(33, 11, -1)],
               'demo: frames newest first, as many as fit (33 down to 12)')
    fl.step('grow', keys=['Tab'],
            marker=both(tab('grow'), has(r'^ buffer grow$'),
                        has(r'^\s+3\s+\S+ sample ')))
    fl.step('back-to-demo', keys=['BTab'],
            marker=both(tab('demo'), has(r'^ buffer demo$'), selected('33')))
    s = fl.step('filter-count', keys=['\\'], text='count=7\r',
                marker=both(has(r'^ filter: count=7$'), PPT_KEYS))
    check_seqs(fl, s, ['7'], 'filter count=7: the one frame with count 7')
    # F4 opens the same line, holding the filter in effect.
    fl.step('filter-prompt', keys=['F4'], marker=has(r'^Filter: count=7$'),
            golden=False)
    s = fl.step('filter-type', keys=['C-u'], text='type=io\r',
                marker=both(has(r'^ filter: type=io$'), PPT_KEYS))
    check_seqs(fl, s, ['33', '32', '31'], 'filter type=io: the three io '
               'frames')
    fl.step('filter-cleared', keys=['Escape'],
            marker=both(lacks('filter:'), selected('33'),
                        has(r'^\s+12\s+\S+ tick '), PPT_KEYS),
            same_as='ppt-02-demo')
    s = fl.step('search', keys=['/'], text='load=5.5\r',
                marker=both(has(r'^ search: load=5\.5$'), selected('22'),
                            PPT_KEYS))
    fl.step('bad', keys=['BTab', 'BTab'],
            marker=both(tab('bad'), has(r'^ not attached: ')))
    fl.step('demo-again', keys=['Tab', 'Tab'],
            marker=both(tab('demo'), selected('33')),
            same_as='ppt-04-back-to-demo')
    s1 = fl.step('paused', keys=['Space'],
                 marker=both(has(r'\[PAUSED\]'), selected('33')))
    fl.ppt('tick 5')
    # Refreshes come every 0.2 s (-d 2): unpaused, frame 38 would show
    # within 0.6 s.
    time.sleep(0.6)
    s2 = fl.capture()
    fl.check(s1.raw == s2.raw and '38' not in ppt_seqs(s2),
             'paused: the screen stays frozen, new frames do not appear',
             '\n'.join(difflib.unified_diff(s1.text, s2.text, lineterm='')))
    s = fl.step('resumed', keys=['Space'],
                marker=both(lacks('PAUSED'), selected('38'),
                            has(r'^\s+17\s+\S+ tick ')))
    check_seqs(fl, s, [str(k) for k in range(38, 16, -1)],
               'resumed: the five new frames on top (38 down to 17)')
    fl.step('esc-back', keys=['Escape'],
            marker=both(has(r'^\s+ID.S '), has(r'^F1Help ')), golden=False)
    fl.keys('q')
    fl.finish(0, 'quit', attached=True)


# ---- cacheray: the memory view (corotop --cacheray FILE) ------------------
#
# No workload: corotop reads a trace that cacheray_trace.py writes into the
# flow's directory (the counts it must show are in that module's
# docstring).  cray_start types the command line as Flow.start does, and
# makes corotop itself "the workload", so Flow.finish checks that it is
# gone.

import cacheray_trace as crt  # noqa: E402

CRAY_BAR = has(r'^F1Help TabNext ')      # the key bar: not a prompt line
CRAY_TOTALS = (r'^ Accesses 102: reads 23  writes 79  untyped 5  '
               r'cross-line 0$',
               r'^ Flags atomic 10  rmw-pairs 5  unaligned 2$',
               r'^ RTTA adds 3  removes 1  live 2  overlaps 0$')
CRAY_DONE = both(has(r'^ corotop  memory  fixture\.cray  complete$'),
                 has(r'^ Read 1976 bytes, 106 records$'), CRAY_BAR)


def cray_start(fl, trace, opts='', env='', cd='', wait=CRAY_BAR):
    """Type `corotop -d 2 [opts] --cacheray TRACE` (in directory cd, when
    given) into the shell; wait for `wait`."""
    fl.type_corotop('-d 2 %s--cacheray %s' % (opts + ' ' if opts else '',
                                               shlex.quote(trace)),
                    env=env, cd=cd)
    s = fl.wait(wait, 'corotop shows the memory view')
    fl.corotop_pid = child_running(fl.shell_pid(), fl.args.corotop)
    fl.workload_pid = fl.corotop_pid
    fl.workload_exe = fl.args.corotop
    fl.info = nz.Info()
    return s


def cray_tab(name):
    """The highlighted tab of the tabs line is `name` ("2 Hot lines")."""
    def m(s):
        for cells, text in zip(s.cells, s.text):
            if re.match(r'^  1 False sharing \(', text):
                return re.match(r'%s \(' % re.escape(name),
                                nz.highlighted(cells)) is not None
        return False
    m.__doc__ = 'the tab %r is highlighted' % name
    return m


def cray_selected(regex):
    def m(s):
        row = s.selected()
        return row is not None and re.search(regex, row)
    m.__doc__ = 'the selected row matches /%s/' % regex
    return m


def cray_lines(fl, s, regexes, what):
    """Each regex matches a line of the screen (exact numbers)."""
    missing = [r for r in regexes if not s.has(r)]
    fl.check(not missing, what, 'no line matches: %s\n%s' % (
        ' | '.join(missing), screen_dump(s)))


def cray_fifo_writer(path):
    """Open the FIFO for writing once corotop has it open for reading."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if time.monotonic() > deadline:
                raise Abort('corotop does not read the FIFO %s' % path)
            time.sleep(POLL)


def flow_cacheray(fl):
    """corotop --cacheray on a trace file: the first screen (complete, the
    totals), each tab, a type opened into its members and closed, a sort,
    help; then a FIFO read while it is written (half the records: partial
    counts and "reading"; the rest: complete, the same screen as the
    file's); a trace with a bad record (error at its byte, thread-id-0
    note); -C with LANG=C: no colour, ASCII only.  q exits 0 each time,
    SIGTERM 143."""
    fl.open()
    with open(os.path.join(fl.dir, 'fixture.cray'), 'wb') as f:
        f.write(crt.FIXTURE_BYTES)
    with open(os.path.join(fl.dir, 'bad.cray'), 'wb') as f:
        f.write(crt.BAD_BYTES)
    cray_start(fl, 'fixture.cray', wait=CRAY_DONE)
    s = fl.step('complete', marker=both(CRAY_DONE, has(r'^ Line 0x10000 '),
                                        cray_tab('1 False sharing')))
    cray_lines(fl, s, CRAY_TOTALS, 'totals: the fixture\'s exact counts')
    cray_lines(fl, s, (
        r'^0x10000 +80 +10 +70 diff-elements disjoint 1\(w\),2\(w\) +'
        r'struct counter$',
        r'^0x10040 +12 +5 +7 one-element +overlap +1\(w\),2\(w\) +'
        r'struct counter$',
        r'^   thread 1 \(w\) +\u2588{8}\u00b7{56}$',
        r'^   thread 2 \(w\) +\u00b7{16}\u2588{16}\u00b7{32}$'),
        'false sharing: the two suspects, the byte map of 0x10000')
    s = fl.step('hot-lines', keys=['2'],
                marker=both(has(r'^LINE +ACCESSES\S +READS +WRITES LAYOUT '
                                r'+THREADS +TYPES'), cray_tab('2 Hot lines'),
                            CRAY_BAR))
    cray_lines(fl, s, (
        r'^0x20000 +6 +4 +2 diff-regions +1\(w\) +struct node,\(untyped\)$',
        r'^0x30000 +4 +4 +0 untyped +1 +\(untyped\)$'),
        'hot lines: the re-added type\'s line and the untyped one')
    s = fl.step('types', keys=['3'],
                marker=both(has(r'ELEMSIZE +REGIONS NAME'),
                            cray_tab('3 Types'), CRAY_BAR))
    cray_lines(fl, s, (
        r'^ +92 +15 +77 +16 +1 \u25b8 struct counter$',
        r'^ +5 +5 +0 +\(untyped\)$',
        r'^ +5 +3 +2 +32 +2 \u25b8 struct node$'),
        'types: counts, element sizes, regions (node added twice)')
    s = fl.step('types-open', keys=['Enter'],
                marker=has(r'\u25be struct counter$'))
    cray_lines(fl, s, (r'^ +80 +5 +75 +\+0$', r'^ +2 +0 +2 +\+3$',
                       r'^ +10 +10 +0 +\+8$'),
               'struct counter opened: its members at +0, +3 and +8')
    fl.step('member-selected', keys=['j', 'j'],
            marker=both(cray_selected(r'^ +2 +0 +2 +\+3$'), CRAY_BAR),
            golden=False)
    fl.step('types-closed', keys=['Left'],
            marker=both(has(r'\u25b8 struct counter$'), lacks(r'\+3$')),
            same_as='cacheray-03-types')
    s = fl.step('threads', keys=['Tab'],
                marker=both(has(r'^THREAD +ACCESSES'), cray_tab('4 Threads'),
                            CRAY_BAR))
    cray_lines(fl, s, (r'^1 +60 +13 +47 +58\.8$', r'^2 +42 +10 +32 +41\.2$'),
               'threads: per-thread counts and shares')
    fl.step('sharing-again', keys=['BTab', 'BTab', 'BTab'],
            marker=both(has(r'^ Line 0x10000 '),
                        cray_tab('1 False sharing'), CRAY_BAR),
            same_as='cacheray-01-complete')
    fl.step('sorted-by-reads', keys=['>'],
            marker=both(has(r'^ sorted by READS$'), CRAY_BAR))
    s = fl.step('help', keys=['F1'], marker=has(r'^ Keys$'))
    s2 = fl.step('help-end', keys=['G'], marker=has(r'^ Columns of '))
    text = '\n'.join(s.text + s2.text)
    missing = [k.strip() for k in
               ('move up', 'next tab', 'open or close', 'this help',
                'quit', 'BYTES ', 'TYPES ')
               if k.strip() not in text]
    fl.check(not missing, 'help lists the keys and the tab\'s columns',
             'missing: %s' % ', '.join(missing))
    fl.step('help-back', keys=['Escape'],
            marker=both(has(r'^ sorted by|^LINE'), CRAY_BAR), golden=False)
    fl.keys('q')
    fl.finish(0, 'quit (file)')

    # A FIFO, written half now and the rest later (cut inside a record).
    os.mkdir(os.path.join(fl.dir, 'fifo'))
    fifo = os.path.join(fl.dir, 'fifo', 'fixture.cray')
    os.mkfifo(fifo)
    half = len(crt.FIXTURE_BYTES) // 2
    cray_start(fl, 'fixture.cray', cd='fifo',
               wait=both(has(r'fixture\.cray  reading$'), CRAY_BAR))
    fd = cray_fifo_writer(fifo)
    try:
        os.write(fd, crt.FIXTURE_BYTES[:half])
        s = fl.step('fifo-half', marker=both(
            has(r'^ corotop  memory  fixture\.cray  reading$'),
            has(r'^ Read %d bytes, %d records  waiting for data$' % (
                half, crt.records_in(half))), CRAY_BAR))
        cray_lines(fl, s, (r'^ Accesses 52: reads 0  writes 52  untyped 0 ',
                           r'^ RTTA adds 1  removes 0  live 1  overlaps 0$',
                           r'^0x10000 +52 +0 +52 diff-elements disjoint '),
                   'FIFO, half written: the counts of the first %d records'
                   % crt.records_in(half))
        os.write(fd, crt.FIXTURE_BYTES[half:])
    finally:
        os.close(fd)
    s = fl.step('fifo-complete', marker=both(CRAY_DONE,
                                             has(r'^ Line 0x10000 ')),
                same_as='cacheray-01-complete')
    cray_lines(fl, s, CRAY_TOTALS, 'FIFO, writer closed: the final counts')
    fl.keys('q')
    fl.finish(0, 'quit (FIFO)')

    # A bad record: reading stops at its first byte, the rest stays.
    cray_start(fl, 'bad.cray', wait=has(r'error at byte'))
    s = fl.step('bad-record', marker=both(
        has(r'^ corotop  memory  bad\.cray  error at byte %d$' % crt.BAD_AT),
        has(r'^ error at byte %d: unknown record type 0x07 ' % crt.BAD_AT),
        has(r'^ note: every access has thread id 0 '), CRAY_BAR))
    cray_lines(fl, s, (r'^ Accesses 6: reads 2  writes 4  untyped 0 ',
                       r'^ Read %d bytes, 7 records$' % len(crt.BAD_BYTES)),
               'bad record: the 7 records before it are counted')
    fl.keys('q')
    fl.finish(0, 'quit (bad record)')

    # Monochrome and ASCII.
    cray_start(fl, 'fixture.cray', opts='-C', env='LANG=C ', wait=CRAY_DONE)
    s = fl.step('mono-ascii', marker=both(CRAY_DONE, has(r'^   thread 1 ')))
    check_no_color(fl, s, '-C')
    check_ascii(fl, s, 'LANG=C')
    s = fl.step('mono-ascii-types', keys=['3', 'Enter'],
                marker=has(r'- struct counter$'))
    check_no_color(fl, s, '-C types')
    check_ascii(fl, s, 'LANG=C types')
    fl.keys('q')
    fl.finish(0, 'quit (-C, LANG=C)')

    # SIGTERM: 143, and the terminal restored all the same.
    cray_start(fl, 'fixture.cray', wait=CRAY_DONE)
    os.kill(fl.corotop_pid, signal.SIGTERM)
    fl.finish(128 + signal.SIGTERM, 'SIGTERM')


# (after every definition above: flow_replay imports this module)
import flow_replay  # noqa: E402
import flow_preload  # noqa: E402

FLOWS = {
    'start': flow_start,
    'sort': flow_sort,
    'search': flow_search,
    'filter-substring': flow_filter_substring,
    'filter-regex': flow_filter_regex,
    'filter-field': flow_filter_field,
    'detail': flow_detail,
    'hot': flow_hot,
    'help': flow_help,
    'pause': flow_pause,
    'group': flow_group,
    'resize': flow_resize,
    'dead': flow_dead,
    'typeahead': flow_typeahead,
    'exit': flow_exit,
    'output': flow_output,
    'warnings': flow_warnings,
    'hscroll': flow_hscroll,
    'tid-wrap': flow_tid_wrap,
    'detail-scroll': flow_detail_scroll,
    'detail-wide': flow_detail_wide,
    'record': flow_record,
    'quit': flow_quit,
    'sigterm': flow_sigterm,
    'mono': flow_mono,
    'ascii': flow_ascii,
    'ppt': flow_ppt,
    'replay': flow_replay.flow_replay,
    'preload': flow_preload.flow_preload,
    'preload-procs': flow_preload.flow_preload_procs,
    'fiber-meters': flow_preload.flow_fiber_meters,
    'scan': flow_preload.flow_scan,
    'core': flow_preload.flow_core,
    'cacheray': flow_cacheray,
}


def run_flow(args, name):
    """True when the flow passed, False when it failed, None when it was
    skipped."""
    fl = Flow(args, name)
    log('== %s: %s' % (name, ' '.join(FLOWS[name].__doc__.split())))
    try:
        FLOWS[name](fl)
    except Skip as e:
        log('SKIP %s: %s' % (name, e))
        return None
    except Abort as e:
        fl.fail('aborted', str(e))
    finally:
        fl.close()
    return not fl.failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tmux', default=shutil.which('tmux') or '')
    ap.add_argument('--corotop')
    ap.add_argument('--workload')
    ap.add_argument('--ppt-target', default='',
                    help='ppt-target (tests/integration), for the ppt flow')
    ap.add_argument('--heph-fixture', default='',
                    help='heph-fixture (tests/ui), for the replay flow')
    ap.add_argument('--uctx-target', default='',
                    help='uctx-target (tests/targets), for the preload flows')
    ap.add_argument('--fiber-target', default='',
                    help='fiber-target (tests/targets), for the '
                    'fiber-meters flow')
    ap.add_argument('--fork-ctx', default='',
                    help='fork-ctx (tests/targets), for the preload-procs '
                    'flow')
    ap.add_argument('--regen', action='store_true')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('flows', nargs='*')
    args = ap.parse_args()
    if args.list:
        print('\n'.join(FLOWS))
        return 0
    if not args.tmux or not os.access(args.tmux, os.X_OK):
        log('SKIP: tmux not found')
        return 77
    for p in (args.corotop, args.workload) + \
            ((args.ppt_target,) if args.ppt_target else ()) + \
            ((args.heph_fixture,) if args.heph_fixture else ()) + \
            ((args.uctx_target,) if args.uctx_target else ()) + \
            ((args.fork_ctx,) if args.fork_ctx else ()) + \
            ((args.fiber_target,) if args.fiber_target else ()):
        if not p or not os.access(p, os.X_OK):
            log('no executable %r' % p)
            return 2
    # The shell runs in a scratch directory: absolute paths.
    args.corotop, args.workload = map(os.path.abspath,
                                      (args.corotop, args.workload))
    if args.ppt_target:
        args.ppt_target = os.path.abspath(args.ppt_target)
    if args.heph_fixture:
        args.heph_fixture = os.path.abspath(args.heph_fixture)
    if args.uctx_target:
        args.uctx_target = os.path.abspath(args.uctx_target)
    if args.fork_ctx:
        args.fork_ctx = os.path.abspath(args.fork_ctx)
    if args.fiber_target:
        args.fiber_target = os.path.abspath(args.fiber_target)
    unknown = [f for f in args.flows if f not in FLOWS]
    if unknown or not args.flows:
        log('flows: %s' % ' '.join(FLOWS))
        return 2

    # meson's timeout sends SIGTERM: unwind so every tmux server dies.
    def on_signal(sig, frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    results = [run_flow(args, name) for name in args.flows]
    if all(r is None for r in results):
        return 77
    return 1 if False in results else 0


if __name__ == '__main__':
    sys.exit(main())
