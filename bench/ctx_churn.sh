#!/usr/bin/env bash
# ctx_churn.sh CTX_CHURN PRELOAD_LIB [TOTAL]: bench/ctx_churn natively and
# with libcorotop-preload in LD_PRELOAD (issue 25: after 3 M contexts the
# last 100k at most 2x the first and at most 4x native).  Prints both runs'
# lines and one summary:
#   ctx_churn.sh: native_last_s N preload_first_s F preload_last_s L
#                 last_over_first R last_over_native Q
set -euo pipefail
bin=$1
lib=$2
total=${3:-3000000}
echo "# native"
out=$(env -u LD_PRELOAD "$bin" "$total")
echo "$out"
native=$(tail -1 <<<"$out")
echo "# LD_PRELOAD=$lib"
out=$(LD_PRELOAD=$lib "$bin" "$total")
echo "$out"
pre=$(tail -1 <<<"$out")
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<"$2"; }
nl=$(field last_100k_s "$native")
pf=$(field first_100k_s "$pre")
pl=$(field last_100k_s "$pre")
awk -v nl="$nl" -v pf="$pf" -v pl="$pl" 'BEGIN {
	printf "ctx_churn.sh: native_last_s %.3f preload_first_s %.3f preload_last_s %.3f last_over_first %.2f last_over_native %.2f\n",
		nl, pf, pl, pl / pf, pl / nl }'
