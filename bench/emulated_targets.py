"""Checks a weave-bench JSON of a run over emulated nodes against the
targets of running across nodes:

  every shape:        the default plan <= 1.02 x the sequential plan
                      (--target: another bound, e.g. 1.00 for the host);
  --host-staged, where the GEMM takes at least a quarter of the
  communication:      the default plan <= 0.90 x the sequential plan.

  python3 bench/emulated_targets.py bench-2gpu-emulated-host-staged.json --host-staged

Prints one line per operation and shape of the default plan (GEMM and
communication alone, sequential, default, default / sequential, default /
max(GEMM, communication), the variant that was fastest, what the default
plan ran) and whether it meets its target; then each variant's ratio to the
sequential plan. A miss where the default plan is the sequential plan itself
(the same algorithm moving the same bytes: one plan timed twice) is marked
"MISSED (same plan)" and counted apart. Exit status 1 when a target is
missed.
"""

import argparse
import json
import sys


def plan_of(describe):
    """The algorithm part of a describe line: "sequential", "pipelined, 4 chunks/shard", ..."""
    return describe.split(": ", 1)[-1].split(";")[0]


def wire_of(describe):
    """What a describe line says travels ("partial sums travel as bf16, ..."), or ""."""
    for part in describe.split(";"):
        if " travel as " in part:
            return part.strip()
    return ""


def same_plan(row):
    """Whether the default plan is the sequential plan of the "seq" column."""
    weave, sequential = row["describe_weave"], row.get("describe_sequential", "")
    return plan_of(weave) == "sequential" and wire_of(weave) == wire_of(sequential)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench")
    parser.add_argument("--host-staged", action="store_true", help="apply the host-staged target too")
    parser.add_argument("--target", type=float, default=1.02, help="the bound of default / sequential (1.02)")
    args = parser.parse_args()
    with open(args.bench) as f:
        doc = json.load(f)
    rows = doc["results"]
    missed = same_plan_missed = 0
    print(f"{'op':8} {'shape':28} {'gemm':>8} {'comm':>8} {'seq':>8} {'default':>8} {'d/seq':>6} {'d/max':>6} "
          f"{'target':>6} {'fastest':28} plan")
    for row in rows:
        if row["variant"] != "default":
            continue
        same = [r for r in rows if r["op"] == row["op"] and r["shape"] == row["shape"]]
        fastest = min(same, key=lambda r: r["weave_ms"])
        ratio = row["weave_over_sequential"]
        target = args.target
        if args.host_staged and row["gemm_ms"] >= 0.25 * row["comm_ms"]:
            target = 0.90
        ok = ratio <= target
        missed += not ok
        verdict = "ok"
        if not ok:
            verdict = "MISSED"
            if same_plan(row):
                verdict = "MISSED (same plan)"
                same_plan_missed += 1
        plan = plan_of(row["describe_weave"])
        print(f"{row['op']:8} {row['shape']:28} {row['gemm_ms']:8.3f} {row['comm_ms']:8.3f} "
              f"{row['sequential_ms']:8.3f} {row['weave_ms']:8.3f} {ratio:6.3f} {row['weave_over_limit']:6.3f} "
              f"{target:6.2f} {fastest['variant']:28} {plan}  {verdict}")
        for r in same:
            if r is not row:
                print(f"{'':8} {'  ' + r['variant']:28} {'':8} {'':8} {'':8} {r['weave_ms']:8.3f} "
                      f"{r['weave_over_sequential']:6.3f} {r['weave_over_limit']:6.3f}")
    if not missed:
        print("every target met")
    elif same_plan_missed:
        print(f"{missed} target(s) missed ({same_plan_missed} where the default is the sequential plan, timed twice)")
    else:
        print(f"{missed} target(s) missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
