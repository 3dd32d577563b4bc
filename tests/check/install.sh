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
# after it (the return address's).  Taken while the workers are parked.
line=$(grep -n 'yield(); /\*' "$src/examples/minimal.c" | cut -d: -f1)
"$bin" -b -f json -d 5 -n 1 -- "$tmp/ex/minimal" >"$tmp/out.json" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "installed corotop on minimal (-n 1) failed"; }
python3 - "$tmp/out.json" "$line" <<'PY' || fail "WHERE is not the call site"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])][-1]
want = '(minimal.c:%s)' % sys.argv[2]
wheres = [c.get('where', '') for c in s['coroutines']
          if c['state'] == 'suspended']
ok = wheres and all(w.startswith('work+') and w.endswith(want)
                    for w in wheres)
if not ok:
    print('want work+0x.. %s, got %s' % (want, wheres), file=sys.stderr)
sys.exit(0 if ok else 1)
PY

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
