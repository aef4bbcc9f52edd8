#!/usr/bin/env python3
"""How `emo run` will observe each pack start of one or more policies (docs/policy.md, "How a pack
start is observed"): a Markdown table, one row per policy, counting starts by `observed_by`
(kernel launch, copy, memset, graph launch + index, none), and how many were moved to a nearby
observable op. A policy written before issue 32 has no `observed_by`: its starts are counted as
`emo run` reads them (kernel, or none for a copy or memset).

Usage: scripts/policy-observations.py POLICY.json [LABEL=POLICY.json ...]
Exit code 1 when some start is unobservable (`none`), 2 for a file that is not a policy.
"""
import json
import sys

KINDS = ["kernel", "copy", "memset", "graph", "none"]


def observed_by(start):
    if "observed_by" in start:
        return start["observed_by"]
    name = start.get("op_name", "")
    old_copy = name.startswith(("Memcpy", "Memset", "[CUDA memcpy", "[CUDA memset"))
    return "none" if old_copy else "kernel"


def main(args):
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    print("| policy | pack starts | " + " | ".join(KINDS) + " | moved |")
    print("|---|---:|" + "---:|" * (len(KINDS) + 1))
    unobservable = 0
    for arg in args:
        label, _, path = arg.rpartition("=") if "=" in arg else (arg, "", arg)
        try:
            with open(path) as f:
                doc = json.load(f)
            starts = [k["start"] for g in doc["gpus"] for k in g["packs"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{path}: not a policy ({e})", file=sys.stderr)
            return 2
        counts = {k: 0 for k in KINDS}
        for s in starts:
            counts[observed_by(s)] += 1
        moved = sum(1 for s in starts if s.get("moved_from"))
        unobservable += counts["none"]
        print(f"| {label} | {len(starts)} | " + " | ".join(str(counts[k]) for k in KINDS) + f" | {moved} |")
    return 1 if unobservable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
