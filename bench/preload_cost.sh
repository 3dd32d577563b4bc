#!/bin/bash
# preload_cost: what libcorotop-preload costs a program that never calls
# the probe.  Each program runs three ways, interleaved, RUNS times:
#   bare        as it is
#   interposed  LD_PRELOAD=libcorotop-preload.so, no corotop (the wrappers,
#               an untraced probe)
#   traced      under `corotop -b -- PROGRAM` (the wrappers and the probe
#               writing every transition; the engine harvests meanwhile)
# Each line is the program's own (median per switch or per message).
#
# usage: preload_cost.sh COROTOP PRELOAD_LIB FCONTEXT_SWITCH [PROGRAM...]
#        (free_cost, fiber_pingpong, fiber_spawn)
#        (RUNS in the environment, default 5)
set -u
corotop=$1 lib=$2
shift 2
for i in $(seq 1 "${RUNS:-5}"); do
	for prog in "$@"; do
		"$prog"
		LD_PRELOAD=$lib "$prog"
		COROTOP_PRELOAD=$lib "$corotop" -b -f json -d 100 -- "$prog" |
			grep -v '^{'
	done
done
