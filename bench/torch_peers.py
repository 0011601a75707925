"""PyTorch's fused tensor-parallel operations on the shapes weave-bench uses.

Measures, per shape (global M x K x N, bf16, one GPU per rank):
  torch.ops.symm_mem.fused_all_gather_matmul   (AG-GEMM: A rows gathered)
  torch.ops.symm_mem.fused_matmul_reduce_scatter (GEMM-RS: rows of C scattered)
and PyTorch's own sequential versions (all_gather_into_tensor then mm; mm then
reduce_scatter_tensor), timed with CUDA events after warm-up; the median of
the slowest rank. Run one process per GPU under mpirun (or torchrun):

  mpirun -np 4 python3 bench/torch_peers.py --json torch.json

PyTorch's fused operations need even shards; uneven shapes are reported as
not supported.

With --fp8, the FP8 peers instead (e4m3 A and B with row-wise scales, one
float32 per row of A and per column of op(B), bf16 output, float32
accumulation), as weave-bench --dtype fp8 measures them:
  AG-GEMM   sequential: all_gather_into_tensor of the FP8 rows and of their
            scales, then torch._scaled_mm; fused:
            torch.ops.symm_mem.fused_all_gather_scaled_matmul
  GEMM-RS   sequential: torch._scaled_mm, then reduce_scatter_tensor of the
            bf16 products; fused: torch.ops.symm_mem.fused_scaled_matmul_reduce_scatter
  GEMM-AR   sequential only (PyTorch has no fused one): torch._scaled_mm, then
            all_reduce of the bf16 products
  AG-GEMM bf16 storage, e4m3 wire (weave-bench --dtype bf16 --wire-type e4m3):
            each rank quantizes its bf16 rows (row-wise, amax / 448), then
            the FP8 AG-GEMM above (both columns include the quantization)

  mpirun -np 2 python3 bench/torch_peers.py --fp8 --shape 8192x8192x8192
"""

import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist

SHAPES = [
    (4096, 8192, 8192),
    (8192, 8192, 8192),
    (16384, 8192, 28672),
    (16384, 16384, 16384),
    (1024, 8192, 8192),
]


def rank_info():
    """Rank, size and local rank from Open MPI's or torchrun's environment."""
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ.get("LOCAL_RANK", str(rank))))
    return rank, size, local


def timed(fn, warmup, iterations):
    """Median over iterations of the slowest rank's time of fn(), in ms."""
    samples = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for it in range(-warmup, iterations):
        torch.cuda.synchronize()
        dist.barrier()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms = torch.tensor([start.elapsed_time(stop)], device="cuda")
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        if it >= 0:
            samples.append(ms.item())
    return statistics.median(samples)


def symmetric(tensor):
    """A copy of `tensor` in symmetric memory (some PyTorch versions want it)."""
    import torch.distributed._symmetric_memory as symm_mem

    out = symm_mem.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    out.copy_(tensor)
    return out


def measure(record, sequential, fused, plain, args):
    """Times sequential() and fused() into record; fused(copy) with a copy of
    `plain` in symmetric memory where plain inputs are refused (some PyTorch
    versions want them)."""
    record["sequential_ms"] = timed(sequential, args.warmup, args.iterations)
    if fused is None:  # no fused operation to compare
        return
    try:
        record["fused_ms"] = timed(fused, args.warmup, args.iterations)
    except Exception as first:
        record["note"] = f"plain inputs refused ({type(first).__name__}); symmetric-memory inputs used"
        sym = symmetric(plain)
        record["fused_ms"] = timed(lambda: fused(sym), args.warmup, args.iterations)


def report(record, results, rank, width):
    """Keeps record and prints its line (rank 0)."""
    results.append(record)
    if rank == 0:
        op, shape = record["op"], record["shape"]
        if "error" in record:
            print(f"{op:{width}} {shape:22} failed: {record['error']}")
        elif "fused_ms" not in record:
            print(f"{op:{width}} {shape:22} {'-':>9} {record['sequential_ms']:9.3f} {'-':>9}")
        else:
            print(f"{op:{width}} {shape:22} {record['fused_ms']:9.3f} {record['sequential_ms']:9.3f} "
                  f"{record['fused_ms'] / record['sequential_ms']:9.3f}")
    torch.cuda.empty_cache()


def call_op(op, values):
    """Calls a torch.ops overload with the arguments its schema names, taken from
    `values` by name: the symm_mem operations' signatures differ between
    PyTorch versions (e.g. scatter_dim became orig_scatter_dim and
    scatter_dim_after_maybe_reshape plus output_shape; A_shard of
    fused_all_gather_scaled_matmul is A in 2.11)."""
    schema = op.default._schema
    kwargs = {}
    for argument in schema.arguments:
        if argument.name in values:
            kwargs[argument.name] = values[argument.name]
        elif not argument.has_default_value():
            raise TypeError(f"{schema.name}: no value for its argument {argument.name} (schema: {schema})")
    return op(**kwargs)


def quantize_rows(x):
    """e4m3 rows with one float32 scale per row (amax / 448), like Weave's wire type."""
    amax = x.abs().amax(dim=1, keepdim=True).float()
    scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    q = (x.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q, scale.contiguous()


def fp8_peers(args, shapes, rank, size, group, results):
    """The FP8 peers: see the module's description."""
    e4m3, bf16 = torch.float8_e4m3fn, torch.bfloat16
    if rank == 0:
        print(f"PyTorch {torch.__version__} on {size} x {torch.cuda.get_device_name()}, e4m3 x e4m3 -> bf16, "
              f"row-wise scales, median of {args.iterations} (slowest rank)")
        print(f"{'op':17} {'shape MxKxN':22} {'fused ms':>9} {'seq ms':>9} {'fused/seq':>9}")
    torch.manual_seed(1234 + rank)

    def fp8(rows, cols):
        return (torch.randn(rows, cols, device="cuda") * 0.5).to(e4m3)

    def scales(rows, cols):
        return (torch.rand(rows, cols, device="cuda") * 0.5 + 0.75).contiguous()

    for m, k, n in shapes:
        for op in ("AG-GEMM", "GEMM-RS", "GEMM-AR", "AG-GEMM e4m3 wire"):
            record = {"op": op, "shape": f"{m}x{k}x{n}", "m": m, "k": k, "n": n, "ranks": size,
                      "dtype": "bf16" if "wire" in op else "fp8", "scales": "rowwise"}
            try:
                if op.startswith("AG-GEMM"):
                    rows = m // size
                    w = fp8(n // size, k)  # the weight [N_r, K]; op(B) = w^T, K-contiguous as _scaled_mm wants
                    b, b_scale = w.t(), scales(1, n // size)
                    if "wire" in op:
                        stored = torch.randn(rows, k, dtype=bf16, device="cuda")
                        a_shard, a_scale = quantize_rows(stored)
                    else:
                        stored = None
                        a_shard, a_scale = fp8(rows, k), scales(rows, 1)
                    gathered = torch.empty(m, k, dtype=torch.uint8, device="cuda")
                    gathered_scale = torch.empty(m, 1, dtype=torch.float32, device="cuda")

                    def sequential(stored=stored, a_shard=a_shard, a_scale=a_scale):
                        if stored is not None:
                            a_shard, a_scale = quantize_rows(stored)
                        dist.all_gather_into_tensor(gathered, a_shard.view(torch.uint8), group=group)
                        dist.all_gather_into_tensor(gathered_scale, a_scale, group=group)
                        torch._scaled_mm(gathered.view(e4m3), b, scale_a=gathered_scale, scale_b=b_scale, out_dtype=bf16)

                    def fused(a=a_shard, stored=stored, a_scale=a_scale):
                        if stored is not None:  # quantized into `a` (symmetric memory where the op wants it)
                            q, a_scale = quantize_rows(stored)
                            if a is a_shard:
                                a = q
                            else:
                                a.copy_(q)
                        call_op(torch.ops.symm_mem.fused_all_gather_scaled_matmul, {
                            "A_shard": a, "A": a, "Bs": [b], "A_scale": a_scale, "B_scales": [b_scale], "gather_dim": 0,
                            "group_name": group.group_name, "biases": [None], "result_scales": [None],
                            "out_dtypes": [bf16], "use_fast_accum": [False]})
                    plain = a_shard
                elif op == "GEMM-AR":
                    a, a_scale = fp8(m, k // size), scales(m, 1)
                    b, b_scale = fp8(n, k // size).t(), scales(1, n)

                    def sequential():
                        product = torch._scaled_mm(a, b, scale_a=a_scale, scale_b=b_scale, out_dtype=bf16)
                        dist.all_reduce(product, group=group)

                    fused = plain = None
                else:
                    a, a_scale = fp8(m, k // size), scales(m, 1)
                    w = fp8(n, k // size)
                    b, b_scale = w.t(), scales(1, n)
                    out = torch.empty(m // size, n, dtype=bf16, device="cuda")

                    def sequential():
                        product = torch._scaled_mm(a, b, scale_a=a_scale, scale_b=b_scale, out_dtype=bf16)
                        dist.reduce_scatter_tensor(out, product, group=group)

                    def fused(a=a):
                        call_op(torch.ops.symm_mem.fused_scaled_matmul_reduce_scatter, {
                            "A": a, "B": b, "A_scale": a_scale, "B_scale": b_scale, "reduce_op": "sum",
                            "scatter_dim": 0, "orig_scatter_dim": 0, "scatter_dim_after_maybe_reshape": 0,
                            "group_name": group.group_name, "output_shape": [m, n], "bias": None,
                            "result_scale": None, "out_dtype": bf16, "use_fast_accum": False})
                    plain = a

                measure(record, sequential, fused, plain, args)
            except Exception as error:  # report, keep going
                record["error"] = f"{type(error).__name__}: {error}"[:300]
            report(record, results, rank, 17)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write results here (rank 0)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--fp8", action="store_true", help="the FP8 peers (row-wise scales) instead of bf16")
    parser.add_argument("--shape", action="append", help="global MxKxN (repeatable; default: the tp shapes)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shape] if args.shape else SHAPES

    rank, size, local = rank_info()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29561")
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl", rank=rank, world_size=size, device_id=torch.device("cuda", torch.cuda.current_device()))
    group = dist.group.WORLD
    import torch.distributed._symmetric_memory as symm_mem

    if hasattr(symm_mem, "enable_symm_mem_for_group"):
        symm_mem.enable_symm_mem_for_group(group.group_name)

    results = []
    if args.fp8:
        fp8_peers(args, shapes, rank, size, group, results)
        if rank == 0 and args.json:
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "ranks": size, "device": torch.cuda.get_device_name(),
                           "dtype": "fp8", "results": results}, f, indent=2)
        dist.destroy_process_group()
        return
    if rank == 0:
        print(f"PyTorch {torch.__version__} on {size} x {torch.cuda.get_device_name()}, bf16, "
              f"median of {args.iterations} (slowest rank)")
        print(f"{'op':8} {'shape MxKxN':22} {'fused ms':>9} {'seq ms':>9} {'fused/seq':>9}")
    torch.manual_seed(1234 + rank)
    for m, k, n in shapes:
        dt = torch.bfloat16
        for op in ("AG-GEMM", "GEMM-RS"):
            record = {"op": op, "shape": f"{m}x{k}x{n}", "m": m, "k": k, "n": n, "ranks": size, "dtype": "bf16"}
            try:
                if op == "AG-GEMM":
                    a_shard = torch.randn(m // size, k, dtype=dt, device="cuda")
                    b = torch.randn(n // size, k, dtype=dt, device="cuda").t()  # K x N_r, weight layout
                    gathered = torch.empty(m, k, dtype=dt, device="cuda")

                    def sequential():
                        dist.all_gather_into_tensor(gathered, a_shard, group=group)
                        torch.mm(gathered, b)

                    def fused(a=a_shard):
                        torch.ops.symm_mem.fused_all_gather_matmul(a, [b], gather_dim=0, group_name=group.group_name)
                else:
                    a = torch.randn(m, k // size, dtype=dt, device="cuda")
                    b = torch.randn(n, k // size, dtype=dt, device="cuda").t()  # K_r x N
                    out = torch.empty(m // size, n, dtype=dt, device="cuda")

                    def sequential():
                        dist.reduce_scatter_tensor(out, torch.mm(a, b), group=group)

                    def fused(a=a):
                        torch.ops.symm_mem.fused_matmul_reduce_scatter(
                            a, b, "sum", scatter_dim=0, group_name=group.group_name)

                measure(record, sequential, fused, a_shard if op == "AG-GEMM" else a, args)
            except Exception as error:  # report, keep going
                record["error"] = f"{type(error).__name__}: {error}"[:300]
            report(record, results, rank, 8)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "ranks": size, "device": torch.cuda.get_device_name(),
                       "results": results}, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
