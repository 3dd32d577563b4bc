#!/usr/bin/env bash
# consumers.sh: corotop's exports held to their real consumers' rules.
#
#   consumers.sh chrome  COROTOP TARGET...   record TARGET, convert it to
#       chrome and jsonl: tests/check/chrome_check.py passes the Chrome
#       trace (the Trace Event Format's required fields, flows bound to
#       slices, every track named), both summaries give the same counts,
#       and those counts are the Chrome file's own (coroutines = tracks
#       with an interval, migrations = flows).
#   consumers.sh schema  COROTOP CACHE CT_TARGET   --speedscope of the
#       calltrace target, validated against the file-format-schema.json
#       of the speedscope npm package (pinned below; fetched with
#       `npm pack` into CACHE once).
#   consumers.sh render  COROTOP CACHE CT_TARGET   the same file opened by
#       the real speedscope app of that package, served on 127.0.0.1, in
#       headless Chromium: the page's title becomes "NAME - speedscope"
#       only once speedscope has imported the profile and drawn it (a
#       file it can not import leaves the title alone and opens an alert,
#       which keeps headless Chromium waiting: no negative run here).
#   consumers.sh convert-schema  COROTOP CACHE DEMO   the same checks of
#   consumers.sh convert-render  COROTOP CACHE DEMO   `corotop convert
#       --to speedscope` of a recording of the demo made with
#       --parked-stacks; first, that file is the profile `--to folded`
#       gives of the same recording: the same stacks (frame names root
#       first), the same weights, the same total and frame names.
#
# Exit 77 (meson: skipped) with the reason when npm, the registry,
# python3-jsonschema or chromium is not there, or when chromium can not
# render even a page with only a title (it can not run here).
set -euo pipefail

SPEEDSCOPE_VERSION=1.25.0
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../check
mode=$1
corotop=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/corotop-consumers.XXXXXX")
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

skip() {
	echo "consumers.sh $mode: SKIP: $*"
	exit 77
}

fail() {
	echo "consumers.sh $mode: FAIL: $*" >&2
	exit 1
}

# The speedscope package's dist/release directory, in $1 (the cache).
speedscope_release() {
	local cache=$1 dir=$1/speedscope-$SPEEDSCOPE_VERSION
	if [ ! -f "$dir/package/dist/release/file-format-schema.json" ]; then
		command -v npm >/dev/null ||
			skip "npm is not installed (apt-get install npm)"
		mkdir -p "$dir"
		if ! (cd "$dir" && timeout 120 npm pack --silent \
			--fetch-timeout=30000 --fetch-retries=1 \
			"speedscope@$SPEEDSCOPE_VERSION" >/dev/null 2>"$tmp/npm.err"); then
			sed 's/^/  npm: /' "$tmp/npm.err" | tail -5
			skip "npm pack speedscope@$SPEEDSCOPE_VERSION failed (no registry?)"
		fi
		tar -xzf "$dir/speedscope-$SPEEDSCOPE_VERSION.tgz" -C "$dir"
	fi
	echo "$dir/package/dist/release"
}

# A speedscope file of the calltrace target's hot stacks, in $tmp.  No
# -n: the target's exit ends the run, after its last stacks were
# harvested, however slowly the machine got there.
speedscope_file() {
	"$corotop" -b -d 5 --speedscope "$tmp/profile.json" -- \
		"$1" hot 1 300 >/dev/null 2>"$tmp/record.err" ||
		fail "corotop --speedscope: $(tail -3 "$tmp/record.err")"
	[ -s "$tmp/profile.json" ] || fail "no speedscope file written"
}

# A speedscope file converted from a recording of the demo ($1) made with
# --parked-stacks, in $tmp/profile.json, checked against --to folded of
# the same recording.  The demo runs until it is ended here (SIGTERM; its
# -d 120 only ends it if this failed): once four snapshots came and one
# shows a parked stack (walked while the demo lives, so the recording
# holds some), waited for with a 60 s deadline, never a fixed sleep.
converted_file() {
	python3 - "$corotop" "$1" "$tmp/rec.heph" "$tmp/record.err" <<'PY' ||
import json, os, signal, subprocess, sys, time
corotop, demo, rec, err = sys.argv[1:5]
p = subprocess.Popen([corotop, "-b", "-f", "json", "-d", "5", "--record",
                      rec, "--parked-stacks", "--", demo, "-d", "120",
                      "-c", "300"], stdout=subprocess.PIPE,
                     stderr=open(err, "w"), text=True)
end = time.monotonic() + 60
snaps, ready, pid = 0, False, 0
for line in p.stdout:
    v = json.loads(line)
    pid = v["target"]["pid"] or pid
    snaps += 1
    ready = snaps >= 4 and any("parked_stack" in c for c in v["coroutines"])
    if ready or time.monotonic() > end:
        break
if pid:
    os.kill(pid, signal.SIGTERM)  # the demo exits 0, corotop after it
p.stdout.read()
code = p.wait(timeout=60)
if not ready or code:
    sys.exit("consumers.sh: FAIL: recording the demo: %d snapshots, parked "
             "stack: %s, exit %d" % (snaps, ready, code))
PY
		fail "corotop --record: $(tail -3 "$tmp/record.err")"
	"$corotop" convert --to folded "$tmp/rec.heph" -o "$tmp/parked.folded" \
		2>"$tmp/folded.err" || fail "convert: $(cat "$tmp/folded.err")"
	"$corotop" convert --to speedscope "$tmp/rec.heph" \
		-o "$tmp/profile.json" 2>"$tmp/speedscope.err" ||
		fail "convert: $(cat "$tmp/speedscope.err")"
	cat "$tmp/folded.err" "$tmp/speedscope.err"
	python3 - "$tmp/parked.folded" "$tmp/profile.json" <<'PY' || exit 1
import json, sys
folded = {}
for line in open(sys.argv[1], encoding="utf-8"):
    stack, w = line.rstrip("\n").rsplit(" ", 1)
    folded[stack] = folded.get(stack, 0) + int(w)
doc = json.load(open(sys.argv[2], encoding="utf-8"))
frames = [f["name"] for f in doc["shared"]["frames"]]
prof = doc["profiles"][0]
got = {}
for s, w in zip(prof["samples"], prof["weights"]):
    stack = ";".join(frames[i] for i in s)
    got[stack] = got.get(stack, 0) + w
words = {f for stack in folded for f in stack.split(";")}
faults = []
if got != folded:
    faults.append("stacks differ: %d in folded, %d in speedscope, %d "
                  "not in both" % (len(folded), len(got),
                                   len(set(folded) ^ set(got))))
if sum(folded.values()) != prof["endValue"] or \
        sum(got.values()) != prof["endValue"]:
    faults.append("totals: folded %d, speedscope weights %d, endValue %d"
                  % (sum(folded.values()), sum(got.values()),
                     prof["endValue"]))
if set(frames) != words:
    faults.append("frame names: %d only in folded, %d only in speedscope"
                  % (len(words - set(frames)), len(set(frames) - words)))
if len(prof["samples"]) != len(folded):
    faults.append("%d samples for %d distinct stacks"
                  % (len(prof["samples"]), len(folded)))
if faults:
    sys.exit("consumers.sh: FAIL: --to speedscope is not --to folded's "
             "profile: " + "; ".join(faults))
print("consumers.sh: --to speedscope is --to folded's profile: %d stacks, "
      "%d frames, %d ns parked" % (len(got), len(frames), prof["endValue"]))
PY
}

# The profile the mode checks, in $tmp/profile.json: the live export's
# (schema, render) or a converted recording's (convert-*).
profile_file() {
	case $mode in
	convert-*) converted_file "$1" ;;
	*) speedscope_file "$1" ;;
	esac
}

case $mode in
chrome)
	"$corotop" -b -n 4 -d 5 --record "$tmp/rec.heph" -- "$@" \
		>/dev/null 2>"$tmp/record.err" ||
		fail "corotop --record: $(tail -3 "$tmp/record.err")"
	"$corotop" convert --to chrome "$tmp/rec.heph" -o "$tmp/chrome.json" \
		2>"$tmp/chrome.err" || fail "convert: $(cat "$tmp/chrome.err")"
	"$corotop" convert --to jsonl "$tmp/rec.heph" -o "$tmp/out.jsonl" \
		2>"$tmp/jsonl.err" || fail "convert: $(cat "$tmp/jsonl.err")"
	python3 "$check/chrome_check.py" "$tmp/chrome.json"
	cat "$tmp/chrome.err" "$tmp/jsonl.err"
	# "corotop convert: N events, ... lost; <what the format wrote>"
	a=$(sed -n 's/^corotop convert: \([^;]*\);.*/\1/p' "$tmp/chrome.err")
	b=$(sed -n 's/^corotop convert: \([^;]*\);.*/\1/p' "$tmp/jsonl.err")
	[ -n "$a" ] || fail "no summary line from convert --to chrome"
	[ "$a" = "$b" ] || fail "summaries differ: chrome '$a', jsonl '$b'"
	python3 - "$tmp/chrome.json" "$a" <<'PY' || exit 1
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
m = re.match(r"(\d+) events, (\d+) coroutines on (\d+) streams, "
             r"(\d+) migrations, (\d+) lost$", sys.argv[2])
events, coros, streams, migr, lost = map(int, m.groups())
x = [e for e in ev if e["ph"] == "X"]
tracks = {e["tid"] for e in x if e["name"] != "lost"}
os_tids = {e["args"]["os_tid"] for e in x if e["name"] != "lost"}
got = (len(x), len(tracks), len(os_tids),
       sum(e["ph"] == "s" for e in ev),
       sum(e["args"].get("count", 1) for e in x if e["name"] == "lost"))
want = (events, coros, streams, migr, lost)
if got != want:
    sys.exit("consumers.sh chrome: FAIL: the file holds %s (events, tracks,"
             " os_tids, flows, lost), the summary says %s" % (got, want))
print("consumers.sh chrome: the summary is the file's own: %s" % (want,))
PY
	;;
schema | convert-schema)
	cache=$1
	python3 -c 'import jsonschema' 2>/dev/null ||
		skip "python3-jsonschema is not installed"
	release=$(speedscope_release "$cache")
	profile_file "$2"
	python3 "$check/speedscope_check.py" \
		"$release/file-format-schema.json" "$tmp/profile.json"
	;;
render | convert-render)
	cache=$1
	browser=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$browser" ] || skip "chromium is not installed"
	release=$(speedscope_release "$cache")
	profile_file "$2"
	mkdir "$tmp/www"
	cp -r "$release/." "$tmp/www/"
	cp "$tmp/profile.json" "$tmp/www/profile.json"
	printf '<!DOCTYPE html><title>corotop probe</title>\n' >"$tmp/www/probe.html"
	# Port 0: the kernel picks a free one, http.server prints it.
	(cd "$tmp/www" && exec python3 -u -m http.server --bind 127.0.0.1 0) \
		>"$tmp/http.log" 2>&1 &
	server=$!
	# Waited for (60 s): a loaded machine may take seconds to start
	# python; a server that died says so at once.
	port=
	for _ in $(seq 600); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$tmp/http.log")
		[ -n "$port" ] && break
		kill -0 "$server" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$port" ] || fail "http.server did not start: $(cat "$tmp/http.log")"
	# The <title> of the page at URL $2 as headless Chromium leaves it,
	# its stderr in $tmp/chromium-$1.err.
	title() {
		timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
			--no-first-run --user-data-dir="$tmp/profile-$1" \
			--virtual-time-budget=15000 --dump-dom "$2" \
			2>"$tmp/chromium-$1.err" | tr -d '\n' |
			sed -n 's/.*<title>\([^<]*\)<\/title>.*/\1/p'
	}
	# A browser that can not start here (no display libraries, no
	# namespaces for it, killed by the timeout) is a skip, not a failure
	# of ours: it must first render a page of the same server that only
	# has a title.  Only then is a wrong title speedscope's verdict.
	got=$(title probe "http://127.0.0.1:$port/probe.html") || true
	[ "$got" = "corotop probe" ] ||
		skip "$browser can not render a page here (title '$got'): $(tail -3 "$tmp/chromium-probe.err")"
	name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profiles"][0]["name"])' \
		"$tmp/profile.json")
	got=$(title profile "http://127.0.0.1:$port/index.html#profileURL=http%3A%2F%2F127.0.0.1%3A$port%2Fprofile.json") || true
	echo "consumers.sh render: speedscope $SPEEDSCOPE_VERSION in $("$browser" --version 2>/dev/null): title '$got'"
	[ "$got" = "$name - speedscope" ] ||
		fail "speedscope did not render our file (title '$got', want '$name - speedscope'); chromium said: $(tail -3 "$tmp/chromium-profile.err")"
	;;
*)
	echo "usage: consumers.sh chrome|schema|render|convert-schema|convert-render COROTOP ..." >&2
	exit 2
	;;
esac
