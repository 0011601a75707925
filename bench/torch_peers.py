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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write results here (rank 0)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

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
    if rank == 0:
        print(f"PyTorch {torch.__version__} on {size} x {torch.cuda.get_device_name()}, bf16, "
              f"median of {args.iterations} (slowest rank)")
        print(f"{'op':8} {'shape MxKxN':22} {'fused ms':>9} {'seq ms':>9} {'fused/seq':>9}")
    torch.manual_seed(1234 + rank)
    for m, k, n in SHAPES:
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

                record["sequential_ms"] = timed(sequential, args.warmup, args.iterations)
                try:
                    record["fused_ms"] = timed(fused, args.warmup, args.iterations)
                except Exception as first:  # some versions want symmetric-memory inputs
                    record["note"] = f"plain inputs refused ({type(first).__name__}); symmetric-memory inputs used"
                    sym = symmetric(a_shard if op == "AG-GEMM" else a)
                    record["fused_ms"] = timed(lambda: fused(sym), args.warmup, args.iterations)
            except Exception as error:  # report, keep going
                record["error"] = f"{type(error).__name__}: {error}"[:300]
            results.append(record)
            if rank == 0:
                if "error" in record:
                    print(f"{op:8} {record['shape']:22} failed: {record['error']}")
                else:
                    print(f"{op:8} {record['shape']:22} {record['fused_ms']:9.3f} {record['sequential_ms']:9.3f} "
                          f"{record['fused_ms'] / record['sequential_ms']:9.3f}")
            torch.cuda.empty_cache()
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "ranks": size, "device": torch.cuda.get_device_name(),
                       "results": results}, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
