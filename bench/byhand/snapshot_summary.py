#!/usr/bin/env python3
# snapshot_summary.py JSONL: the last snapshot taken while the target ran
# (batch JSON lines from corotop -b -f json), summed: states, warnings,
# hex WHERE, snapshots with two coroutines running on one thread, unseen
# switches; then each live coroutine (docs/TRACING.md, issue 27).
import json, sys, collections
snaps=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
live=[s for s in snaps if not any(c.get("at_exit") for c in s["coroutines"])]
o=live[-1] if live else snaps[-1]
co=o["coroutines"]
st=collections.Counter(c["state"] for c in co)
warn=collections.Counter(w for c in co for w in c.get("warn",[]))
hexw=sum(1 for c in co if c["where"].startswith("0x"))
where=collections.Counter(c["where"].split(" (")[0] for c in co if c["state"]!="dead")
names=collections.Counter(c["name"] for c in co if c["state"]!="dead")
doubled=0
for s in snaps:
    run=collections.Counter(c["tid"] for c in s["coroutines"] if c["state"]=="running")
    doubled+=sum(1 for v in run.values() if v>1)
print("%d snapshots; last: %d coroutines %s; warn %s; hex WHERE %d; snapshots with two running on a thread: %d; unseen %s" % (len(snaps), len(co), dict(st), dict(warn), hexw, doubled, o["contexts"].get("switches_unseen","-")))
print("  live WHERE:", where.most_common(4))
print("  live NAME:", names.most_common(4))
for c in o["coroutines"]:
    if c["state"]!="dead": print("   ", c["id"], c["state"], c["name"], c["where"], c.get("warn"), "in_state %.1fs" % (c["in_state_ns"]/1e9), "kernel", c.get("kernel"))
