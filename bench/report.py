"""Tables and a plot from weave-bench JSON (and, optionally, the peers' JSON).

  python3 bench/report.py bench-4gpu.json --torch torch-4gpu.json --cublasmp cublasmp-4gpu.json \
      --png overlap-4gpu.png

Prints a Markdown table per file: for each operation and shape the GEMM
alone, the communication alone, the sequential plan and Weave's default plan
(ms), Weave / sequential, Weave / max(GEMM, communication), and the peers'
fused operations where they were measured (PyTorch: bench/torch_peers.py;
cuBLASMp: weave-bench-cublasmp, "wrong" where its result failed the check).
The plot shows the two ratios per shape. Records of --ops gemm (WEAVE_GEMM
over a 2-D grid) carry their grid and block size in the shape column, and
ScaLAPACK's p?gemm where it was measured.

--weave-from OP=VARIANT takes the Weave column of operation OP (e.g. AG-GEMM)
from the variant VARIANT of the same run (weave-bench --variants) instead of
the default plan: for a default changed after the run, when the run measured
the new default as a variant.
"""

import argparse
import json


def load(path):
    with open(path) as f:
        return json.load(f)


def case_key(r):
    """One measured case: operation and shape, and for WEAVE_GEMM its grid and block size."""
    return (r["op"], r["shape"], r.get("grid"), r.get("block"))


def shape_text(r):
    return f"{r['shape']} {r['grid']} nb={r['block']}" if "grid" in r else r["shape"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench")
    parser.add_argument("--torch", help="torch_peers.py JSON of the same machine")
    parser.add_argument("--cublasmp", help="weave-bench-cublasmp JSON of the same machine")
    parser.add_argument("--png", help="write a plot of the ratios here")
    parser.add_argument("--title", default="")
    parser.add_argument("--weave-from", action="append", default=[], metavar="OP=VARIANT",
                        help="the Weave column of OP from this variant of the same run")
    args = parser.parse_args()

    bench = load(args.bench)
    peers = []  # (column title, {(op, shape): cell})
    for title, path in (("PyTorch fused ms", args.torch), ("cuBLASMp ms", args.cublasmp)):
        if path:
            cells = {}
            for r in load(path)["results"]:
                if "error" in r and "fused_ms" in r:
                    cells[case_key(r)] = "wrong"
                elif "fused_ms" in r:
                    cells[case_key(r)] = f"{r['fused_ms']:.3f}"
            peers.append((title, cells))
    substitute = dict(item.split("=", 1) for item in args.weave_from)
    by_key = {(r["op"], r["shape"], r.get("variant", "default")): r for r in bench["results"]}
    rows = []
    for r in bench["results"]:
        if r.get("variant", "default") != "default":
            continue
        variant = substitute.get(r["op"])
        if variant:
            if (r["op"], r["shape"], variant) not in by_key:
                raise SystemExit(f"{r['op']} {r['shape']}: no variant {variant} in {args.bench}")
            r = by_key[(r["op"], r["shape"], variant)]
        rows.append(r)

    if any("pdgemm_ms" in r for r in rows):
        peers.append(("ScaLAPACK p?gemm ms", {case_key(r): f"{r['pdgemm_ms']:.3f}" for r in rows if "pdgemm_ms" in r}))
    columns = ["op", "shape (M x K x N)", "GEMM ms", "comm ms", "sequential ms", "Weave ms", "Weave/seq", "Weave/max"]
    columns += [title for title, _ in peers]
    columns.append("plan")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in rows:
        plan = r["describe_weave"].split(": ", 1)[1].split(";")[0] if ": " in r["describe_weave"] else ""
        cells = [r["op"], shape_text(r), f"{r['gemm_ms']:.3f}", f"{r['comm_ms']:.3f}", f"{r['sequential_ms']:.3f}",
                 f"{r['weave_ms']:.3f}", f"{r['weave_over_sequential']:.3f}", f"{r['weave_over_limit']:.3f}"]
        cells += [peer.get(case_key(r), "n/a") for _, peer in peers]
        cells.append(plan)
        print("| " + " | ".join(cells) + " |")

    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        labels = [f"{r['op']}\n{shape_text(r)}" for r in rows]
        x = range(len(rows))
        fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.6), 4.5))
        width = 0.4
        ax.bar([i - width / 2 for i in x], [r["weave_over_sequential"] for r in rows], width,
               label="Weave / sequential")
        ax.bar([i + width / 2 for i in x], [r["weave_over_limit"] for r in rows], width,
               label="Weave / max(GEMM, communication)")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(1.1, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        ax.set_ylabel("ratio (lower is better)")
        ax.set_title(args.title or f"{bench['ranks']} x {bench['device']}, {bench['dtype']}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
