"""Collective sweep for scripts/measure_ops.py --collectives (run under torchrun), and the fit
that turns its measurements into the flow model's own constants (docs/fidelity.md).

The sweep times torch.distributed.all_reduce over one group (the whole job) for message sizes
from 8 KiB to 1 GiB, like nccl-tests' all_reduce_perf, and writes the raw points:
    {"collective": "all_reduce", "world": n, "gpus_per_node": g, "device": "...",
     "points": [[bytes, microseconds], ...]}
The fit reads such points and returns a cluster fragment that a config or preset merges:
    {"cluster": {"<level>": {"bus_efficiency": e, "latency_us": alpha, "sources": {...}}}}
because Proteus costs a ring all-reduce of S bytes over n GPUs (core/src/exec/collective_flows.cpp) as
    t(S) = base_latency + 2 (n - 1) alpha + [2 (n - 1) / n] S / (link x bus_efficiency)
so the measured slope gives the bus efficiency and the intercept, less NCCL's fixed cost per call
(collectives.base_latency_us), gives the per-hop alpha. level "intra_node": link is the GPU's
NVLink bandwidth per direction; "inter_node": its share of the node's NICs (nics x nic / g).
Measured points stay the evidence; the fragment's sources quote them.
"""
import json
import statistics
import time

SIZES = [8 * 1024 * 4 ** i for i in range(9)] + [1024 ** 3]  # 8 KiB .. 512 MiB, 1 GiB
SLOPE_FROM_BYTES = 64 * 1024 ** 2      # large messages: bandwidth-bound
INTERCEPT_UP_TO_BYTES = 256 * 1024     # small messages: latency-bound


def sweep(warmup=5, repeat=20, sizes=SIZES):
    """Times all_reduce on every rank of an initialised NCCL process group; rank 0 returns the points."""
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", torch.cuda.current_device())
    points = []
    for size in sizes:
        x = torch.ones(size // 2, dtype=torch.bfloat16, device=device)
        for _ in range(warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            dist.barrier()
            torch.cuda.synchronize()
            start = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e6)
        # The slowest rank finishes the collective: take the max over ranks of each median.
        t = torch.tensor([statistics.median(times)], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        points.append([size, float(t.item())])
    if rank != 0:
        return None
    return {"collective": "all_reduce", "world": world, "gpus_per_node": torch.cuda.device_count(),
            "device": torch.cuda.get_device_name(device), "points": points}


def _least_squares(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("need at least two distinct large message sizes to fit a bandwidth")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def fit(raw, level, link_GBps, base_latency_us=8.4):
    """Raw all-reduce points -> (bus_efficiency, latency_us per hop, busbw_GBps at the largest size)."""
    if raw.get("collective") != "all_reduce":
        raise ValueError("the fit reads all_reduce points, got %r" % raw.get("collective"))
    if level not in ("intra_node", "inter_node"):
        raise ValueError("level must be intra_node or inter_node, got %r" % level)
    n = int(raw["world"])
    if n < 2:
        raise ValueError("a collective needs at least two GPUs, world = %d" % n)
    if not link_GBps > 0:
        raise ValueError("link_GBps must be positive")
    points = sorted((int(s), float(t)) for s, t in raw["points"])
    large = [(s, t) for s, t in points if s >= SLOPE_FROM_BYTES]
    small = [(s, t) for s, t in points if s <= INTERCEPT_UP_TO_BYTES]
    if len(large) < 2 or not small:
        raise ValueError("need points of at least two sizes >= 64 MiB and one <= 256 KiB")
    slope_us_per_byte, _ = _least_squares([s for s, _ in large], [t for _, t in large])
    factor = 2.0 * (n - 1) / n                       # bytes each GPU sends per byte reduced
    bus_efficiency = factor / (slope_us_per_byte * 1e-6 * link_GBps * 1e9)
    intercept_us = statistics.median(t - slope_us_per_byte * s for s, t in small)
    latency_us = max(0.0, (intercept_us - base_latency_us) / (2 * (n - 1)))
    s_max, t_max = points[-1]
    busbw_GBps = factor * s_max / (t_max * 1e-6) / 1e9
    return bus_efficiency, latency_us, busbw_GBps


def fragment(raw, level, link_GBps, base_latency_us=8.4):
    """The cluster fragment a config merges (see the module docstring)."""
    eff, alpha, busbw = fit(raw, level, link_GBps, base_latency_us)
    where = "scripts/measure_ops.py --collectives: all_reduce over %d GPUs (%s), %d sizes" % (
        raw["world"], raw.get("device", "unknown GPU"), len(raw["points"]))
    return {"cluster": {level: {
        "bus_efficiency": round(min(1.0, eff), 4),
        "latency_us": round(alpha, 3),
        "sources": {
            "bus_efficiency": "%s; slope of sizes >= 64 MiB over %.1f GB/s per GPU; busbw %.1f GB/s at %d bytes"
                              % (where, link_GBps, busbw, raw["points"][-1][0]),
            "latency_us": "%s; intercept of sizes <= 256 KiB, less NCCL's %.1f us per call, over 2(n-1) ring steps"
                          % (where, base_latency_us),
        }}}}


def main_sweep(output, warmup, repeat):
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    raw = sweep(warmup, repeat)
    if raw is not None:
        text = json.dumps(raw, indent=1)
        if output:
            with open(output, "w") as f:
                f.write(text + "\n")
        else:
            print(text)
    dist.destroy_process_group()
