"""flow_preload: the 'preload' UI flow, for harness.py -- a program that
never heard of corotop, traced through its context switches.

corotop -- uctx-target 2 3 --stuck --hold (tests/targets/uctx_target.c):
a ucontext scheduler whose two workers each yield three times and return,
and whose third coroutine parks once in stuck_wait and is never resumed;
the program then holds in pause().  Its stdout goes to /dev/null (through
sh -c 'exec ...', which the preload follows: LD_PRELOAD is inherited), so
that only corotop draws on the terminal.

What must show, once the finished workers are gone from the table (the
flow sets corotop's linger back to its default, 3 s: the day of the
flows' config would keep them listed as D): the stuck coroutine, named
after its entry (stuck_wait: the first program code the context runs,
found by walking its parked stack) and parked there, and the thread's
own stack, named root (shown [root], a scheduler's own context) and
running -- on a thread that waits in the kernel (pause), so K and not a
stall once it ran past the stall threshold.  The table has a golden.
The detail view's parked stack holds addresses and a trace id that
change with every run (ASLR), so it is checked by its text: the heading
names the coroutine, WHERE is stuck_wait, and the stack goes through
stuck_wait without corotop's own frames (the preload's switch at its top,
its entry trampoline at its bottom: dropped by the engine's walk).  q ends corotop
and the held program with it.
"""
import os
import shlex
import shutil
import signal
import time

import harness as h
import normalize as nz

PRELOAD_TABLE = h.both(
    h.has(r'Coroutines 2: R 1 +S 1 '),
    h.has(r'^\s+3 S .* stuck_wait +stuck_wait\+0x'),
    # Running, on a thread that waits in the kernel (pause): K, past the
    # stall threshold, and no STALL.
    h.has(r'^\s+4 K .* \[root\] '),
    h.lacks(r'^\s+\d+ .* STALL\s*$'),
    h.lacks(r'^\s+\d+ D '))


def type_traced(fl, argv):
    """Type `corotop -d 2 -- PROGRAM ARGS...` (argv: the program and its
    arguments, quoted here) into the shell and Enter, the program's stdout
    sent to /dev/null (through sh -c 'exec ...', which the preload follows:
    LD_PRELOAD is inherited) so that only corotop draws on the terminal;
    its status and the terminal's modes before and after go to the flow's
    files."""
    q = shlex.quote
    fl.workload_pid = None
    fl.workload_exe = argv[0]
    fl.type_corotop('-d 2 -- sh -c %s %s' % (
        q('exec "$0" "$@" >/dev/null'), ' '.join(q(a) for a in argv)))


def start_preload(fl):
    """Type corotop -- uctx-target ... into the shell; wait for the
    table's final state.  The workload's pid and its one thread come from
    /proc (it writes no info file)."""
    target = fl.args.uctx_target
    type_traced(fl, [target, '2', '3', '--stuck', '--hold'])
    s = fl.wait(PRELOAD_TABLE, 'corotop shows the traced program')
    fl.corotop_pid = h.child_running(fl.shell_pid(), fl.args.corotop)
    fl.workload_pid = fl.corotop_pid and \
        h.child_running(fl.corotop_pid, target)
    if not fl.workload_pid:
        raise h.Abort('no uctx-target under corotop')
    fl.info = nz.Info('pid %d\ntid1 %d\nstations vary\n' %
                      (fl.workload_pid, fl.workload_pid))
    return s


PROCS_TABLE = h.both(
    h.has(r'Coroutines 5: R 2 +S 3 +D 0 '),
    h.has(r' ID.S +PID +TID '),
    h.has(r'^\s+3 S .* stuck_wait +stuck_wait\+0x'),
    # Both roots wait in the kernel (waitpid, pause): K, no STALL.
    h.has(r'^\s+2 K .* \[root\] '),
    h.has(r'^\s+4 K .* \[root\] '),
    h.lacks(r'^\s+\d+ .* STALL\s*$'),
    h.lacks(r'^\s+\d+ D '))


def flow_preload_procs(fl):
    """corotop -- fork-ctx exec uctx-target ...: a traced program that
    runs as two processes, each with coroutines -- fork-ctx parks two
    contexts and waits for its child, which execs uctx-target (whose
    stuck coroutine parks in stuck_wait).  The table shows a PID column
    (only then): each coroutine with its process, the child's WHERE and
    NAME by the child's own symbols (its stuck coroutine's stack walked in
    the child's memory), and the contexts the child inherited gone
    with the image its exec replaced.  q ends corotop and both
    processes."""
    if not fl.args.uctx_target or not fl.args.fork_ctx:
        raise h.Skip('no --uctx-target or --fork-ctx')
    fl.write_config(linger=3)
    fl.open()
    type_traced(fl, [fl.args.fork_ctx, 'exec', fl.args.uctx_target, '2',
                     '3', '--stuck', '--hold'])
    fl.wait(PROCS_TABLE, 'corotop shows both processes')
    fl.corotop_pid = h.child_running(fl.shell_pid(), fl.args.corotop)
    fl.workload_pid = fl.corotop_pid and \
        h.child_running(fl.corotop_pid, fl.args.fork_ctx)
    child = fl.workload_pid and \
        h.child_running(fl.workload_pid, fl.args.uctx_target)
    if not child:
        raise h.Abort('no fork-ctx and its uctx-target under corotop')
    # Each process's one thread is its pid: P1/T1 the parent, P2/T2 the
    # child.
    fl.info = nz.Info('pid %d\npid1 %d\npid2 %d\ntid1 %d\ntid2 %d\n'
                      'stations vary\n' % (fl.workload_pid, fl.workload_pid,
                                            child, fl.workload_pid, child))
    fl.step('table', marker=PROCS_TABLE)
    fl.keys('q')
    fl.finish(0, 'quit')
    deadline = time.monotonic() + h.WAIT
    while h.workload_alive(child) and time.monotonic() < deadline:
        time.sleep(h.POLL)
    fl.check(not h.workload_alive(child),
             'quit: the child process (uctx-target) is gone too')


def flow_preload(fl):
    """corotop -- uctx-target (a ucontext scheduler knowing nothing of
    corotop, traced through libcorotop-preload): the table once the workers
    finished -- the stuck coroutine named and parked in stuck_wait, the
    thread's root running; Home, then Enter shows the stuck one's parked
    stack; q ends corotop and the program."""
    if not fl.args.uctx_target:
        raise h.Skip('no --uctx-target')
    fl.write_config(linger=3)
    fl.open()
    start_preload(fl)
    # Home: before any key the cursor stays on the first row (tui.h,
    # chosen) whatever the refreshes showed; Home says so explicitly,
    # and the first row is the stuck one once the workers' rows went.
    fl.step('table', keys=['Home'], marker=PRELOAD_TABLE)
    s = fl.step('detail', keys=['Enter'],
                marker=h.both(h.has(r'^ Coroutine 3 "stuck_wait" '),
                              h.has(r'^ Parked stack')),
                golden=False)
    fl.check(s.has(r'^ Parked at stuck_wait\+0x'),
             'detail: parked at stuck_wait')
    fl.check(s.has(r'^\s+#\d+\s+stuck_wait\+0x') and
             not s.has(r'^\s+#\d+\s+preload_'),
             'detail: the parked stack goes through stuck_wait, without '
             "corotop's own frames (the preload's switch and entry)",
             h.screen_dump(s))
    fl.keys('q')
    fl.finish(0, 'quit')


# A thread meter's label, after "] ": the running fiber's name, or its
# WHERE shortened -- main::{lambda()#2} in full, context::resume for
# boost::fibers::context::resume()+0x52 -- never Boost's namespaces cut at
# the label's width ("boost::fibers:").
FIBER_METER = h.has(r'^\s+\d+ \[[^]]*\] (main::\{lambda\(\)#\d\}|'
                    r'context::resume)\s')
BOOST_CUT = h.has(r'^\s+\d+ \[[^]]*\] boost::')


def flow_fiber_meters(fl):
    """corotop -- fiber-target 4 10000000 --stuck (Boost.Fiber, two
    threads, traced through the preload): the thread meters name the fiber
    running on each thread in a way that says which it is -- a lambda's
    name whole, a WHERE by its function (context::resume) -- and no meter
    shows Boost's namespaces cut at the label's width.  Which fiber runs
    at a capture is the program's business: the flow waits (with a
    deadline) for a screen that shows one, and checks each screen it saw
    on the way.  Unpaced, so that the producers and consumers run most of
    the time: paced (--pace), the idle dispatchers ran at most captures,
    and a busy machine could go 30 s without a lambda's.  q ends corotop
    and the program."""
    if not fl.args.fiber_target:
        raise h.Skip('no --fiber-target')
    fl.open()
    type_traced(fl, [fl.args.fiber_target, '4', '10000000', '--stuck'])
    seen = []

    def meters(s):
        if s.has(r'^\s+\d+ \[[^]]*\] '):
            seen.append(s)
        return FIBER_METER(s)
    meters.__doc__ = FIBER_METER.__doc__
    fl.wait(meters, 'a thread meter names its fiber')
    fl.ok('a thread meter names its fiber')
    fl.corotop_pid = h.child_running(fl.shell_pid(), fl.args.corotop)
    fl.workload_pid = fl.corotop_pid and \
        h.child_running(fl.corotop_pid, fl.args.fiber_target)
    bad = [s for s in seen if BOOST_CUT(s)]
    fl.check(not bad, 'no thread meter shows boost:: cut at its width',
             h.screen_dump(bad[0]) if bad else '')
    fl.keys('q')
    fl.wait_prompt('quit: the shell prompt is back')

SCAN_TABLE = h.both(
    h.has(r'^ corotop  pid \d+ scanned '),
    h.has(r'Coroutines 4: R 1 +S 3 +D 0 '),
    h.has(r'^ +~[0-9a-f]+ R +\d+ +>\S+ +\? \[root\] +pause\+0x'),
    h.has(r'^ +~[0-9a-f]+ S +- +>\S+ +\? stuck_wait +stuck_wait\+0x'),
    h.has(r'^ +~[0-9a-f]+ S +- +>\S+ +\? worker +worker\+0x'))


def flow_scan(fl):
    """corotop -p on uctx-target started alone (no probe, no preload, no
    ppt buffer): its memory scanned -- the stuck coroutine and the two
    workers that ended after their last yield (their ucontext_t still look
    parked: docs/SCAN.md), IDs their saved contexts' addresses marked ~,
    AGE and the counts ?, IN-STATE a lower bound (>); its thread, a
    running row of its own (TID its id, waiting in pause, read at each
    refresh); End and Enter show
    the stuck one's detail: found by a scan, parked in stuck_wait; q ends
    corotop and leaves the program running."""
    if not fl.args.uctx_target:
        raise h.Skip('no --uctx-target')
    fl.open()
    fl.type('%s 2 3 --stuck --hold > /dev/null & PID=$!' %
            shlex.quote(fl.args.uctx_target))
    fl.keys('Enter')
    fl.wait_prompt('uctx-target runs in the background')
    fl.type_corotop('-d 2 -p $PID')
    fl.wait(SCAN_TABLE, 'corotop shows the scanned coroutines')
    fl.corotop_pid = h.child_running(fl.shell_pid(), fl.args.corotop)
    fl.workload_pid = h.child_running(fl.shell_pid(), fl.args.uctx_target)
    fl.workload_exe = fl.args.uctx_target
    if not fl.workload_pid:
        raise h.Abort('no uctx-target in the background')
    fl.info = nz.Info('pid %d\ntid1 %d\n' %
                      (fl.workload_pid, fl.workload_pid))
    fl.step('table', marker=SCAN_TABLE)
    fl.step('detail', keys=['End', 'Enter'],
            marker=h.both(h.has(r'^ Coroutine ~[0-9a-f]+ "stuck_wait" '),
                          h.has(r'found by a scan'),
                          h.has(r'#0 +stuck_wait\+0x')))
    fl.keys('q')
    fl.finish(0, 'quit', attached=True, buffers=False)
    os.kill(fl.workload_pid, signal.SIGKILL)


CORE_TABLE = h.both(
    h.has(r'^ corotop  core of pid \d+ \(uctx-target\) '),
    h.has(r'Coroutines 4: R 1 +S 3 +D 0 '),
    h.has(r'^ +~[0-9a-f]+ R +\d+ +\? +\? \[root\] +pause\+0x'),
    h.has(r'a core file: frozen at its dump; q quits'),
    h.has(r'^ +~[0-9a-f]+ S +- +\? +\? stuck_wait +stuck_wait\+0x'))


def flow_core(fl):
    """corotop --core on a gcore of uctx-target, started alone and ended
    once dumped: the same rows as the live scan, and its thread, running
    in pause (its registers in the core, TID its id), frozen -- IN-STATE ?
    too (a core says not since when), the header naming the core's pid
    and command, the message line saying it is a core; End and Enter show
    the stuck one's detail, "suspended when the core was dumped"; q ends
    corotop."""
    if not fl.args.uctx_target:
        raise h.Skip('no --uctx-target')
    if not shutil.which('gcore'):
        raise h.Skip('no gcore (gdb)')
    fl.open()
    fl.type('%s 2 3 --stuck --hold > uctx.out & PID=$!' %
            shlex.quote(fl.args.uctx_target))
    fl.keys('Enter')
    fl.wait_prompt('uctx-target runs in the background')
    pid = h.child_running(fl.shell_pid(), fl.args.uctx_target)
    if not pid:
        raise h.Abort('no uctx-target in the background')
    # Dumped once its coroutines are parked (its line says so, printed
    # before it pauses), within 60 s.
    fl.type('for i in $(seq 600); do grep -q coroutines= uctx.out && break; '
            'sleep 0.1; done; gcore -o core $PID > /dev/null 2>&1; '
            'kill $PID')
    fl.keys('Enter')
    fl.wait_prompt('gcore dumped it, and it was ended')
    fl.type_corotop('--core core.%d' % pid)
    fl.wait(CORE_TABLE, 'corotop shows the core\'s coroutines')
    fl.corotop_pid = h.child_running(fl.shell_pid(), fl.args.corotop)
    fl.info = nz.Info('pid %d\ntid1 %d\n' % (pid, pid))
    fl.step('table', marker=CORE_TABLE)
    fl.step('detail', keys=['End', 'Enter'],
            marker=h.both(h.has(r'^ Coroutine ~[0-9a-f]+ "stuck_wait" '),
                          h.has(r'suspended when the core was dumped'),
                          h.has(r'#0 +stuck_wait\+0x')))
    fl.keys('q')
    fl.finish(0, 'quit')
