#!/usr/bin/env bash
# regen-goldens.sh BUILD_DIR [FLOW...]: rewrite tests/ui/golden/ from what
# corotop (BUILD_DIR/corotop) draws now, for every flow or the ones named.
#
# A regenerated golden records whatever corotop draws, bugs included.  Every
# golden that changed MUST be reviewed by eye before it is committed:
#   git diff --stat tests/ui/golden/ && git diff tests/ui/golden/
# Look at the ID and S columns, the row order, the titles and the sort
# marker, the selected row (its tag, "cyan/black" or "rev/+r"), the status
# and key lines, and the detail and help layouts.  Goldens that record a
# known bug say so in their header ("# KNOWN BUG: ...").
#
# The 'start' flow runs first: other flows compare against its golden.
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1/corotop" ]; then
	echo "usage: $0 BUILD_DIR [FLOW...]   (BUILD_DIR/corotop must exist)" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
ninja -C "$build" corotop tests/ui/ui-scripted tests/targets/ppt-target \
	tests/targets/uctx-target tests/targets/fork-ctx tests/ui/heph-fixture >&2
if [ $# -eq 0 ]; then
	mapfile -t flows < <(python3 "$here/harness.py" --list)
else
	flows=("$@")
fi
# Failing checks (known bugs) do not stop the rewrite; the goldens are
# written all the same, so ignore the status and let the review decide.
python3 "$here/harness.py" --regen \
	--corotop "$build/corotop" \
	--workload "$build/tests/ui/ui-scripted" \
	--ppt-target "$build/tests/targets/ppt-target" \
	--uctx-target "$build/tests/targets/uctx-target" \
	--fork-ctx "$build/tests/targets/fork-ctx" \
	--heph-fixture "$build/tests/ui/heph-fixture" \
	"${flows[@]}" | grep -E '^(wrote|== |FAIL)' || true
echo "now review: git diff tests/ui/golden/" >&2
