#!/usr/bin/env bash
# bench/compare.sh: two release builds, before and after a change, run side
# by side on the benchmarks issue 29 holds to 5% -- render, json_snapshot,
# serve_scrape, harvest_throughput, probe_record and preload_cost -- and a
# table per benchmark of the medians of each side.
#
#   bench/compare.sh BEFORE_BUILD AFTER_BUILD [-r RUNS] [-s] [-b LIST]
#
#   BEFORE_BUILD, AFTER_BUILD  meson build directories configured with
#               -Dbuildtype=release -Dbenchmarks=true (scripts/bench's
#               options); they may be the same directory (a self-comparison
#               shows the machine's noise)
#   -r RUNS     rounds (default 5)
#   -s          short sizes (see below): about a third of the time
#   -b LIST     only these benchmarks, comma-separated (default: all six)
#
# Each round runs every benchmark once per build, the two runs of one
# benchmark back to back: before then after in odd rounds, after then before
# in even ones, so a drift of the machine (this host switches between a fast
# and a slow mode) favours neither side.  Nothing is built; the programs
# come from each build's meson-info/intro-benchmarks.json.
#
# Sizes, default (-s):
#   render              100 iterations per case, 100,000 coroutines
#                       (20 iterations, 100,000 coroutines)
#   json_snapshot       1,000,000 coroutines (100,000)
#   serve_scrape        100,000 coroutines, 2,000 scrapes (100,000, 200)
#   harvest_throughput  1 s per case (0.3 s)
#   probe_record        its fixed sizes (no arguments) in both modes
#   preload_cost        each program bare, interposed (LD_PRELOAD) and traced
#                       (corotop -b -- PROGRAM) as bench/preload_cost.sh runs
#                       it: fcontext_switch 1,000,000 switches x 11 batches
#                       (200,000 x 5), fiber_pingpong 200,000 messages x 11
#                       (50,000 x 5), fiber_spawn 20,000 fibers x 11
#                       (5,000 x 5), free_cost its fixed sizes in both modes
# On the 2-vCPU host of docs/PERFORMANCE.md, quiet, a round should take
# about 3.5 min (short: about 1.5 min), so 5 rounds about 17 min (short:
# about 7) -- estimated from short runs on a loaded machine, where one short
# round took 7.5 min.  probe_record (~8 s a run) and free_cost (~10 s for
# its three ways) have fixed sizes and are most of a short round.  The
# time of the first round and an estimate of the rest go to stderr.
#
# Output: the machine, the two builds (source directory, commit, "+N
# modified" when the tree differs from it), the machine's load before
# starting; one line per run (round, side, benchmark, seconds, exit status,
# the machine's busy % just before it, and the others_cores the program
# itself saw, where it prints one); then per benchmark a table:
#   metric   the headline number of one case, and its unit
#   before, after   median over the runs, then [min-max] and the spread
#            (max-min)/median of that side: a spread wider than 5% means
#            the 5% verdict is within the noise
#   after/before    ratio of the medians
#   verdict  "ok" when the after side is at most 5% worse (higher for times,
#            lower for rates), "MISS" otherwise; "n/a" when a side has no
#            number (the program failed: its run line says so)
# Metrics marked (control) time code that is not corotop's (a clock read,
# a syscall, a bare context switch without the preload): a control that
# misses shows the machine's drift, not the change.  A summary counts both
# kinds.  The script reports and does not judge: it exits 0 once it has
# printed, 2 on a usage error.  Every program's raw output is kept in the
# directory named at the end.
set -euo pipefail

usage() {
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die_usage() {
	echo "bench/compare.sh: $*" >&2
	exit 2
}

runs=5
short=false
only=
pos=()
while [ $# -gt 0 ]; do
	case $1 in
	-r)
		[ $# -ge 2 ] || usage
		runs=$2
		shift 2
		;;
	-r*)
		runs=${1#-r}
		shift
		;;
	-s)
		short=true
		shift
		;;
	-b)
		[ $# -ge 2 ] || usage
		only=$2
		shift 2
		;;
	-h | --help) usage ;;
	--)
		shift
		pos+=("$@")
		break
		;;
	-*) usage ;;
	*)
		pos+=("$1")
		shift
		;;
	esac
done
[ ${#pos[@]} -eq 2 ] || usage
[[ $runs =~ ^[1-9][0-9]*$ ]] ||
	die_usage "-r wants a positive count, got '$runs'"
command -v python3 >/dev/null 2>&1 ||
	die_usage "python3 is needed to read the builds' meson-info"

# The environment the programs inherit: no probe or preload settings (the
# untraced cases need a detached probe; scripts/bench does the same).
while read -r v; do
	case $v in
	CTP_* | COROTOP_* | LD_PRELOAD) unset "$v" ;;
	esac
done < <(compgen -e)

BENCHES=(render json_snapshot serve_scrape harvest_throughput probe_record
	preload_cost)
if [ -n "$only" ]; then
	picked=()
	IFS=, read -ra want <<<"$only"
	for w in "${want[@]}"; do
		[[ " ${BENCHES[*]} " == *" $w "* ]] ||
			die_usage "-b: no benchmark '$w' (one of: ${BENCHES[*]})"
		picked+=("$w")
	done
	BENCHES=("${picked[@]}")
fi
# Programs preload_cost.sh runs, by file name: their arguments here.
if $short; then
	declare -A ARGS=([render]="20 100000" [json_snapshot]=100000
		[serve_scrape]="100000 200" [harvest_throughput]=0.3
		[probe_record]="" [fcontext_switch]="200000 5"
		[fiber_pingpong]="50000 5" [fiber_spawn]="5000 5" [free_cost]="")
else
	declare -A ARGS=([render]="100 100000" [json_snapshot]=1000000
		[serve_scrape]="100000 2000" [harvest_throughput]=1
		[probe_record]="" [fcontext_switch]="1000000 11"
		[fiber_pingpong]="200000 11" [fiber_spawn]="20000 11"
		[free_cost]="")
fi
# Seconds before a hung run is killed (generous: a loaded machine is slow).
declare -A LIMIT=([render]=900 [json_snapshot]=900 [serve_scrape]=600
	[harvest_throughput]=300 [probe_record]=300 [preload]=300)

# side_info SIDE DIR: reads DIR's meson-info into SRC[SIDE], BTYPE[SIDE],
# and per benchmark CMD[SIDE:NAME] (tab-separated absolute command) and
# LDP[SIDE:NAME] (the LD_LIBRARY_PATH meson benchmark would set).
declare -A SRC BTYPE CMD LDP
side_info() {
	local side=$1 dir=$2 key val rest
	[ -d "$dir" ] || die_usage "$side build '$dir' is not a directory"
	[ -f "$dir/meson-info/intro-benchmarks.json" ] ||
		die_usage "$side build '$dir' has no meson-info/intro-benchmarks.json (not a configured meson build?)"
	while IFS=$'\t' read -r key val rest; do
		case $key in
		source) SRC[$side]=$val ;;
		buildtype) BTYPE[$side]=$val ;;
		bench)
			LDP[$side:$val]=${rest%%$'\t'*}
			CMD[$side:$val]=${rest#*$'\t'}
			;;
		esac
	done < <(python3 - "$dir" <<'EOF'
import json, os, sys
d = os.path.abspath(sys.argv[1])
info = os.path.join(d, 'meson-info')
def load(name):
    try:
        with open(os.path.join(info, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
mi = load('meson-info.json') or {}
print('source\t' + mi.get('directories', {}).get('source', ''))
bt = [o['value'] for o in load('intro-buildoptions.json') or []
      if o.get('name') == 'buildtype']
print('buildtype\t' + (str(bt[0]) if bt else 'unknown'))
for b in load('intro-benchmarks.json') or []:
    cmd = [c if os.path.isabs(c) else os.path.join(d, c) for c in b['cmd']]
    ldp = (b.get('env') or {}).get('LD_LIBRARY_PATH', '')
    print('\t'.join(['bench', b['name'], ldp] + cmd))
EOF
	)
	for b in "${BENCHES[@]}"; do
		[ -n "${CMD[$side:$b]:-}" ] ||
			die_usage "$side build '$dir' has no benchmark '$b' (configure it with -Dbenchmarks=true; preload_cost needs Boost.Context)"
	done
}
before=$(cd "${pos[0]}" 2>/dev/null && pwd) ||
	die_usage "before build '${pos[0]}' is not a directory"
after=$(cd "${pos[1]}" 2>/dev/null && pwd) ||
	die_usage "after build '${pos[1]}' is not a directory"
side_info before "$before"
side_info after "$after"
declare -A DIR=([before]=$before [after]=$after)

# Busy percentage of the whole machine over $1 seconds, from /proc/stat
# (scripts/bench's busy_pct).
busy_pct() {
	local s0 s1 busy total
	read -r -a s0 < <(head -1 /proc/stat)
	sleep "$1"
	read -r -a s1 < <(head -1 /proc/stat)
	busy=$(((s1[1] + s1[2] + s1[3] + s1[6] + s1[7] + s1[8]) - (s0[1] + s0[2] + s0[3] + s0[6] + s0[7] + s0[8])))
	total=$((busy + (s1[4] + s1[5]) - (s0[4] + s0[5])))
	[ "$total" -gt 0 ] || total=1
	echo $((100 * busy / total))
}

# commit_of SRC: "abc1234 subject" and "+N modified" for a dirty tree.
commit_of() {
	local src=$1 c n
	c=$(git -C "$src" log -1 --format='%h %<(60,trunc)%s' 2>/dev/null) || {
		echo "unknown (no git repository at $src)"
		return
	}
	n=$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
	[ "$n" -eq 0 ] || c="$c (+$n modified)"
	echo "${c%"${c##*[! ]}"}"
}

work=$(mktemp -d /tmp/corotop-compare.XXXXXX)
values=$work/values.tsv
: >"$values"

echo "# corotop bench/compare.sh: before against after, issue 29's benchmarks"
echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "kernel: $(uname -r)"
echo "nproc: $(nproc)"
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
for side in before after; do
	echo "$side: ${DIR[$side]} (buildtype ${BTYPE[$side]}), source ${SRC[$side]:-unknown}"
	echo "$side commit: $(commit_of "${SRC[$side]:-/nonexistent}")"
	[ "${BTYPE[$side]}" = release ] ||
		echo "WARNING: $side build is '${BTYPE[$side]}', not release: its numbers mean little"
done
[ "$before" != "$after" ] || echo "note: the same build on both sides (self-comparison: the ratios show the noise)"
if $short; then mode=short; else mode=default; fi
echo "mode: $mode, $runs rounds, interleaved (odd rounds before first, even rounds after first)"
for p in render json_snapshot serve_scrape harvest_throughput probe_record; do
	echo "sizes: $p ${ARGS[$p]:-(no arguments)}"
done
echo "sizes: preload_cost fcontext_switch ${ARGS[fcontext_switch]}, fiber_pingpong ${ARGS[fiber_pingpong]}, fiber_spawn ${ARGS[fiber_spawn]}, free_cost (no arguments); bare, interposed, traced"
echo "load before starting: busy $(busy_pct 2)% over 2 s, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw output: $work"
echo
echo "## runs"
printf '%-5s %-6s %-18s %7s %4s %5s %7s\n' round side benchmark seconds rc busy% others

# run_bench SIDE BENCH OUT: one run of BENCH from SIDE's build into OUT;
# returns the first non-zero exit status.
run_bench() {
	local side=$1 b=$2 out=$3 rc=0 r prog name lib corotop way
	local -a cmd progargs
	IFS=$'\t' read -r -a cmd <<<"${CMD[$side:$b]}"
	local -a envs=(env LD_LIBRARY_PATH="${LDP[$side:$b]}")
	[ -n "${LDP[$side:$b]}" ] || envs=(env -u LD_LIBRARY_PATH)
	if [ "$b" != preload_cost ]; then
		read -r -a progargs <<<"${ARGS[$b]}"
		"${envs[@]}" timeout -k 10 "${LIMIT[$b]}" "${cmd[0]}" \
			"${progargs[@]}" >"$out" 2>&1 || rc=$?
		return "$rc"
	fi
	# bench/preload_cost.sh COROTOP PRELOAD_LIB PROGRAM...: its three
	# ways, one program at a time, each way's output after a marker line
	# (free_cost does not print which way it ran).
	corotop=${cmd[1]} lib=${cmd[2]}
	: >"$out"
	for prog in "${cmd[@]:3}"; do
		name=${prog##*/}
		read -r -a progargs <<<"${ARGS[$name]:-}"
		for way in bare interposed traced; do
			echo "#compare way=$way program=$name" >>"$out"
			r=0
			case $way in
			bare)
				"${envs[@]}" timeout -k 10 "${LIMIT[preload]}" \
					"$prog" "${progargs[@]}" >>"$out" 2>&1 || r=$?
				;;
			interposed)
				"${envs[@]}" LD_PRELOAD="$lib" timeout -k 10 \
					"${LIMIT[preload]}" "$prog" "${progargs[@]}" \
					>>"$out" 2>&1 || r=$?
				;;
			traced)
				# corotop's JSON snapshots (lines starting with '{')
				# are dropped, as preload_cost.sh drops them.
				"${envs[@]}" COROTOP_PRELOAD="$lib" timeout -k 10 \
					"${LIMIT[preload]}" "$corotop" -b -f json -d 100 \
					-- "$prog" "${progargs[@]}" >"$out.traced" 2>&1 || r=$?
				grep -v '^{' "$out.traced" >>"$out" || true
				rm -f "$out.traced"
				;;
			esac
			if [ "$r" -ne 0 ]; then
				echo "#compare exit=$r" >>"$out"
				[ "$rc" -ne 0 ] || rc=$r
			fi
		done
	done
	return "$rc"
}

# parse BENCH FILE: "metric<TAB>low|high<TAB>value" for every headline number
# FILE holds.  low: a time, lower is better; high: a rate.
parse() {
	awk -v bench="$1" '
	function kv(key,   i) {
		for (i = 1; i <= NF; i++)
			if (index($i, key "=") == 1)
				return substr($i, length(key) + 2)
		return ""
	}
	function put(metric, dir, v) {
		if (v != "" && v ~ /^[-+0-9.eE]+$/)
			printf "%s\t%s\t%s\n", metric, dir, v
	}
	bench == "render" && $1 == "render" && kv("case") != "" {
		put(kv("case") " total_p50_ms", "low", kv("total_p50_ms"))
	}
	bench == "json_snapshot" && $1 == "json_snapshot" {
		put(kv("case") " " kv("coroutines") " total_ms", "low",
		    kv("total_ms"))
	}
	bench == "serve_scrape" && $1 == "serve_scrape" {
		if (kv("lock_ms_min") != "") put("lock_ms_p50", "low", kv("p50"))
		put("engine_snapshot_wall_ms", "low",
		    kv("engine_snapshot_wall_ms"))
		put("refresh_wall_ms", "low", kv("refresh_wall_ms"))
		put("refresh_cpu_ms", "low", kv("refresh_cpu_ms"))
		put("scrape_wall_ms_p50", "low", kv("scrape_wall_ms_p50"))
		put("scrape_cpu_ms", "low", kv("scrape_cpu_ms"))
	}
	bench == "harvest_throughput" && $1 == "harvest_throughput" {
		put($2 " " kv("writers") "w " kv("stations") "st harvested_per_s",
		    "high", kv("harvested_per_s"))
	}
	bench == "probe_record" && $1 == "probe_record" &&
	    kv("batch_median_ns") != "" {
		ctl = $2 ~ /^(clock|clock-coarse|gettid|fence|upstream)$/
		put($2 " batch_median_ns" (ctl ? " (control)" : ""), "low",
		    kv("batch_median_ns"))
	}
	bench == "preload_cost" && $1 == "#compare" && $2 ~ /^way=/ {
		way = substr($2, 5)
		ctl = way == "bare" ? " (control)" : ""
	}
	bench == "preload_cost" && $1 == "fcontext_switch" {
		put("fcontext_switch " way " ns_per_switch" ctl, "low",
		    kv("ns_per_switch_median"))
	}
	bench == "preload_cost" && $1 == "fiber_pingpong" {
		put("fiber_pingpong " way " ns_per_message" ctl, "low",
		    kv("ns_per_message_median"))
	}
	bench == "preload_cost" && $1 == "fiber_spawn" {
		put("fiber_spawn " way " ns_per_fiber" ctl, "low",
		    kv("ns_per_fiber_median"))
	}
	bench == "preload_cost" && $1 == "free_cost" {
		put("free_cost " way " " $2 " ns_per_pair" ctl, "low",
		    kv("ns_per_pair"))
	}' "$2"
}

# others FILE: the median of the others_cores values FILE holds, or "-".
others() {
	grep -o 'others_cores=[0-9.]*' "$1" 2>/dev/null | cut -d= -f2 | sort -n |
		awk '{ v[NR] = $1 } END {
			if (!NR) { print "-"; exit }
			print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

start=$(date +%s)
for round in $(seq 1 "$runs"); do
	if [ $((round % 2)) -eq 1 ]; then order=(before after); else order=(after before); fi
	for b in "${BENCHES[@]}"; do
		for side in "${order[@]}"; do
			echo "compare.sh: round $round/$runs $b $side" >&2
			out=$work/r$round-$b-$side.txt
			busy=$(busy_pct 0.5)
			t0=$(date +%s%N)
			rc=0
			run_bench "$side" "$b" "$out" || rc=$?
			t1=$(date +%s%N)
			printf '%-5s %-6s %-18s %7.1f %4s %5s %7s\n' "$round" "$side" \
				"$b" "$(((t1 - t0) / 1000000))e-3" "$rc" "$busy" \
				"$(others "$out")"
			if [ "$rc" -ne 0 ]; then
				grep -v '^#compare' "$out" | tail -2 | sed 's/^/      | /' || true
			fi
			parse "$b" "$out" | sed "s/^/$b\t$side\t/" >>"$values" || true
		done
	done
	if [ "$round" -eq 1 ] && [ "$runs" -gt 1 ]; then
		el=$(($(date +%s) - start))
		echo "compare.sh: round 1 took $el s; about $((el * (runs - 1))) s to go" >&2
	fi
done
elapsed=$(($(date +%s) - start))

# The tables: values.tsv is bench, side, metric, low|high, value.
echo
for b in "${BENCHES[@]}"; do
	if [ "$b" = preload_cost ]; then
		what="bare / interposed / traced per program"
	else
		what="$b${ARGS[$b]:+ ${ARGS[$b]}}"
	fi
	echo "## $b ($what)"
	awk -F'\t' -v bench="$b" -v runs="$runs" '
	function med(s, n,   a, i, j, t, k) {
		k = split(s, a, " ")
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		lo = a[1]; hi = a[k]
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	function fmt(v) {
		v = v + 0
		return v >= 1e6 ? sprintf("%.3g", v) : v >= 1000 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : v >= 1 ? sprintf("%.2f", v) : sprintf("%.3f", v)
	}
	function side(s, n,   m, sp) {
		if (n == 0)
			return sprintf("%-32s", "-")
		m = med(s)
		sp = m != 0 ? 100 * (hi - lo) / m : 0
		return sprintf("%-32s", sprintf("%s [%s-%s] %.0f%%", fmt(m), fmt(lo), fmt(hi), sp))
	}
	$1 == bench {
		key = $3
		if (!(key in dir)) { order[++nk] = key; dir[key] = $4 }
		vals[key, $2] = vals[key, $2] " " $5
		cnt[key, $2]++
	}
	END {
		if (!nk) { print "(no numbers: see the runs above and the raw output)"; exit }
		printf "%-48s %-32s %-32s %-12s %s\n", "metric (" (dir[order[1]] == "high" ? "higher" : "lower") " is better)", "before median [min-max] spread", "after median [min-max] spread", "after/before", "verdict"
		for (i = 1; i <= nk; i++) {
			k = order[i]; nb = cnt[k, "before"] + 0; na = cnt[k, "after"] + 0
			sb = side(vals[k, "before"], nb); mb = nb ? med(vals[k, "before"]) : 0
			sa = side(vals[k, "after"], na); ma = na ? med(vals[k, "after"]) : 0
			if (nb && na && mb != 0) {
				r = ma / mb
				ok = dir[k] == "high" ? r >= 0.95 : r <= 1.05
				ratio = sprintf("%.3f", r)
				verdict = ok ? "ok" : "MISS"
			} else {
				ratio = "-"; verdict = "n/a"
			}
			if (nb != runs || na != runs)
				verdict = verdict " (" nb "+" na " of " runs "+" runs " runs)"
			printf "%-48s %s %s %-12s %s\n", k, sb, sa, ratio, verdict
		}
	}' "$values"
	echo
done

echo "## summary"
awk -F'\t' '
	{ key = $1 SUBSEP $3; if (!(key in dir)) { dir[key] = $4; keys[++n] = key }
	  v[key, $2] = v[key, $2] " " $5; c[key, $2]++ }
	function med(s,   a, i, j, t, k) {
		k = split(s, a, " ")
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= n; i++) {
			k = keys[i]; split(k, p, SUBSEP)
			kind = p[2] ~ /\(control\)/ ? "control" : "headline"
			if (!c[k, "before"] || !c[k, "after"] || med(v[k, "before"]) == 0) { na[kind]++; continue }
			r = med(v[k, "after"]) / med(v[k, "before"])
			if (dir[k] == "high" ? r >= 0.95 : r <= 1.05) ok[kind]++
			else { miss[kind]++; list[kind] = list[kind] "\n  " p[1] " " p[2] sprintf(" %.3f", r) }
		}
		for (j = 1; j <= 2; j++) {
			kind = j == 1 ? "headline" : "control"
			printf "%s metrics: %d ok, %d MISS, %d n/a%s\n", kind, ok[kind], miss[kind], na[kind], list[kind]
		}
	}' "$values"
echo "done in $elapsed s; raw output in $work"
exit 0
