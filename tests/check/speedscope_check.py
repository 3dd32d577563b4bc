#!/usr/bin/env python3
"""speedscope_check: a speedscope file held to speedscope's own schema.

    speedscope_check.py SCHEMA FILE

SCHEMA is the file-format-schema.json that the speedscope npm package
ships (dist/release/); FILE is validated against it with python3-jsonschema
(draft 7, as the schema says), then against what speedscope's importer
assumes and the schema can not say: every frame index a sample names is a
frame, samples and weights are as long as each other, and a profile ends
no earlier than it starts.  Exit 0 when FILE passes, 1 when it does not,
77 (meson's skip) when jsonschema is not installed.
"""
import json
import sys


def semantics(doc):
    faults = []
    nframes = len(doc["shared"]["frames"])
    for k, p in enumerate(doc["profiles"]):
        if p["endValue"] < p["startValue"]:
            faults.append("profile %d ends before it starts" % k)
        if p["type"] != "sampled":
            continue
        if len(p["samples"]) != len(p["weights"]):
            faults.append("profile %d: %d samples, %d weights" % (
                k, len(p["samples"]), len(p["weights"])))
        for s in p["samples"]:
            for i in s:
                if not isinstance(i, int) or not 0 <= i < nframes:
                    faults.append("profile %d: frame %r of %d" % (
                        k, i, nframes))
                    return faults
    return faults


def main(argv):
    if len(argv) != 3:
        print("usage: speedscope_check.py SCHEMA FILE", file=sys.stderr)
        return 2
    try:
        import jsonschema
    except ImportError:
        print("speedscope_check: python3-jsonschema is not installed "
              "(apt-get install python3-jsonschema); skipped")
        return 77
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        doc = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for e in errors[:20]:
        print("speedscope_check: %s: at %s: %s" % (
            argv[2], "/".join(map(str, e.path)) or "(top)", e.message))
    if errors:
        return 1
    faults = semantics(doc)
    for line in faults:
        print("speedscope_check: %s: %s" % (argv[2], line))
    if faults:
        return 1
    print("speedscope_check: %s: valid against %s (%d frames, %d profiles)"
          % (argv[2], argv[1], len(doc["shared"]["frames"]),
             len(doc["profiles"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
