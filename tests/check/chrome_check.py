#!/usr/bin/env python3
"""chrome_check: a Chrome trace held to the Trace Event Format's rules.

    chrome_check.py FILE        check FILE; prints a count, exit 0 or 1
    chrome_check.py --self-test  feed the checker one fault of each kind

The rules, from the Trace Event Format document (the JSON Object Format
that chrome://tracing and Perfetto's JSON importer read), plus what
corotop's converter promises on top of them (docs/WIRE.md, "Converters"):

  - the file is an object with a "traceEvents" array (displayTimeUnit, if
    there, "ms" or "ns");
  - every event is an object with "ph" (a string, one of the phases
    below), "name" (a string), "pid" and "tid" (integers, not booleans);
  - X (complete): "ts" and "dur" numbers, dur >= 0;
  - s / t / f (flow): "ts" a number, "id" an integer or string, "cat" a
    string; "bp", if there, is "e"; every id has one "s" and one "f", and
    each binds to a slice -- the X on its own track whose [ts, ts + dur]
    holds its ts (f with bp "e": the enclosing slice);
  - M (metadata): "name" one of process_name, process_labels,
    process_sort_index, thread_name, thread_sort_index; "args" an object
    with "name" (a string) for the names, "sort_index" (an integer) for
    the sort indexes;
  - "args", when there, an object;
  - ours: X events of one track (pid, tid) start in order in the file;
    every pid used has a process_name and every (pid, tid) a thread_name,
    each at most once.
"""
import json
import sys

PHASES = {"X", "M", "s", "t", "f"}
META = {"process_name": "name", "process_labels": "labels",
        "process_sort_index": "sort_index", "thread_name": "name",
        "thread_sort_index": "sort_index"}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool))


def check(doc):
    """The list of faults of doc (a parsed trace); empty when it is fine."""
    faults = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"),
                                                   list):
        return ["not an object with a traceEvents array"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        faults.append("displayTimeUnit is %r" % doc["displayTimeUnit"])
    names = {}        # (what, pid, tid) -> count
    used = set()      # (pid, tid) of non-M events
    slices = {}       # (pid, tid) -> [(ts, dur)]
    last_ts = {}      # (pid, tid) -> the last X's ts
    flows = {}        # id -> [(ph, pid, tid, ts, bp)]
    for i, e in enumerate(doc["traceEvents"]):
        def bad(what):
            faults.append("event %d (%s): %s" % (i, json.dumps(e)[:120],
                                                 what))
        if not isinstance(e, dict):
            bad("not an object")
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            bad("ph %r is not one of %s" % (ph, sorted(PHASES)))
            continue
        if not isinstance(e.get("name"), str):
            bad("no string name")
        if not is_int(e.get("pid")) or not is_int(e.get("tid")):
            bad("pid and tid must be integers")
            continue
        if "args" in e and not isinstance(e["args"], dict):
            bad("args is not an object")
            continue
        track = (e["pid"], e["tid"])
        if ph == "M":
            key = META.get(e.get("name"))
            if key is None:
                bad("unknown metadata name")
                continue
            arg = e.get("args", {}).get(key)
            if key == "name" and not isinstance(arg, str):
                bad("args.name is not a string")
            if key == "sort_index" and not is_int(arg):
                bad("args.sort_index is not an integer")
            what = e["name"]
            k = (what, e["pid"], e["tid"] if what.startswith("thread")
                 else None)
            names[k] = names.get(k, 0) + 1
            continue
        if not is_num(e.get("ts")):
            bad("ts is not a number")
            continue
        used.add(track)
        if ph == "X":
            if not is_num(e.get("dur")) or e["dur"] < 0:
                bad("dur is not a number >= 0")
                continue
            if track in last_ts and e["ts"] < last_ts[track]:
                bad("starts before the previous X of its track")
            last_ts[track] = e["ts"]
            slices.setdefault(track, []).append((e["ts"], e["dur"]))
            continue
        fid = e.get("id")
        if not (is_int(fid) or isinstance(fid, str)):
            bad("a flow event without an integer or string id")
            continue
        if not isinstance(e.get("cat"), str):
            bad("a flow event without a string cat")
        if "bp" in e and e["bp"] != "e":
            bad("bp is %r, not \"e\"" % e["bp"])
        flows.setdefault(fid, []).append((ph, track, e["ts"]))
    for fid, ends in flows.items():
        phs = sorted(p for p, _, _ in ends if p != "t")
        if phs != ["f", "s"]:
            faults.append("flow %r has phases %s, not one s and one f"
                          % (fid, phs))
        for p, track, ts in ends:
            if not any(s <= ts <= s + d for s, d in slices.get(track, [])):
                faults.append("flow %r: its %s at %s binds to no slice of "
                              "track %s" % (fid, p, ts, track))
    for k, n in names.items():
        if n > 1:
            faults.append("%s of %s given %d times" % (k[0], k[1:], n))
    for pid, tid in sorted(used):
        if ("process_name", pid, None) not in names:
            faults.append("pid %d has no process_name" % pid)
        if ("thread_name", pid, tid) not in names:
            faults.append("pid %d tid %d has no thread_name" % (pid, tid))
    return faults


def self_test():
    good = {"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
         "args": {"name": "t"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 2,
         "args": {"sort_index": 0}},
        {"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 1.5, "dur": 1,
         "args": {}},
        {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 3, "dur": 0},
        {"ph": "s", "name": "m", "cat": "c", "id": 7, "pid": 1, "tid": 2,
         "ts": 1.5},
        {"ph": "f", "name": "m", "cat": "c", "id": 7, "bp": "e", "pid": 1,
         "tid": 2, "ts": 3}]}
    assert check(good) == [], check(good)
    faults = {
        "no ph": lambda ev: ev[3].pop("ph"),
        "bad ph": lambda ev: ev[3].update(ph="Q"),
        "no name": lambda ev: ev[3].pop("name"),
        "string pid": lambda ev: ev[3].update(pid="1"),
        "bool tid": lambda ev: ev[3].update(tid=True),
        "no dur": lambda ev: ev[3].pop("dur"),
        "negative dur": lambda ev: ev[3].update(dur=-1),
        "string ts": lambda ev: ev[4].update(ts="3"),
        "args array": lambda ev: ev[3].update(args=[]),
        "X out of order": lambda ev: ev[4].update(ts=1),
        "flow without id": lambda ev: ev[5].pop("id"),
        "flow without cat": lambda ev: ev[5].pop("cat"),
        "bad bp": lambda ev: ev[6].update(bp="x"),
        "flow half": lambda ev: ev.pop(6),
        "flow unbound": lambda ev: ev[6].update(ts=9),
        "M unnamed": lambda ev: ev[1]["args"].pop("name"),
        "M bad sort": lambda ev: ev[2]["args"].update(sort_index="0"),
        "M unknown": lambda ev: ev[2].update(name="thread_colour"),
        "thread unnamed": lambda ev: ev.pop(1),
        "process unnamed": lambda ev: ev.pop(0),
        "thread named twice": lambda ev: ev.append(dict(ev[1])),
    }
    for what, spoil in faults.items():
        doc = json.loads(json.dumps(good))
        spoil(doc["traceEvents"])
        if not check(doc):
            print("chrome_check self-test: %s was not caught" % what)
            return 1
    print("chrome_check self-test: %d faults caught" % len(faults))
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    faults = check(doc)
    for line in faults[:20]:
        print("chrome_check: %s: %s" % (argv[1], line))
    if faults:
        print("chrome_check: %s: %d faults" % (argv[1], len(faults)))
        return 1
    ev = doc["traceEvents"]
    print("chrome_check: %s: %d events fine (%d X, %d M, %d flow)" % (
        argv[1], len(ev), sum(e["ph"] == "X" for e in ev),
        sum(e["ph"] == "M" for e in ev),
        sum(e["ph"] in ("s", "t", "f") for e in ev)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
