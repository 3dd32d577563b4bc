#!/usr/bin/env bash
# check-demo-builds: scripts/demo builds what corotop needs at run time, the
# preload library included, so that the quick start's next step,
# `build/corotop -- PROGRAM`, traces an unmodified program.  The script is
# run as it is, with meson, ninja and dpkg-query replaced by stand-ins on
# PATH (nothing is configured, built or installed) and build/corotop by one
# that records its arguments: the ninja stand-in records the targets asked
# for, which must include the preload library's target as this build names
# it (meson passes it).
# Usage: demo_builds.sh SOURCE_ROOT PRELOAD_TARGET
set -euo pipefail
src=$1
preload=$2
tmp=$(mktemp -d /tmp/check-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/build"
cat >"$tmp/bin/ninja" <<EOS
#!/bin/sh
printf '%s\n' "\$@" >"$tmp/ninja.args"
EOS
cat >"$tmp/bin/meson" <<'EOS'
#!/bin/sh
exit 0
EOS
cat >"$tmp/bin/dpkg-query" <<'EOS'
#!/bin/sh
printf 'install ok installed'
EOS
cat >"$tmp/build/corotop" <<EOS
#!/bin/sh
printf '%s\n' "\$@" >"$tmp/corotop.args"
EOS
chmod +x "$tmp/bin/"* "$tmp/build/corotop"
PATH="$tmp/bin:$PATH" BUILD_DIR="$tmp/build" "$src/scripts/demo" \
	</dev/null >"$tmp/out" 2>"$tmp/err" || {
	echo "scripts/demo failed:" >&2
	cat "$tmp/err" >&2
	exit 1
}
fail=0
for t in corotop "$preload" src/demo/corotop-demo; do
	if ! grep -qxF -- "$t" "$tmp/ninja.args"; then
		echo "scripts/demo does not build $t; ninja was given:" >&2
		cat "$tmp/ninja.args" >&2
		fail=1
	fi
done
# It went on to run corotop on the demo.
grep -qxF -- "$tmp/build/src/demo/corotop-demo" "$tmp/corotop.args" || {
	echo "scripts/demo did not run corotop on the demo" >&2
	fail=1
}
[ "$fail" -eq 0 ] && echo "scripts/demo builds: $(tr '\n' ' ' <"$tmp/ninja.args")"
exit "$fail"
