"""Times GPU-to-GPU copies alone (what the copy-engine transport is made of),
so the transfer times in Weave's traces can be compared with what the copy
engines do with nothing else running: one copy to one peer, and one copy to
each of two peers at once, for a range of sizes.

  python3 bench/peer_copy.py [--sizes-mib 4,16,32,64,128,256] [--json out.json]

Needs PyTorch and at least 2 GPUs with peer access. A tensor copy between two
GPUs is a cudaMemcpyAsync between peers, pushed by the source GPU's copy
engines (no SMs), like the transport's sends.
"""

import argparse
import json

import torch


def time_ms(body, stream, iterations=20, warmup=3):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    with torch.cuda.stream(stream):
        for it in range(warmup + iterations):
            start.record(stream)
            body()
            end.record(stream)
            end.synchronize()
            if it >= warmup:
                samples.append(start.elapsed_time(end))
    samples.sort()
    return samples[len(samples) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="4,16,32,64,128,256")
    parser.add_argument("--json")
    args = parser.parse_args()
    count = torch.cuda.device_count()
    if count < 2:
        raise SystemExit("peer_copy.py needs at least 2 GPUs")
    for peer in range(1, min(count, 3)):
        if not torch.cuda.can_device_access_peer(0, peer):
            raise SystemExit(f"GPU 0 has no peer access to GPU {peer}")
    stream = torch.cuda.Stream(device=0)
    results = []
    print(f"{'MiB':>6} {'1 peer us':>10} {'GB/s':>7} {'2 peers us':>11} {'GB/s total':>11}")
    for mib in [int(s) for s in args.sizes_mib.split(",")]:
        elements = mib * (1 << 20) // 2
        source = torch.ones(elements, dtype=torch.bfloat16, device="cuda:0")
        targets = [torch.empty(elements, dtype=torch.bfloat16, device=f"cuda:{d}") for d in range(1, min(count, 3))]
        torch.cuda.synchronize()
        one = time_ms(lambda: targets[0].copy_(source, non_blocking=True), stream)
        row = {"mib": mib, "one_peer_us": one * 1e3, "one_peer_gbps": mib * (1 << 20) / (one * 1e-3) / 1e9}
        line = f"{mib:>6} {one * 1e3:>10.1f} {row['one_peer_gbps']:>7.1f}"
        if len(targets) > 1:
            side = torch.cuda.Stream(device=0)

            def both():
                side.wait_stream(stream)
                targets[0].copy_(source, non_blocking=True)
                with torch.cuda.stream(side):
                    targets[1].copy_(source, non_blocking=True)
                stream.wait_stream(side)

            two = time_ms(both, stream)
            row.update({"two_peers_us": two * 1e3, "two_peers_gbps": 2 * mib * (1 << 20) / (two * 1e-3) / 1e9})
            line += f" {two * 1e3:>11.1f} {row['two_peers_gbps']:>11.1f}"
        print(line, flush=True)
        results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
