#!/usr/bin/env bash
# bench/record_zst.sh: what compressing a recording saves and costs, on the
# demo, plain (--record FILE.heph) against zstd (--record FILE.heph.zst).
#
#   bench/record_zst.sh COROTOP DEMO [seconds] [runs]
#
# Each run is `COROTOP -b -n SECONDS -d 10 --record FILE -- DEMO` (default
# 20 s).  While it runs, /proc is read every 0.1 s: corotop's own CPU time
# (utime + stime of the process, all its threads, not the demo's) and the
# recorder's writer thread's (the one thread at nice 19); the last reading
# before exit is kept.  Then: the file's size and bytes per second of
# recording, its Heph bytes (convert --to heph: the same run uncompressed,
# so the ratio is exact), and the time `COROTOP --replay FILE -b -n 1 -d 1`
# takes (process start, open and index, one snapshot), best of 3.  Prints
# one line per run in the bench format ("record_zst mode=... key=value").
set -euo pipefail

[ $# -ge 2 ] || {
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
corotop=$1 demo=$2 secs=${3:-20} runs=${4:-1}
tck=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/corotop-zst.XXXXXX)
trap 'rm -rf "$work"' EXIT

# utime+stime (ticks) of /proc/$1/stat (fields after the comm's ")").
ticks() {
	local s
	s=$(cat "$1" 2>/dev/null) || return 1
	s=${s##*) }
	set -- $s
	echo $((${12} + ${13}))
}

nice_of() {
	local s
	s=$(cat "$1" 2>/dev/null) || return 1
	s=${s##*) }
	set -- $s
	echo "${17}"
}

one() {
	local mode=$1 file=$2 pid cpu=0 wcpu=0 t size heph best=999999999 s e d
	"$corotop" -b -n "$secs" -d 10 --record "$file" -- "$demo" \
		>/dev/null 2>"$work/err" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if t=$(ticks "/proc/$pid/stat"); then cpu=$t; fi
		for task in /proc/"$pid"/task/*; do
			if [ "$(nice_of "$task/stat" || echo 0)" = 19 ]; then
				if t=$(ticks "$task/stat"); then wcpu=$t; fi
			fi
		done
		sleep 0.1
	done
	wait "$pid" || true
	size=$(stat -c %s "$file")
	heph=$("$corotop" convert -q --to heph "$file" | wc -c)
	for _ in 1 2 3; do
		s=$(date +%s%N)
		"$corotop" --replay "$file" -b -n 1 -d 1 >/dev/null 2>&1
		e=$(date +%s%N)
		d=$(((e - s) / 1000))
		if [ "$d" -lt "$best" ]; then best=$d; fi
	done
	awk -v m="$mode" -v secs="$secs" -v size="$size" -v heph="$heph" \
		-v cpu="$cpu" -v w="$wcpu" -v tck="$tck" -v open="$best" 'BEGIN {
		printf "record_zst mode=%s secs=%d file_bytes=%d file_MB_per_s=%.3f heph_bytes=%d heph_MB_per_s=%.3f ratio=%.2f corotop_cpu_s=%.2f writer_cpu_s=%.2f replay_open_ms=%.0f\n",
			m, secs, size, size / secs / 1e6, heph, heph / secs / 1e6,
			heph / size, cpu / tck, w / tck, open / 1000
	}'
	rm -f "$file"
}

for ((r = 0; r < runs; r++)); do
	one plain "$work/run.heph"
	one zstd "$work/run.heph.zst"
done
