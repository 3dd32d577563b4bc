#!/usr/bin/env python3
"""e2e-boost-examples (opt-in 'slow' suite): Boost.Fiber's and
Boost.Context's own examples, as Debian ships them (libboost1.74-doc,
/usr/share/doc/libboost1.74-doc/examples/libs/{fiber/examples,
context/example/fiber}), built and run under `corotop -b -f json
-d 600 --` (issue 28: "Boost.Fiber's own examples leave a named final
state").  Each program lives milliseconds, so its final snapshot, printed
after it exits, is the only one: every context in it must be named and no
WHERE may be hex.  Programs nobody here wrote: the test corotop's own
targets cannot be.

usage: boost_examples.py COROTOP [WORKDIR]
Exit 77 (skipped) when the examples or a C++ compiler are not installed:
`apt-get install libboost1.74-doc` brings the examples.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

DOC = "/usr/share/doc/libboost1.74-doc/examples/libs"
EXAMPLES = DOC + "/fiber/examples"
CONTEXT = DOC + "/context/example/fiber"
# The examples that run on their own, end, and make fibers or use them
# (the asio, numa, hip and cuda ones need servers or hardware; circle and
# endless_loop never end).
NAMES = [(EXAMPLES, n) for n in [
    "simple", "ping_pong", "join", "barrier", "range_for", "priority",
    "future", "wait_stuff", "work_sharing", "work_stealing",
    "segmented_stack", "adapt_callbacks", "adapt_method_calls",
    "adapt_nonblocking"]] + [(CONTEXT, n) for n in [
    "jump", "jump_void", "jump_mov", "ontop", "ontop_void", "fibonacci",
    "parser", "throw", "stack", "echosse"]]


def last_snapshot(text):
    last = None
    for line in text.splitlines():
        if line.startswith("{"):
            last = json.loads(line)
    return last


def main():
    corotop = sys.argv[1]
    cxx = shutil.which("g++") or shutil.which("c++")
    if not os.path.isdir(EXAMPLES) or not cxx:
        print("skipped: no %s or no C++ compiler" % EXAMPLES)
        return 77
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(
        prefix="corotop-boost-examples.")
    failed = []
    for where, name in NAMES:
        src = os.path.join(where, name + ".cpp")
        exe = os.path.join(work, name)
        if not os.path.exists(src):
            print("%s: not shipped, skipped" % name)
            continue
        if not os.path.exists(exe):
            subprocess.run([cxx, "-O2", "-g", "-std=c++17", "-pthread",
                            "-I", where, src, "-o", exe,
                            "-lboost_fiber", "-lboost_context"],
                           check=True)
        run = subprocess.run([corotop, "-b", "-f", "json", "-d", "600",
                              "--", exe], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             timeout=120, text=True, errors="replace")
        snap = last_snapshot(run.stdout)
        if run.returncode != 0 or snap is None:
            failed.append("%s: exit %d, %s" % (name, run.returncode,
                                               run.stderr[-300:]))
            continue
        kinds, bad = {}, []
        for c in snap["coroutines"]:
            kinds[c.get("kind")] = kinds.get(c.get("kind"), 0) + 1
            if not c.get("name"):
                bad.append("unnamed %s at %s" % (c.get("kind"),
                                                 c.get("where")))
            # Named after its module: the program's symbols were lost.
            if c.get("name") == name or "+0x" in c.get("name", ""):
                bad.append("%s named by its module: %s" % (c.get("kind"),
                                                            c.get("name")))
            if c.get("where", "").startswith("0x"):
                bad.append("%s: WHERE in hex %s" % (c.get("name"),
                                                   c.get("where")))
        names = sorted({c["name"] for c in snap["coroutines"]
                        if c.get("kind") == "coroutine"})
        print("%s: %s; fibers named %s" % (name, kinds, names))
        if bad:
            failed.append("%s: %s" % (name, "; ".join(bad[:5])))
    for f in failed:
        print("FAIL " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
