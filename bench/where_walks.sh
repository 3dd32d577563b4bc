#!/usr/bin/env bash
# bench/where_walks.sh: what walking every park costs corotop (issue 28:
# "at most 5% of a core at 100k").  The target, bench/parked_fibers, knows
# nothing of corotop: N ucontext coroutines parked in its own park_here(),
# traced through the preload.
#
#   bench/where_walks.sh COROTOP PARKED_FIBERS [seconds]
#
# Cases: 10,000 and 100,000 parked and idle; 100,000 with 100 of them
# re-parking every 10 ms (10,000 new parks a second).  Each runs
# COROTOP -b -f json -d 100 --stations 131072 -- PARKED_FIBERS N ..., waits
# until a snapshot shows N suspended, then reads the CPU time of corotop's
# walker thread ("corotop-walk", /proc/PID/task/TID/stat, utime + stime)
# over two windows of `seconds` each (default 20): the first holds the
# walks of the first parks, the second the steady state.  The share of
# suspended coroutines whose WHERE is park_here is read from the last
# snapshot of each window.  One line per case and window.
set -euo pipefail

[ $# -ge 2 ] || {
	sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
corotop=$1 parked=$2 secs=${3:-20}
hz=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/corotop-walks.XXXXXX)
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

# walker_ticks PID: utime + stime of its corotop-walk thread.
walker_ticks() {
	local t
	for t in /proc/"$1"/task/*; do
		if [ "$(cat "$t/comm" 2>/dev/null)" = corotop-walk ]; then
			awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat"
			return
		fi
	done
	echo 0
}

# share FILE N: "suspended program" in the last complete snapshot.
share() {
	python3 - "$1" <<'PY'
import json, sys
last = None
for line in open(sys.argv[1]):
    if line.startswith('{'):
        try:
            last = json.loads(line)
        except ValueError:
            pass
s = p = 0
for c in (last or {}).get('coroutines', []):
    if c.get('state') == 'suspended' and c.get('name') != 'root':
        s += 1
        p += c.get('where', '').startswith('park_here')
print(s, p)
PY
}

run_case() {
	local label=$1 n=$2
	shift 2
	local out=$work/$label.jsonl t0 t1 end window
	"$corotop" -b -f json -d 100 --stations 131072 -- "$parked" "$n" "$@" \
		>"$out" 2>"$work/$label.err" &
	pid=$!
	end=$((SECONDS + 120))
	until [ "$(share "$out" | awk '{ print $1 }')" -ge "$n" ] 2>/dev/null; do
		[ $SECONDS -lt $end ] || {
			echo "where_walks $label: not ready in 120 s" >&2
			kill "$pid"
			return 1
		}
		sleep 1
	done
	for window in first steady; do
		t0=$(walker_ticks "$pid")
		sleep "$secs"
		t1=$(walker_ticks "$pid")
		echo "where_walks case=$label window=$window seconds=$secs" \
			"walker_cpu_pct=$(awk -v a="$t0" -v b="$t1" -v s="$secs" \
				-v hz="$hz" \
				'BEGIN { printf "%.2f", 100 * (b - a) / hz / s }')" \
			"suspended_program=$(share "$out")"
	done
	kill -INT "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

run_case idle-10k 10000
run_case idle-100k 100000
run_case churn-100k 100000 10 100
