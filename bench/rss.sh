#!/usr/bin/env bash
# bench/rss.sh: resident memory of the real corotop binary watching N
# coroutines (default 100000), in batch mode and in the interactive UI.
#
#   bench/rss.sh COROTOP MANY_COROS [coroutines] [seconds]
#
# batch:        COROTOP -b -d 5 --stations 131072 -- MANY_COROS N   (stdout kept
#               to its "Coroutines:" lines only)
# interactive:  the same without -b, in a detached tmux session of 200x60
#               with TERM=xterm-256color (skipped when tmux is missing)
# interactive-filter: the same with the filter "-F 0x", which every row's
#               WHERE cell matches (the filter's caches at their largest)
# Each mode waits until corotop shows all N coroutines, keeps it running
# for `seconds` more (default 5), then reads corotop's /proc/PID/status
# (VmRSS, VmHWM, RssAnon, RssFile, RssShmem) and the Rss of its ctp.shm
# and calltrace.shm mappings in /proc/PID/smaps (both shared with the
# target).  The figure the target is about is VmRSS - Rss(ctp.shm) -
# Rss(calltrace.shm): corotop's own memory.  Target: < 64 MiB (65536 kB).
# Prints one line per mode in the bench format ("rss mode=... key=value").
set -euo pipefail

[ $# -ge 2 ] || {
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
corotop=$1 many=$2 n=${3:-100000} secs=${4:-5}
stations=131072
target_kb=65536
work=$(mktemp -d /tmp/corotop-rss.XXXXXX)
tsock="corotop-rss-$$"
cpid=

cleanup() {
	if [ -n "$cpid" ]; then
		kill -TERM "$cpid" 2>/dev/null || true
	fi
	tmux -L "$tsock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

status_kb() { # PID FIELD
	awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' \
		"/proc/$1/status"
}

shm_rss_kb() { # PID [FILE]: Rss of the FILE (ctp.shm) mapping(s)
	awk -v f="/${2:-ctp.shm}" '/^[0-9a-f]+-[0-9a-f]+ / {
		in_shm = substr($NF, length($NF) - length(f) + 1) == f }
	     in_shm && $1 == "Rss:" { sum += $2 }
	     END { print sum + 0 }' "/proc/$1/smaps"
}

shm_size_kb() { # PID: virtual size of the ctp.shm mapping(s)
	awk '/^[0-9a-f]+-[0-9a-f]+ / { in_shm = ($NF ~ /\/ctp\.shm$/) }
	     in_shm && $1 == "Size:" { sum += $2 }
	     END { print sum + 0 }' "/proc/$1/smaps"
}

report() { # MODE PID
	local mode=$1 pid=$2 rss hwm anon file shmem map mapsz ctmap own
	rss=$(status_kb "$pid" VmRSS)
	hwm=$(status_kb "$pid" VmHWM)
	anon=$(status_kb "$pid" RssAnon)
	file=$(status_kb "$pid" RssFile)
	shmem=$(status_kb "$pid" RssShmem)
	map=$(shm_rss_kb "$pid")
	mapsz=$(shm_size_kb "$pid")
	ctmap=$(shm_rss_kb "$pid" calltrace.shm)
	own=$((rss - map - ctmap))
	echo "rss mode=$mode coroutines=$n stations=$stations secs=$secs" \
		"vmrss_kb=$rss vmhwm_kb=$hwm rss_anon_kb=$anon" \
		"rss_file_kb=$file rss_shmem_kb=$shmem" \
		"shm_map_rss_kb=$map shm_map_size_kb=$mapsz" \
		"calltrace_map_rss_kb=$ctmap" \
		"rss_minus_map_kb=$own rss_minus_map_mib=$(awk -v k="$own" 'BEGIN { printf "%.1f", k / 1024 }')" \
		"target_kb=$target_kb $([ "$own" -lt "$target_kb" ] && echo PASS || echo MISS)"
}

# Wait up to 60 s for COMMAND to print something matching the count.
wait_for() { # DESCRIPTION COMMAND...
	local what=$1
	shift
	for _ in $(seq 1 600); do
		if "$@"; then
			return 0
		fi
		sleep 0.1
	done
	echo "rss: $what: corotop never showed $n coroutines" >&2
	return 1
}

batch_ready() {
	grep -q "^Coroutines: $n shown" "$work/batch.out" 2>/dev/null
}

# ---- batch mode ----
"$corotop" -b -d 5 --stations "$stations" -- "$many" "$n" \
	> >(grep --line-buffered '^Coroutines:' >"$work/batch.out") \
	2>"$work/batch.err" &
cpid=$!
wait_for batch batch_ready || { cat "$work/batch.err" >&2; exit 1; }
sleep "$secs"
kill -0 "$cpid" 2>/dev/null || { echo "rss: corotop died" >&2; exit 1; }
report batch "$cpid"
kill -TERM "$cpid"
wait "$cpid" 2>/dev/null || true
cpid=

# ---- interactive mode, in tmux ----
if ! command -v tmux >/dev/null 2>&1; then
	echo "rss mode=interactive skipped: no tmux"
	exit 0
fi
run_tui() { # mode [corotop args...]
	local mode=$1 cmd
	shift
	printf -v cmd 'exec env TERM=xterm-256color %q -d 5 -s %q %s -- %q %q 2>%q' \
		"$corotop" "$stations" "$*" "$many" "$n" "$work/tui.err"
	tmux -L "$tsock" -f /dev/null new-session -d -x 200 -y 60 -s rss "$cmd"
	tpid=$(tmux -L "$tsock" display-message -p -t rss '#{pane_pid}')
	wait_for "$mode" tui_ready || {
		tmux -L "$tsock" capture-pane -p -t rss >&2 || true
		exit 1
	}
	sleep "$secs"
	report "$mode" "$tpid"
	tmux -L "$tsock" send-keys -t rss q
	sleep 0.5
	tmux -L "$tsock" kill-server 2>/dev/null || true
}
tui_ready() {
	tmux -L "$tsock" capture-pane -p -t rss 2>/dev/null |
		grep -q "Coroutines $n:"
}
run_tui interactive
run_tui interactive-filter -F 0x
