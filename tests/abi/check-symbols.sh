#!/usr/bin/env bash
# check-symbols: the shared probe exports exactly the symbols listed in
# src/probe/probe.map, no more (hidden visibility works) and no fewer.
set -euo pipefail
lib=$1 map=$2
want=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^[[:space:]]+[a-z_]+;' | tr -d ' \t;' | sort)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {sub(/@.*/, "", $3); print $3}' | sort)
if [ "$want" != "$have" ]; then
	echo "exported symbols differ from $map:" >&2
	diff <(echo "$want") <(echo "$have") >&2 || true
	exit 1
fi
echo "check-symbols: $(echo "$have" | wc -l) symbols match"
