"""Collective sweep for scripts/measure_ops.py --collectives (run under torchrun), and the fit
that turns its measurements into the flow model's own constants (docs/fidelity/communication.md).

The sweep times torch.distributed.all_reduce over one group (the whole job) for message sizes
from 8 KiB to 1 GiB, like nccl-tests' all_reduce_perf, and writes the raw points:
    {"collective": "all_reduce", "world": n, "gpus_per_node": g, "device": "...",
     "points": [[bytes, microseconds], ...]}
With kinds and group sizes (sweep_sets) it times every collective the simulator costs, all-reduce,
all-gather, reduce-scatter, all-to-all and send-recv, over groups of n GPUs (the world cut into
contiguous groups, all timed at once, as tensor-parallel groups run), and writes {"sets": [...]},
one points set per collective and group size: the input of fit_flow_model / flow_fragment.
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


# The flow model's two numbers per collective of n members in one node (collective_flows.cpp):
# ring hops (latency steps) and the bytes each GPU's link carries per byte of S.
HOPS = {"all_reduce": lambda n: 2 * (n - 1), "all_gather": lambda n: n - 1, "reduce_scatter": lambda n: n - 1,
        "all_to_all": lambda n: 1, "send_recv": lambda n: 1}
LINK_BYTES = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "send_recv": lambda n: 1.0}
CALIBRATE_FROM_BYTES = 1024 ** 2  # the sizes that matter in training: 1 MiB and up


def _class_of(s):
    """The efficiency a points set calibrates: send-recv's, or one per (kind, group size)."""
    return "send_recv" if s["collective"] == "send_recv" else (s["collective"], int(s["world"]))


def _fit_class(rows, alpha_us, base_us, link_Bpus):
    """Least squares of relative error for one efficiency at a fixed alpha: t = c + a t x."""
    num = den = 0.0
    for k, f, size, t in rows:
        a = f * size / link_Bpus / t
        num += a * (1 - (base_us + k * alpha_us) / t)
        den += a * a
    x = num / den                      # 1 / efficiency
    loss = sum(((base_us + k * alpha_us + f * size * x / link_Bpus) / t - 1) ** 2 for k, f, size, t in rows)
    return 1.0 / x, loss


def model_us(kind, n, size, alpha_us, efficiency, link_GBps, base_latency_us=8.4):
    """The flow model's time of one collective alone inside a node (collective_flows.cpp)."""
    return base_latency_us + HOPS[kind](n) * alpha_us + LINK_BYTES[kind](n) * size / (link_GBps * 1e3 * efficiency)


def fit_flow_model(sets, link_GBps, base_latency_us=8.4, min_bytes=CALIBRATE_FROM_BYTES):
    """Points of several collectives inside one node -> the flow model's intra-node constants.

    sets: points dicts as --collectives writes them (collective, world, points [[bytes, us]]),
    each group inside one node. Minimises the squared relative error of every point >= min_bytes of
        t = base_latency + hops(kind, n) * alpha + link_bytes(kind, n) * S / (link x efficiency)
    over one per-hop alpha shared by all and one efficiency per (kind, group size n), send-recv
    one of its own. alpha is scanned in 0.01 us steps from 0 to 10 us; each efficiency then has
    a closed form. Returns (alpha_us, {class: efficiency}, rms relative error) with classes
    "send_recv" or (kind, n)."""
    if not link_GBps > 0:
        raise ValueError("link_GBps must be positive")
    classes = {}
    for s in sets:
        kind, n = s["collective"], int(s["world"])
        if kind not in HOPS:
            raise ValueError("unknown collective %r" % kind)
        if n < 2:
            raise ValueError("%s: a collective needs at least two GPUs, world = %d" % (kind, n))
        if n > int(s.get("gpus_per_node", n)):
            raise ValueError("%s over %d GPUs spans nodes of %d: the joint fit is for groups inside one node"
                             % (kind, n, int(s["gpus_per_node"])))
        rows = [(HOPS[kind](n), LINK_BYTES[kind](n), float(b), float(t)) for b, t in s["points"] if b >= min_bytes]
        classes.setdefault(_class_of(s), []).extend(rows)
    classes = {c: rows for c, rows in classes.items() if rows}
    if not classes:
        raise ValueError("no point of %d bytes or more" % min_bytes)
    link_Bpus = link_GBps * 1e3  # bytes per microsecond
    best = None
    for step in range(0, 1001):
        alpha = step * 0.01
        fits = {c: _fit_class(rows, alpha, base_latency_us, link_Bpus) for c, rows in classes.items()}
        loss = sum(l for _, l in fits.values())
        if best is None or loss < best[0]:
            best = (loss, alpha, fits)
    loss, alpha, fits = best
    count = sum(len(rows) for rows in classes.values())
    return alpha, {c: e for c, (e, _) in fits.items()}, (loss / count) ** 0.5


KIND_KEYS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def flow_fragment(sets, link_GBps, base_latency_us=8.4, where="collective points"):
    """The intra_node fragment of fit_flow_model: latency_us and collective_efficiency (cluster_spec.h)."""
    alpha, eff, rms = fit_flow_model(sets, link_GBps, base_latency_us)
    members = sorted({c[1] for c in eff if c != "send_recv"})
    for kind in KIND_KEYS:
        missing = [n for n in members if (kind, n) not in eff]
        if missing:
            raise ValueError("%s has no points for group sizes %s (every kind needs every size)" % (kind, missing))
    fit = ("%s; least-squares fit of the flow model t = %.1f us + hops x alpha + link bytes / (%.0f GB/s x "
           "efficiency) to every point >= 1 MiB (rms relative error %.3f), scripts/collective_sweep.py "
           "fit_flow_model" % (where, base_latency_us, link_GBps, rms))
    table = {"members": members}
    for kind in KIND_KEYS:
        if members:
            table[kind] = [round(min(1.0, eff[(kind, n)]), 3) for n in members]
    if "send_recv" in eff:
        table["send_recv"] = round(min(1.0, eff["send_recv"]), 3)
    return {"cluster": {"intra_node": {
        "latency_us": round(alpha, 2),
        "collective_efficiency": table,
        "sources": {"latency_us": fit + ": the per-hop alpha",
                    "collective_efficiency": fit + ": one efficiency per collective and group size"}}}}


SWEEP_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
ELEMENT_BYTES = 2  # bf16, as training moves activations and gradients


def parse_kinds(text):
    """--kinds: a comma list of SWEEP_KINDS, or "all"."""
    kinds = list(SWEEP_KINDS) if text == "all" else [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in SWEEP_KINDS]
    if unknown or not kinds:
        raise ValueError("--kinds: unknown collective %s (choose from %s, or all)"
                         % (", ".join(map(repr, unknown)) or "''", ", ".join(SWEEP_KINDS)))
    return kinds


def parse_group_sizes(text, world):
    """--group-sizes: a comma list of group sizes, each >= 2 and dividing the world."""
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError("--group-sizes: %r is not a comma list of integers" % text)
    for n in sizes:
        if n < 2 or world % n:
            raise ValueError("--group-sizes: %d does not divide the world of %d GPUs into groups of 2 or more"
                             % (n, world))
    if not sizes:
        raise ValueError("--group-sizes: no group size given")
    return sizes


def groups_of(world, n):
    """The world cut into contiguous groups of n ranks (ranks of one node are contiguous under torchrun)."""
    if n < 2 or world % n:
        raise ValueError("%d GPUs do not divide into groups of %d" % (world, n))
    return [list(range(g * n, (g + 1) * n)) for g in range(world // n)]


def message_bytes(size, n):
    """The sweep size rounded down so that every member's shard is whole elements (S / n of bf16)."""
    unit = n * ELEMENT_BYTES
    return max(unit, size // unit * unit)


def sweep_sets(backend, kinds, group_sizes, warmup=5, repeat=20, sizes=SIZES):
    """Times each kind over each group size (send-recv over pairs) at each size; rank 0 gets the sets.

    backend: prepare(kind, n, bytes) -> a callable that runs the collective once on this rank's
    group; time_us(op) -> microseconds of one run, synchronised; slowest(us) -> the max over ranks;
    world, rank, gpus_per_node, device. S is the simulator's (and nccl-tests') size: the buffer of
    all-reduce and all-to-all, the gathered output of all-gather, the input of reduce-scatter, the
    message of send-recv."""
    sets = []
    for kind in kinds:
        for n in ([2] if kind == "send_recv" else group_sizes):
            points = []
            for size in sizes:
                s = message_bytes(size, n)
                op = backend.prepare(kind, n, s)
                for _ in range(warmup):
                    op()
                times = [backend.time_us(op) for _ in range(repeat)]
                points.append([s, backend.slowest(statistics.median(times))])
            sets.append({"collective": kind, "world": n, "gpus_per_node": backend.gpus_per_node,
                         "device": backend.device, "concurrent_groups": backend.world // n, "points": points})
    return sets if backend.rank == 0 else None


class TorchBackend:
    """sweep_sets' backend over an initialised NCCL process group (one GPU per rank)."""

    def __init__(self, group_sizes):
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.gpus_per_node = torch.cuda.device_count()
        self.cuda = torch.device("cuda", torch.cuda.current_device())
        self.device = torch.cuda.get_device_name(self.cuda)
        # Every rank creates every group, in the same order (torch.distributed.new_group's contract).
        self.groups = {}
        for n in sorted(set(group_sizes) | {2}):
            for members in groups_of(self.world, n):
                group = dist.new_group(members)
                if self.rank in members:
                    self.groups[n] = group

    def _buffer(self, nbytes):
        return self.torch.empty(nbytes // ELEMENT_BYTES, dtype=self.torch.bfloat16, device=self.cuda)

    def prepare(self, kind, n, s):
        dist, group = self.dist, self.groups[n]
        if kind == "all_reduce":
            x = self._buffer(s)
            return lambda: dist.all_reduce(x, group=group)
        if kind == "all_gather":
            shard, full = self._buffer(s // n), self._buffer(s)
            return lambda: dist.all_gather_into_tensor(full, shard, group=group)
        if kind == "reduce_scatter":
            full, shard = self._buffer(s), self._buffer(s // n)
            return lambda: dist.reduce_scatter_tensor(shard, full, group=group)
        if kind == "all_to_all":
            send, recv = self._buffer(s), self._buffer(s)
            return lambda: dist.all_to_all_single(recv, send, group=group)
        if kind == "send_recv":
            # Even ranks send to the next odd rank, as a pipeline stage sends to the next.
            x = self._buffer(s)
            peer = self.rank + 1 if self.rank % 2 == 0 else self.rank - 1
            verb = dist.isend if self.rank % 2 == 0 else dist.irecv

            def run():
                for work in dist.batch_isend_irecv([dist.P2POp(verb, x, peer)]):
                    work.wait()
            return run
        raise ValueError("unknown collective %r" % kind)

    def time_us(self, op):
        self.dist.barrier()
        self.torch.cuda.synchronize()
        start = time.perf_counter()
        op()
        self.torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e6

    def slowest(self, us):
        t = self.torch.tensor([us], device=self.cuda)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return float(t.item())


def main_sweep(output, warmup, repeat, kinds=None, group_sizes=None):
    """Under torchrun: the all-reduce sweep over the world (no kinds given) or sweep_sets."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    if kinds is None:
        raw = sweep(warmup, repeat)
    else:
        sizes = parse_group_sizes(group_sizes or str(dist.get_world_size()), dist.get_world_size())
        if "send_recv" in kinds and dist.get_world_size() % 2:
            raise ValueError("send_recv pairs ranks: the world of %d GPUs is odd" % dist.get_world_size())
        sets = sweep_sets(TorchBackend(sizes), kinds, sizes, warmup, repeat)
        raw = None if sets is None else {"sets": sets}
    if raw is not None:
        text = json.dumps(raw, indent=1)
        if output:
            with open(output, "w") as f:
                f.write(text + "\n")
        else:
            print(text)
    dist.destroy_process_group()
