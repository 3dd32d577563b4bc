#!/usr/bin/env bash
# demo_loss.sh COROTOP DEMO: events the bundled demo loses under corotop on a
# busy machine -- the run a user makes (`corotop -b -n 30 -d 10 -f json --
# corotop-demo`, 30 s), RUNS times, with HOGS busy loops running meanwhile.
#
# One line per run: harvested, lost, the stations that lost and how many each
# (from the coroutines' "lost" counts), the longest wait between two harvest
# passes (engine.pass_gap_max_ms: how long the rings had to hold), and the
# load average at the end; then a summary "lost in N of RUNS runs".
#
# HOGS (default 2), RUNS (default 10), SECS (default 30).
set -euo pipefail
corotop=$1 demo=$2
runs=${RUNS:-10}
hogs=${HOGS:-2}
secs=${SECS:-30}
# shellcheck source=bench/hogs.sh
. "$(dirname "$0")/hogs.sh"
hogs_start "$hogs"
echo "demo_loss: $(nproc) CPUs, $hogs hogs, $runs runs of $secs s; $(uname -r)"
echo "command: $corotop -b -n $secs -d 10 -f json -- $demo"
lossy=0
for ((r = 1; r <= runs; r++)); do
	out=$("$corotop" -b -n "$secs" -d 10 -f json -- "$demo" 2>/dev/null |
		tail -1 | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
ev = o["events"]
by = sorted(((c["lost"], c["station"]) for c in o["coroutines"] if c.get("lost")),
            reverse=True)
where = " ".join("%d:%d" % (s, n) for n, s in by[:8]) or "-"
gap = o["engine"].get("pass_gap_max_ms")  # absent before 115e31c
print("harvested %d lost %d stations %s pass_gap_max_ms %s"
      % (ev["harvested"], ev["lost"], where,
         "-" if gap is None else "%.1f" % gap))
print(ev["lost"])
')
	echo "run $r: $(head -1 <<<"$out") load $(cut -d' ' -f1 /proc/loadavg)"
	[ "$(tail -1 <<<"$out")" = 0 ] || lossy=$((lossy + 1))
done
echo "demo_loss: lost in $lossy of $runs runs ($hogs hogs)"
