"""bench/emulated_targets.py on made-up benchmark rows: a default within its
target, one over it, one over it that is the sequential plan itself (counted
apart), the host-staged target where the GEMM is at least a quarter of the
communication, and the exit status."""

import json
import os
import subprocess
import sys
import tempfile


def row(op, shape, gemm, comm, sequential, weave, describe_weave, describe_sequential, variant="default"):
    return {"op": op, "shape": shape, "variant": variant, "gemm_ms": gemm, "comm_ms": comm,
            "sequential_ms": sequential, "weave_ms": weave, "weave_over_sequential": weave / sequential,
            "weave_over_limit": weave / max(gemm, comm), "describe_weave": describe_weave,
            "describe_sequential": describe_sequential}


SEQ_BF16 = "GEMM-RS bf16 ... (2 ranks, I am 0): sequential; backend cuda; partial sums travel as bf16, summed by the collective"
SEQ_F32 = "GEMM-RS bf16 ... (2 ranks, I am 0): sequential; backend cuda; partial sums travel as f32, summed by the collective"
PIPELINED = ("GEMM-RS bf16 ... (2 ranks, I am 0): pipelined, 2 chunks/shard; backend cuda; products travel as bf16, "
             "the two ranks' summed once by the collective")


def run(script, rows, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"results": rows}, f)
    try:
        done = subprocess.run([sys.executable, script, f.name, *flags], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return done.returncode, done.stdout


def check(condition, what, output):
    if not condition:
        print(f"FAILED: {what}\n{output}")
        sys.exit(1)


def main():
    script = sys.argv[1]
    met = row("GEMM-RS", "8192x8192x8192", 1.0, 36.0, 37.0, 37.5, PIPELINED, SEQ_BF16)
    over = row("GEMM-RS", "1024x8192x8192", 0.5, 5.0, 5.2, 6.0, PIPELINED, SEQ_BF16)
    same = row("AG-GEMM", "1024x8192x8192", 0.5, 5.0, 5.0, 5.9, SEQ_BF16.replace("GEMM-RS", "AG-GEMM"), SEQ_BF16)
    # The sequential algorithm moving other bytes than the "seq" column is a real miss.
    other_bytes = row("GEMM-AR", "4096x8192x8192", 0.5, 5.0, 5.0, 9.8, SEQ_F32, SEQ_BF16)

    status, out = run(script, [met])
    check(status == 0 and "every target met" in out and "ok" in out, "a default within 1.02 x passes", out)

    status, out = run(script, [met, over, same, other_bytes])
    check(status == 1, "misses give exit status 1", out)
    check("3 target(s) missed (1 where the default is the sequential plan, timed twice)" in out,
          "the summary counts the same-plan miss apart", out)
    lines = {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines() if line.startswith(("AG", "GEMM"))}
    check(lines["AG-GEMM 1024x8192x8192"].endswith("MISSED (same plan)"), "the same plan is named", out)
    check(lines["GEMM-RS 1024x8192x8192"].endswith("MISSED"), "an overlapped plan over its target is a miss", out)
    check(lines["GEMM-AR 4096x8192x8192"].endswith("MISSED"), "other bytes are not the same plan", out)

    # Host-staged: 0.90 where the GEMM is at least a quarter of the communication.
    heavy = row("GEMM-RS", "16384x8192x28672", 10.0, 20.0, 30.0, 28.5, PIPELINED, SEQ_BF16)
    status, out = run(script, [heavy])
    check(status == 0, "0.95 x passes the network target", out)
    status, out = run(script, [heavy], "--host-staged")
    check(status == 1 and "0.90" in out, "0.95 x misses the host-staged 0.90", out)
    print("emulated_targets: every check passed")


if __name__ == "__main__":
    main()
