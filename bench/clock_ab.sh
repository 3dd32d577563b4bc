#!/bin/bash
# clock_ab: a traced switch and a traced Boost.Fiber ping-pong by the
# probe's clock (issue 31, item 1; PERFORMANCE.md §31a).  RUNS rounds
# (default 5), interleaved: each program bare, then under
# `corotop -b -f json -d 100 --` with COROTOP_PROBE_CLOCK=gettime, then
# =tsc.  Each line is the program's own median per switch or message.
#
# usage: B=BUILD_DIR [RUNS=5] bench/clock_ab.sh   (a release build with
#        bench/fcontext_switch and bench/fiber_pingpong)
set -u
B=${B:-build-bench}
for i in $(seq 1 "${RUNS:-5}"); do
	for prog in "$B/bench/fcontext_switch" "$B/bench/fiber_pingpong"; do
		echo "-- run $i $(basename "$prog") bare"
		"$prog"
		for m in gettime tsc; do
			echo "-- run $i $(basename "$prog") traced clock=$m"
			COROTOP_PROBE_CLOCK=$m \
				COROTOP_PRELOAD=$B/src/preload/libcorotop-preload.so \
				"$B/corotop" -b -f json -d 100 -- "$prog" |
				grep -v '^{'
		done
	done
done
