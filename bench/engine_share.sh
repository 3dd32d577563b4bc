#!/bin/bash
# engine_share: what corotop's engine costs next to the program it watches
# (issue 31, item 4): corotop -b traces the bundled demo; over a window of
# SECONDS, after WARMUP seconds, this reads from /proc the CPU time of
# corotop (all its threads) and of the demo (the target), and each corotop
# thread's context switches (voluntary: it went to sleep; each one a
# wake-up afterwards).
#
# One line per run:
#   engine_share seconds=S demo_cpu_pct=.. corotop_cpu_pct=.. share=..
#     wakeups_per_s=.. busiest_thread=TID:NAME:WAKEUPS_PER_S
# share is corotop's CPU over the demo's (issue 31: at most 0.03).
#
# usage: engine_share.sh COROTOP DEMO [SECONDS [WARMUP [RUNS]]]   (10 3 1)
set -eu
corotop=$1 demo=$2
seconds=${3:-10} warmup=${4:-3} runs=${5:-1}
hz=$(getconf CLK_TCK)

# utime+stime of a /proc stat file, in ticks (fields 14 and 15, after the
# command's closing parenthesis).
ticks() {
	sed 's/.*) //' "$1" 2>/dev/null | awk '{print $12 + $13}'
}

# The sum of voluntary context switches of every thread of pid $1, and
# per thread "tid name count".
switches() {
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" \
			"$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")"
	done 2>/dev/null
}

for run in $(seq 1 "$runs"); do
	out=$(mktemp)
	"$corotop" -b -f json -d 1000 -- "$demo" >"$out" 2>&1 &
	cpid=$!
	# The target by its name (corotop's keeper forks it).
	name=$(basename "$demo" | cut -c1-15)
	dpid=
	for _ in $(seq 1 100); do
		dpid=$(pgrep -n -x "$name" 2>/dev/null || true)
		[ -n "$dpid" ] && break
		sleep 0.1
	done
	[ -n "$dpid" ] || { echo "engine_share: $name did not start" >&2; exit 1; }
	sleep "$warmup"
	c0=$(ticks /proc/"$cpid"/stat)
	d0=$(ticks /proc/"$dpid"/stat)
	s0=$(switches "$cpid")
	sleep "$seconds"
	c1=$(ticks /proc/"$cpid"/stat)
	d1=$(ticks /proc/"$dpid"/stat)
	s1=$(switches "$cpid")
	kill -INT "$cpid" 2>/dev/null || true
	wait "$cpid" 2>/dev/null || true
	rm -f "$out"
	awk -v s="$seconds" -v hz="$hz" -v c0="$c0" -v c1="$c1" -v d0="$d0" \
		-v d1="$d1" -v a="$s0" -v b="$s1" 'BEGIN {
		n = split(a, x, "\n"); for (i = 1; i <= n; i++) { split(x[i], f, " "); before[f[1]] = f[3] }
		n = split(b, y, "\n"); total = 0; best = ""; bestn = -1
		for (i = 1; i <= n; i++) {
			split(y[i], f, " "); w = f[3] - (f[1] in before ? before[f[1]] : 0)
			total += w; if (w > bestn) { bestn = w; best = f[1] ":" f[2] }
		}
		cp = 100 * (c1 - c0) / hz / s; dp = 100 * (d1 - d0) / hz / s
		printf "engine_share seconds=%d demo_cpu_pct=%.1f corotop_cpu_pct=%.2f share=%.3f wakeups_per_s=%.0f busiest_thread=%s:%.0f\n",
			s, dp, cp, (dp > 0 ? cp / dp : 0), total / s, best, bestn / s
	}'
done
