#!/bin/bash
# qemu_img.sh COROTOP: qemu-img bench (2M reads, 32 in parallel) under
# corotop; sums a snapshot from the middle of the run and the one at the
# exit (docs/TRACING.md, "Tried on real programs").
corotop=$1
d=$(mktemp -d)
qemu-img create -f qcow2 $d/q.qcow2 64M >/dev/null
$corotop -b -f json -d 1 --output $d/out -- qemu-img bench -c 2000000 -d 32 -t none -n $d/q.qcow2 > $d/json 2>$d/err
tail -1 $d/out
python3 - $d/json <<'PY'
import json, sys, collections
snaps=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
live=[s for s in snaps if not any(c.get("at_exit") for c in s["coroutines"])]
for tag, o in (("mid-run", live[len(live)//2] if live else None), ("at exit", snaps[-1])):
    if not o: continue
    co=o["coroutines"]
    st=collections.Counter(c["state"] for c in co)
    tr=sum(c["switches"]+c["lost"] for c in co)
    wh=collections.Counter(c["where"].split(" (")[0] for c in co if c["state"]!="dead")
    print("%s: %d coroutines %s; transitions %d; events harvested %d lost %d; unseen %s" % (tag, len(co), dict(st), tr, o["events"]["harvested"], o["events"]["lost"], o["contexts"].get("switches_unseen","-")))
    print("   WHERE:", wh.most_common(3))
PY
rm -rf $d
