"""Merges the per-rank Chrome traces Weave writes (weave_plan_write_trace with
"%r" in the path) into one file that Perfetto or chrome://tracing opens.

  python3 bench/merge_traces.py trace-rank*.json -o trace.json
"""

import argparse
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    events = []
    for path in args.traces:
        with open(path) as f:
            events.extend(json.load(f)["traceEvents"])
    with open(args.output, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


if __name__ == "__main__":
    main()
