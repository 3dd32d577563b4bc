#!/usr/bin/env bash
# echo_loss.sh COROTOP ASIO_ECHO: events lost on boost::asio::spawn's echo
# server (tests/targets/asio_echo.cpp, Boost's spawn echo_server shape)
# under load, traced through the preload, and how much of the loss is the
# event loop's root's -- the context that takes part in every switch.
#
# CONNS (default 32) clients each send MSGS (default 3000) lines one at a
# time, reading each echo back; HOGS (default 0) busy loops run meanwhile;
# RUNS (default 3) runs.  One line per run: events harvested and lost, the
# root's transitions and its lost ones.
set -euo pipefail
corotop=$1 echo_bin=$2
runs=${RUNS:-3}
hogs=${HOGS:-0}
conns=${CONNS:-32}
msgs=${MSGS:-3000}
# shellcheck source=bench/hogs.sh
. "$(dirname "$0")/hogs.sh"
hogs_start "$hogs"
echo "echo_loss: $(nproc) CPUs, $hogs hogs, $conns connections x $msgs messages, $runs runs; $(uname -r)"
for ((r = 1; r <= runs; r++)); do
	dir=$(mktemp -d)
	"$corotop" -b -f json -d 36000 --output "$dir/out" -- "$echo_bin" >"$dir/json" 2>"$dir/err" &
	cpid=$!
	port=
	for ((k = 0; k < 500; k++)); do
		[ -z "$port" ] || break
		port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$dir/out" 2>/dev/null || true)
		[ -n "$port" ] || sleep 0.02
	done
	python3 - "$port" "$conns" "$msgs" <<'PY'
import asyncio, sys, time
port, conns, msgs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
async def client(k):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    for i in range(msgs):
        line = b"hello %d %d\n" % (k, i)
        w.write(line)
        got = await r.readexactly(len(line))
        assert got == line
    w.close()
async def main():
    t = time.monotonic()
    await asyncio.gather(*(client(k) for k in range(conns)))
    print("  load: %d round trips in %.2f s" % (conns * msgs, time.monotonic() - t))
asyncio.run(main())
PY
	sleep 1
	pkill -TERM -f "^$echo_bin\$" || true
	wait "$cpid" || true
	python3 - "$dir/json" <<'PY'
import json, sys
last = None
for l in open(sys.argv[1]):
    if l.startswith("{"):
        last = l
o = json.loads(last)
ev = o["events"]
root = [c for c in o["coroutines"] if c["name"] == "root"]
rs = sum(c["switches"] for c in root)
rl = sum(c["lost"] for c in root)
tot = ev["harvested"] + ev["lost"]
print("  harvested %d lost %d (%.1f%%); root: %d transitions, %d lost (%.1f%% of its own, %.1f%% of all lost)" % (
    ev["harvested"], ev["lost"], 100.0 * ev["lost"] / max(tot, 1), rs + rl, rl,
    100.0 * rl / max(rs + rl, 1), 100.0 * rl / max(ev["lost"], 1)))
PY
	rm -rf "$dir"
done
