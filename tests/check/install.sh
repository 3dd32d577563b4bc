#!/bin/sh
# install.sh BUILD SRC: meson install into a scratch DESTDIR, then build
# examples/ out of the tree with its Makefile against the installed
# pkg-config file, and run the installed corotop on the installed-built
# example.  Checks that what a user installs is whole: the binary, the
# probe library, the headers, corotop-probe.pc and the man page.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() {
	echo "install: $*" >&2
	exit 1
}

meson install -C "$build" --destdir "$tmp/root" --no-rebuild >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install failed"; }
find_one() { find "$tmp/root" -name "$1" | head -n 1; }
pc=$(find_one corotop-probe.pc)
bin=$(find "$tmp/root" -path '*/bin/corotop' | head -n 1)
lib=$(find_one 'libcorotop-probe.so.1')
[ -n "$pc" ] || fail "no corotop-probe.pc installed"
[ -n "$bin" ] || fail "no bin/corotop installed"
[ -n "$lib" ] || fail "no libcorotop-probe.so.1 installed"
[ -n "$(find_one corotop.1)" ] || fail "no man page installed"
for h in probe.h ctp.h calltrace.h ppt.h coro.hpp; do
	[ -n "$(find_one "$h")" ] || fail "no header corotop/$h installed"
done

# The user's side: a copy of examples/ anywhere, built with make and
# pkg-config (the sysroot maps the .pc's prefix into the DESTDIR).
mkdir "$tmp/ex"
cp "$src/examples/minimal.c" "$src/examples/coro_example.cpp" \
	"$src/examples/Makefile" "$tmp/ex/"
PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$tmp/root \
	make -s -C "$tmp/ex" minimal >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log" >&2; fail "make of examples/minimal failed"; }
if command -v c++ >/dev/null 2>&1; then
	PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$tmp/root \
		make -s -C "$tmp/ex" coro_example >"$tmp/make.log" 2>&1 ||
		{ cat "$tmp/make.log" >&2; fail "make of coro_example failed"; }
fi

# Run it under the installed corotop: three workers, every transition.
export LD_LIBRARY_PATH="$(dirname "$lib")"
"$bin" -b -f json -d 5 -- "$tmp/ex/minimal" >"$tmp/out.json" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "installed corotop on minimal failed"; }
grep -q '^minimal: 3 workers done$' "$tmp/err" ||
	fail "minimal's output did not reach stderr: $(cat "$tmp/err")"
python3 - "$tmp/out.json" <<'PY' || fail "the final snapshot is not minimal's"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
c = lines[-1]['coroutines']
# 10, 20 and 30 yields: a suspend and a resume each, and the first resume.
ok = len(c) == 3 and all(x.get('name') == 'worker' for x in c) and \
    sum(x['switches'] for x in c) == 123
if not ok:
    print(json.dumps(lines[-1])[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
# WHERE names the call: the line of `yield();` in work(), not the line
# after it (the return address's).  Snapshots are read as they come until
# one shows every suspended worker parked there (60 s at most), then
# corotop is stopped (SIGINT).  A worker that has not run yet is parked at
# 0x0, so no snapshot taken at a fixed time is sure to show it.  And
# minimal, which ends by itself after about 3 s, is held still (SIGSTOP)
# from its start, so it can not end before a snapshot showed it, however
# slowly corotop runs: held for two snapshots (the harvest caught up),
# then, if they did not show it, let go until a snapshot shows it moved
# on, and held again.
line=$(grep -n 'yield(); /\*' "$src/examples/minimal.c" | cut -d: -f1)
python3 - "$bin" "$tmp/ex/minimal" "$line" "$tmp/err" <<'PY' ||
import json, os, select, signal, subprocess, sys, time
corotop, prog, line, errpath = sys.argv[1:]
want = '(minimal.c:%s)' % line
p = subprocess.Popen([corotop, '-b', '-f', 'json', '-d', '5', '--', prog],
                     stdout=subprocess.PIPE, stderr=open(errpath, 'w'))
deadline = time.monotonic() + 60
buf, ok, wheres, snaps = b'', False, [], 0
target = held = moved = None  # pid; snapshots since held; switches at release


def child():
    """corotop's child running prog (not its keeper), or None."""
    for d in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % d) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            if ppid == p.pid and \
                    os.path.samefile('/proc/%s/exe' % d, prog):
                return int(d)
        except (OSError, ValueError, IndexError):
            pass
    return None


def sig(n):
    try:
        os.kill(target, n)
    except ProcessLookupError:  # ended and reaped
        pass


try:
    while target is None and p.poll() is None and \
            time.monotonic() < deadline:
        target = child()
        if target is None:
            time.sleep(0.001)
    if target is not None:
        sig(signal.SIGSTOP)
        held = 0
    while not ok and time.monotonic() < deadline:
        if b'\n' not in buf:
            left = deadline - time.monotonic()
            if not select.select([p.stdout], [], [], max(left, 0))[0]:
                break
            chunk = os.read(p.stdout.fileno(), 1 << 16)
            if not chunk:
                break  # corotop ended: minimal ran to its end
            buf += chunk
            continue
        l, buf = buf.split(b'\n', 1)
        s = json.loads(l)
        snaps += 1
        wheres = [c.get('where', '') for c in s['coroutines']
                  if c['state'] == 'suspended']
        ok = bool(wheres) and all(w.startswith('work+') and w.endswith(want)
                                  for w in wheres)
        if ok or not s['target']['running']:
            break
        switches = sum(c['switches'] for c in s['coroutines'])
        if target is None:
            target = s['target']['pid']
        if held is None and (moved is None or switches > moved):
            sig(signal.SIGSTOP)
            held = 0
        elif held is not None:
            held += 1
            if held >= 2:
                sig(signal.SIGCONT)
                held, moved = None, switches
finally:
    if target is not None:
        sig(signal.SIGCONT)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    rc = p.wait(60)
if rc not in (0, 130):
    print('corotop exit %d' % rc, file=sys.stderr)
    sys.exit(1)
if not ok:
    print('want work+0x.. %s, got %s (%d snapshots)' % (want, wheres, snaps),
          file=sys.stderr)
sys.exit(0 if ok else 1)
PY
	{ cat "$tmp/err" >&2; fail "WHERE is not the call site"; }

# The C++20 example: 4 coroutines; every event it writes is either
# harvested or counted lost (it runs in a burst, faster than any harvest).
if [ -x "$tmp/ex/coro_example" ]; then
	"$bin" -b -f json -- "$tmp/ex/coro_example" 100 >"$tmp/out.json" \
		2>"$tmp/err" || { cat "$tmp/err" >&2; fail "coro_example failed"; }
	python3 - "$tmp/out.json" <<'PY' || fail "coro_example's snapshot"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])][-1]
e = s['events']
ok = len(s['coroutines']) == 4 and e['harvested'] + e['lost'] == 816
if not ok:
    print(json.dumps(s)[:2000], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
fi
echo "install: ok ($(basename "$bin"), $(basename "$lib"), $(basename "$pc"))"
