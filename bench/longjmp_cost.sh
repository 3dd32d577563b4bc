#!/bin/bash
# longjmp_cost: what libcorotop-preload's longjmp wrappers cost per jump
# (bench/longjmp_cost.c: an error path's setjmp/longjmp on the thread's
# stack and on a made context's, and QEMU's sigsetjmp/siglongjmp switch
# between two stacks).  The program runs four ways, interleaved, RUNS
# times:
#   bare         as it is
#   interposed   LD_PRELOAD=libcorotop-preload.so, no corotop
#   interposed-nojmp  the same with COROTOP_LONGJMP=0 (the wrappers
#                forward every jump at once)
#   traced       under `corotop -b -- PROGRAM`
# Each line is the program's own (median per jump or per switch).
#
# usage: longjmp_cost.sh COROTOP PRELOAD_LIB LONGJMP_COST [ARGS...]
#        (RUNS in the environment, default 5)
# The traced program's lines go through --output: corotop's own JSON
# lines share its stdout, and a line of each can meet on one line there.
set -u
corotop=$1 lib=$2 prog=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "${RUNS:-5}"); do
	echo "# round $i"
	"$prog" "$@"
	LD_PRELOAD=$lib "$prog" "$@"
	COROTOP_LONGJMP=0 LD_PRELOAD=$lib "$prog" "$@"
	: >"$out"
	COROTOP_PRELOAD=$lib "$corotop" -b -f json -d 100 --output "$out" \
		-- "$prog" "$@" >/dev/null
	cat "$out"
done
