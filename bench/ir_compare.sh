#!/usr/bin/env bash
# bench/ir_compare.sh: the engine's own work, before and after a change, in
# instructions (valgrind --tool=callgrind) rather than seconds -- for the
# benchmarks whose timings on a shared 2-core machine spread wider than the
# difference they are asked to show (bench/compare.sh's harvest_throughput,
# whose rate is a race between writer threads and the harvest thread, and
# serve_scrape's refresh).  An instruction count of the same binary on the
# same input is the same on every run, busy machine or not.
#
#   bench/ir_compare.sh BEFORE_BUILD AFTER_BUILD
#
#   BEFORE_BUILD, AFTER_BUILD  meson build directories with bench/harvest_cost
#               and bench/serve_scrape built (-Dbenchmarks=true; release)
#
# Measures, per build:
#   harvest_cost N   instructions engine_scan executes per event harvested,
#                    per case (16, 1024, 16384 coroutines; bench/harvest_cost.c:
#                    the harvest into the model, no writer racing it)
#   serve_refresh    instructions of one steady serve_refresh at 100,000
#                    coroutines (bench/serve_scrape.c's five timed refreshes,
#                    their median), names and both formats included
# and prints before, after, after/before and "ok" when after is at most 5%
# more, "MISS" otherwise.  It reports and does not judge: exit 0 once it
# has printed, 2 on a usage error.  valgrind runs the programs about 50x
# slower: about 6 minutes in all on the machine of docs/PERFORMANCE.md.
set -u

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
[ $# -eq 2 ] || usage
command -v valgrind >/dev/null || { echo "ir_compare: valgrind is needed" >&2; exit 2; }
for d in "$1" "$2"; do
	for p in harvest_cost serve_scrape; do
		[ -x "$d/bench/$p" ] || { echo "ir_compare: $d/bench/$p is not built" >&2; exit 2; }
	done
done
out=$(mktemp -d /tmp/corotop-ir.XXXXXX)

# $1 side, $2 build: harvest_cost's per-case instructions per event.
harvest() {
	local f="$out/$1-harvest"
	valgrind --tool=callgrind --toggle-collect=engine_scan \
		--dump-after=engine_destroy --callgrind-out-file="$f.cg" \
		"$2/bench/harvest_cost" 16 >"$f.txt" 2>"$f.err" || {
		echo "ir_compare: harvest_cost failed under valgrind ($f.err)" >&2
		return 1
	}
	local i=0 k ev ir
	while read -r k ev; do
		i=$((i + 1))
		ir=$(awk '/^totals:/ {print $2}' "$f.cg.$i")
		awk -v k="$k" -v ir="$ir" -v ev="$ev" \
			'BEGIN { printf "harvest_cost %s coroutines Ir/event %.2f\n", k, ir / ev }'
	done < <(sed -n 's/.*coroutines=\([0-9]*\) .* events=\([0-9]*\) .*/\1 \2/p' "$f.txt")
}

# $1 side, $2 build: the median of serve_scrape's five timed refreshes.
refresh() {
	local f="$out/$1-serve"
	valgrind --tool=callgrind --toggle-collect=serve_refresh \
		--dump-after=serve_refresh --callgrind-out-file="$f.cg" \
		"$2/bench/serve_scrape" 100000 20 >"$f.txt" 2>"$f.err" || {
		echo "ir_compare: serve_scrape failed under valgrind ($f.err)" >&2
		return 1
	}
	# Dump 1 is the first refresh (it names every address); 2..6 the
	# five timed ones.
	for i in 2 3 4 5 6; do awk '/^totals:/ {print $2}' "$f.cg.$i"; done |
		sort -n | sed -n 3p |
		awk '{ printf "serve_refresh 100000 coroutines Ir/refresh %.0f\n", $1 }'
}

for side in before after; do
	b=$1
	[ $side = after ] && b=$2
	echo "ir_compare: $side ($b)" >&2
	{ harvest $side "$b" && refresh $side "$b"; } >"$out/$side.txt" || exit 1
done
printf '%-48s %14s %14s %12s %s\n' metric before after after/before verdict
paste -d'\t' "$out/before.txt" "$out/after.txt" | awk -F'\t' '{
	nb = split($1, a, " "); split($2, b, " ")
	name = a[1]; for (i = 2; i < nb; i++) name = name " " a[i]
	r = b[nb] / a[nb]
	printf "%-48s %14s %14s %12.3f %s\n", name, a[nb], b[nb], r, r <= 1.05 ? "ok" : "MISS"
}'
echo "raw output: $out"
