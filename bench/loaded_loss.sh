#!/usr/bin/env bash
# loaded_loss.sh COROTOP CTP_WRITER REF_HARVESTER: events lost, capture share
# and the writer's slow-down, corotop against bench/ref_harvester (the
# upstream engine's behaviour, UPSTREAM-FACTS.md), on the same machine under
# the same load, runs alternated.
#
#   paced   64 coroutines x 1000 events, one round per ms (64,000 events),
#           RUNS times each way, for corotop's probe and for an SDK-shaped
#           writer: lost per run (ref: written - harvested; it counts none)
#   flat    the same writers flat out (1 thread x 16 coroutines, 4 threads x
#           4): capture share = harvested / written, and the writer's own
#           elapsed time against the same writer with no engine reading
#
# HOGS (default 2) busy loops run meanwhile; RUNS defaults to 10.
set -euo pipefail
corotop=$1 writer=$2 ref=$3
runs=${RUNS:-10}
hogs=${HOGS:-2}
# shellcheck source=bench/hogs.sh
. "$(dirname "$0")/hogs.sh"
hogs_start "$hogs"
echo "loaded_loss: $(nproc) CPUs, $hogs hogs, $runs runs; $(uname -r)"

# corotop_run ARGS...: "harvested lost written elapsed_ns"
corotop_run() {
	local err out
	err=$(mktemp)
	out=$("$corotop" -b -d 100 -f json -- "$writer" "$@" 2>"$err" | tail -1)
	python3 - "$out" "$err" <<'PY'
import json, re, sys
o = json.loads(sys.argv[1])
e = open(sys.argv[2]).read()
w = re.search(r"written=(\d+) elapsed_ns=(\d+)", e)
print(o["events"]["harvested"], o["events"]["lost"], w.group(1), w.group(2))
PY
	rm -f "$err"
}

# ref_run MODE ARGS...: "harvested lost written elapsed_ns" (lost = the gap)
ref_run() {
	local mode=$1 err out
	shift
	err=$(mktemp)
	out=$("$ref" "$mode" 4096 -- "$writer" "$@" 2>"$err")
	python3 - "$out" "$err" <<'PY'
import re, sys
h = int(re.search(r"harvested=(\d+)", sys.argv[1]).group(1))
w = re.search(r"written=(\d+) elapsed_ns=(\d+)", open(sys.argv[2]).read())
print(h, int(w.group(1)) - h, w.group(1), w.group(2))
PY
	rm -f "$err"
}

for style in probe sdk; do
	c_bad=0 r_bad=0
	for ((i = 1; i <= runs; i++)); do
		read -r ch cl cw _ <<<"$(corotop_run "$style" 1 64 1000 1000)"
		read -r rh rl rw _ <<<"$(ref_run spin "$style" 1 64 1000 1000)"
		[ "$cl" -ne 0 ] && c_bad=$((c_bad + 1))
		[ "$rl" -ne 0 ] && r_bad=$((r_bad + 1))
		echo "paced $style run $i: corotop harvested $ch lost $cl of $cw;" \
			"ref harvested $rh lost $rl of $rw"
	done
	echo "paced $style: runs with loss: corotop $c_bad/$runs, ref $r_bad/$runs"
done

for style in probe sdk; do
	for shape in "1 16 200000" "4 4 200000"; do
		read -r _ _ nw ne <<<"$(ref_run none "$style" $shape 0)"
		read -r rh _ rw re <<<"$(ref_run spin "$style" $shape 0)"
		read -r ch _ cw ce <<<"$(corotop_run "$style" $shape 0)"
		python3 - "$style" "$shape" "$nw" "$ne" "$rh" "$rw" "$re" \
			"$ch" "$cw" "$ce" <<'PY'
import sys
st, shape, nw, ne, rh, rw, re_, ch, cw, ce = sys.argv[1:]
t, m, k = shape.split()
print(f"flat {st} {t}x{m}: capture corotop {100*int(ch)/int(cw):.1f}% "
      f"ref {100*int(rh)/int(rw):.1f}%; writer time vs no engine: "
      f"corotop x{int(ce)/int(ne):.2f} ref x{int(re_)/int(ne):.2f} "
      f"(alone {int(ne)/1e6:.0f} ms)")
PY
	done
done
