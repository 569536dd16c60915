#!/usr/bin/env python3
"""Measure op times on a real GPU with PyTorch and write them as a Proteus measured-time table.

The table replaces the cost model's roofline for matching ops (docs/fidelity/gemm.md, "Measured
costs"), as the original Proteus's GPU profiles did. Put its "measured_us" object in a config's
cluster.gpu, or in a cluster preset's "gpu":

    {"cluster": {"preset": "dgx-h200", "gpu": {"measured_us": {"matmul:M=4096,...:bf16": 512.3}}}}

Signatures are the simulator's (core/src/cost/cost_model.cpp, op_signature):
    matmul:M=<m>,N=<n>,K=<k>,B=<batch>:<precision>             C[M,N] = A[M,K] B[K,N] (x batch)
    attention:M=<s>,N=<s_kv>,K=<head_dim>,B=<batch*heads>:<p>   --attention fused: one fused kernel
                                                                (PyTorch SDPA: flash, cuDNN or
                                                                memory-efficient, as PyTorch picks);
                                                                unfused: QK^T, softmax, PV
    attention_backward:...                                      its backward (torch.autograd)
Measuring attention needs --attention, matching the model's flash_attention (true: fused).
FP8 GEMMs (":fp8") run as Transformer Engine's do: E4M3 operands with per-tensor fp32 scales and a
bf16 output through cuBLASLt (torch._scaled_mm; split accumulation, as TE's input- and
weight-gradient GEMMs and mamf-finder's FP8 ceiling), on a GPU with FP8 tensor cores (compute
capability 8.9 or later, or an MI300-class GPU); elsewhere the script stops with the reason.
For a transformer the script derives the signatures the compiler asks for (Megatron tensor
parallelism: per-GPU shapes of the projections, MLP, LM head and attention, as --framework launches
them: Megatron's fused linear_qkv, or TorchTitan's wq, wk, wv; under --precision fp8 the LM head and
attention in bf16, as the simulator costs them):

    python3 scripts/measure_ops.py --transformer hidden=8192,heads=64,kv_heads=8,ffn=28672,seq=4096,\\
        vocab=128256,mlp=swiglu --tp 8 --micro-batch 1 --precision bf16 --attention fused -o h200-llama70b.json
    python3 scripts/measure_ops.py --signature "matmul:M=8192,N=8192,K=8192,B=1:fp8"

Times are in microseconds. On a GPU each op first runs back to back for --sustain-s seconds (2 by
default), so that the GPU sits at its power limit as in a training run, and the mean of --repeat
back-to-back runs is its time; --sustain-s 0 times bursts instead (the median of --repeat
synchronised runs after --warmup). On a machine without CUDA it runs on the CPU, in bursts
(useful only to test the script: CPU times describe no GPU).

Collectives (scripts/collective_sweep.py): under torchrun, --collectives times all_reduce from
8 KiB to 1 GiB and writes the points; --fit-collectives turns such points into the cluster's
bus_efficiency and per-hop latency_us for one level, a fragment any config merges:

    torchrun --nproc-per-node 8 scripts/measure_ops.py --collectives -o ar8.json
    python3 scripts/measure_ops.py --fit-collectives ar8.json --level intra_node --link-GBps 450 -o nvlink.json
    {"cluster": {"preset": "dgx-h100", "intra_node": {...nvlink.json's cluster.intra_node...}}}

Every collective the simulator costs, over groups of 2, 4 and 8 GPUs of one node, fitted jointly
into latency_us and intra_node.collective_efficiency (one efficiency per collective and size):

    torchrun --nproc-per-node 8 scripts/measure_ops.py --collectives --kinds all --group-sizes 2,4,8 -o node.json
    python3 scripts/measure_ops.py --fit-collectives node.json --link-GBps 450 -o nvlink.json

Several points files of one node (collectives and group sizes, e.g. XLA's measured table through
scripts/xla_collective_table.py points) fit jointly: one per-hop latency_us and a
collective_efficiency table per collective and group size (collective_sweep.fit_flow_model):

    python3 scripts/xla_collective_table.py points tests/calibration/xla_collective_table.json --gpu sm_90 -o pts
    python3 scripts/measure_ops.py --fit-collectives pts/*.json --link-GBps 450
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")
_SIGNATURE = re.compile(r"^(matmul|attention|attention_backward):M=(\d+),N=(\d+),K=(\d+),B=(\d+):(\w+)$")


def parse_signature(text):
    """'matmul:M=..,N=..,K=..,B=..:bf16' -> (kind, m, n, k, batch, precision); ValueError if not one."""
    match = _SIGNATURE.match(text.strip())
    if not match or match.group(6) not in PRECISIONS:
        raise ValueError("not a GEMM-shaped op signature: %r" % text)
    kind, m, n, k, b, precision = match.groups()
    return kind, int(m), int(n), int(k), int(b), precision


def signature(kind, m, n, k, batch, precision):
    return "%s:M=%d,N=%d,K=%d,B=%d:%s" % (kind, m, n, k, batch, precision)


FRAMEWORKS = ("megatron", "deepspeed", "fsdp")


def transformer_signatures(model, tp=1, micro_batch=1, precision="bf16", framework="megatron"):
    """The GEMM-shaped signatures of one transformer layer (+ LM head) per GPU: each linear's
    forward, input-gradient and weight-gradient GEMM, attention's forward and backward.

    model: dict with hidden, heads, ffn, seq, vocab and optionally kv_heads, mlp ('gelu' or
    'swiglu'), head_dim. Shapes as core/src/model/transformer_builder.cpp builds them, divided by
    tensor parallelism as Megatron's column/row-parallel linears are: tokens M = micro_batch*seq.
    The kernels are the framework's (core/src/compile/linear_kernels.h): Megatron (and
    Megatron-DeepSpeed) runs Q, K and V as one GEMM, linear_qkv; a PyTorch model under FSDP runs
    wq, wk, wv and a gated MLP's w1, w3 as GEMMs of their own.
    """
    if framework not in FRAMEWORKS:
        raise ValueError("framework %r is not one of %s" % (framework, ", ".join(FRAMEWORKS)))
    h, a, s = int(model["hidden"]), int(model["heads"]), int(model["seq"])
    kvh = int(model.get("kv_heads", a))
    d = int(model.get("head_dim", h // a))
    f, v = int(model["ffn"]), int(model["vocab"])
    fc1 = 2 * f if model.get("mlp", "gelu") == "swiglu" else f
    for name, width in (("heads", a), ("kv_heads", kvh), ("ffn", f), ("vocab", v)):
        if width % tp:
            raise ValueError("tp=%d does not divide %s=%d" % (tp, name, width))
    tokens = micro_batch * s
    # Under FP8 only the layers' linears run FP8: the LM head (Megatron's output layer is not a
    # Transformer Engine module) and attention (TE runs it in bf16 unless fp8_dpa) stay bf16, as
    # CostModel::precision_of costs them.
    high = "bf16" if precision == "fp8" else precision
    if framework == "fsdp":
        projections = [
            ("matmul", tokens, a * d // tp, h, 1, precision),    # wq
            ("matmul", tokens, kvh * d // tp, h, 1, precision),  # wk, wv
            ("matmul", tokens, f // tp, h, 1, precision),        # w1 (and w3 when gated)
        ]
    else:
        projections = [
            ("matmul", tokens, (a + 2 * kvh) * d // tp, h, 1, precision),  # linear_qkv
            ("matmul", tokens, fc1 // tp, h, 1, precision),                # linear_fc1
        ]
    shapes = projections + [
        ("matmul", tokens, h, a * d // tp, 1, precision),        # o_proj
        ("matmul", tokens, h, f // tp, 1, precision),            # fc2
        ("matmul", tokens, v // tp, h, 1, high),                 # lm_head
        ("attention", s, s, d, micro_batch * a // tp, high),
        ("attention_backward", s, s, d, micro_batch * a // tp, high),
    ]
    out = []
    for shape in shapes:
        for sig in [signature(*s) for s in linear_pass_shapes(shape)]:
            if sig not in out:
                out.append(sig)
    return out


def linear_pass_shapes(shape):
    """A linear layer's three GEMMs (core/src/compile/linear_gemm_shapes.h): the forward
    tokens x out x in, the input gradient tokens x in x out and the weight gradient out x in x
    tokens; attention's signatures as they are."""
    kind, m, n, k, b, precision = shape
    if kind != "matmul":
        return [shape]
    return [shape, (kind, m, k, n, b, precision), (kind, n, k, m, b, precision)]


def _dtype(torch, precision):
    if precision == "fp16":
        return torch.float16
    if precision == "bf16":
        return torch.bfloat16
    return torch.float32


ATTENTION_KINDS = ("fused", "unfused")


def _fp8_dtype(torch):
    """E4M3 as the GPU's FP8 units take it: OCP float8_e4m3fn on NVIDIA, e4m3fnuz on MI300."""
    return torch.float8_e4m3fnuz if getattr(torch.version, "hip", None) else torch.float8_e4m3fn


def fp8_unsupported(torch, device, m, n, k):
    """Why an FP8 GEMM of this shape cannot be timed here, or None."""
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return "FP8 GEMMs are timed with torch._scaled_mm, which needs PyTorch 2.1 or later (this is %s)" % (
            torch.__version__)
    if not device.startswith("cuda"):
        return "FP8 GEMMs need a GPU with FP8 tensor cores; the device is %s" % device
    major, minor = torch.cuda.get_device_capability(device)
    if not getattr(torch.version, "hip", None) and (major, minor) < (8, 9):
        return "%s (compute capability %d.%d) has no FP8 tensor cores: 8.9 (Ada) or later is needed" % (
            torch.cuda.get_device_name(device), major, minor)
    if m % 16 or n % 16 or k % 16:
        return "cuBLASLt's FP8 GEMM needs M, N and K multiples of 16, not M=%d, N=%d, K=%d" % (m, n, k)
    return None


def _matmul_op(torch, device, precision, m, n, k, b):
    """A callable running the GEMM C[M,N] = A[M,K] B[K,N] (b times)."""
    if precision == "fp8":
        why = fp8_unsupported(torch, device, m, n, k)
        if why:
            raise ValueError(why)
        # Transformer Engine's FP8 GEMM: E4M3 operands, per-tensor fp32 scales, bf16 output, A
        # row-major and B column-major (cuBLASLt's TN layout). Split accumulation
        # (use_fast_accum=False), as TE's input- and weight-gradient GEMMs run (two of the three a
        # signature stands for) and mamf-finder's FP8 ceiling was measured.
        fp8 = _fp8_dtype(torch)
        xs = [torch.randn(m, k, device=device).to(fp8) for _ in range(b)]
        ws = [torch.randn(n, k, device=device).to(fp8) for _ in range(b)]
        one = torch.ones((), device=device, dtype=torch.float32)

        def run():
            for x, w in zip(xs, ws):
                torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=False)
        return run
    dtype = _dtype(torch, precision)
    x = torch.randn(b, m, k, device=device, dtype=dtype)
    w = torch.randn(b, k, n, device=device, dtype=dtype)

    def run():
        torch.bmm(x, w) if b > 1 else torch.mm(x[0], w[0])
    return run


def _attention_op(torch, device, precision, kind, m, n, k, b, attention, causal):
    """A callable running attention (or its backward) over b heads of M queries and N keys."""
    if precision == "fp8":
        raise ValueError("%s in FP8 (Transformer Engine's fp8_dpa) is not timed by this script; under FP8 "
                         "training attention otherwise runs, and is keyed, in bf16" % kind)
    dtype = _dtype(torch, precision)
    backward = kind == "attention_backward"
    q = torch.randn(1, b, m, k, device=device, dtype=dtype, requires_grad=backward)
    kk = torch.randn(1, b, n, k, device=device, dtype=dtype, requires_grad=backward)
    vv = torch.randn(1, b, n, k, device=device, dtype=dtype, requires_grad=backward)

    if attention == "fused":
        # One fused kernel (flash, cuDNN or memory-efficient, whichever PyTorch's SDPA picks).
        def forward():
            return torch.nn.functional.scaled_dot_product_attention(q, kk, vv, is_causal=causal)
    else:
        # Unfused attention as Megatron runs it: scores, scaled softmax, probabilities x V.
        def forward():
            p = torch.softmax(torch.matmul(q, kk.transpose(-1, -2)) * (k ** -0.5), dim=-1)
            return torch.matmul(p, vv)

    if not backward:
        return forward
    out = forward()
    grad = torch.randn_like(out)

    def run():
        torch.autograd.grad(out, (q, kk, vv), grad, retain_graph=True)
    return run


def measure(signatures, device=None, warmup=3, repeat=10, sustain_s=0.0, attention=None, causal=True):
    """Time each signature with PyTorch (time_runs); returns {signature: microseconds}.

    attention: "fused" or "unfused", required when a signature is attention; causal: the mask of
    fused attention. ValueError for what cannot be measured here (the reason in its message).
    """
    import torch  # imported here: the signature helpers work without PyTorch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    table = {}
    for text in signatures:
        kind, m, n, k, b, precision = parse_signature(text)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        if kind == "matmul":
            run = _matmul_op(torch, device, precision, m, n, k, b)
        else:
            if attention not in ATTENTION_KINDS:
                raise ValueError("%s: say whether attention is fused (the model's flash_attention) or unfused" % text)
            run = _attention_op(torch, device, precision, kind, m, n, k, b, attention, causal)
        table[text] = time_runs(run, sync, warmup, repeat, sustain_s)
    return table


# Longer than any clock settles (mamf-finder's MSMF settles for at most 20 s); a bound, so that a
# typo cannot hold the GPU for hours.
MAX_SUSTAIN_S = 600.0


def time_runs(run, sync, warmup, repeat, sustain_s, clock=time.perf_counter):
    """Microseconds per call of run().

    Burst (sustain_s 0): the median of `repeat` synchronised calls after `warmup`; each starts on
    an idle GPU at its boost clock, as XLA's matmul table and mamf-finder's MAMF time GEMMs.
    Sustained (sustain_s > 0): calls back to back, untimed, for sustain_s seconds, so that a GEMM
    that draws more than the power limit at boost settles at the clock a training run holds it at
    (docs/fidelity/gemm.md, "Sustained GEMMs"); then `repeat` back-to-back calls timed as one window,
    their mean. A kernel under the limit times the same either way.
    """
    for _ in range(warmup):
        run()
    sync()
    if sustain_s <= 0:
        times = []
        for _ in range(repeat):
            start = clock()
            run()
            sync()
            times.append((clock() - start) * 1e6)
        return statistics.median(times)
    start, calls = clock(), 0
    while clock() - start < sustain_s:
        run()
        calls += 1
        if calls % 16 == 0:
            sync()  # keep the launch queue short, so that the clock measures the GPU's work
    sync()
    start = clock()
    for _ in range(repeat):
        run()
    sync()
    return (clock() - start) * 1e6 / repeat


def _key_values(text):
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        out[key.strip()] = value.strip()
    return out


def _collectives(args, parser):
    import collective_sweep

    if args.collectives:
        kinds = None
        try:
            if args.kinds or args.group_sizes:
                kinds = collective_sweep.parse_kinds(args.kinds or "all_reduce")
                # torchrun sets WORLD_SIZE: check the group sizes before starting NCCL.
                world = int(os.environ.get("WORLD_SIZE", "0"))
                if world < 2:
                    parser.error("--collectives runs under torchrun with 2 or more processes (WORLD_SIZE unset)")
                collective_sweep.parse_group_sizes(args.group_sizes or str(world), world)
            collective_sweep.main_sweep(args.output, args.warmup, args.repeat, kinds, args.group_sizes)
        except ValueError as e:
            parser.error(str(e))
        return 0
    if not args.link_GBps:
        parser.error("--fit-collectives needs --link-GBps (per GPU, per direction, at --level)")
    sets = []
    for path in args.fit_collectives:
        with open(path) as f:
            data = json.load(f)
        # A sweep over kinds and group sizes writes {"sets": [...]}; the all-reduce sweep one set.
        sets.extend(data["sets"] if isinstance(data, dict) and "sets" in data else [data])
    try:
        if len(sets) == 1 and sets[0].get("collective") == "all_reduce":
            fragment = collective_sweep.fragment(sets[0], args.level, args.link_GBps, args.base_latency_us)
        else:
            # Several collectives and group sizes inside one node: the joint fit.
            if args.level != "intra_node":
                parser.error("a fit of several collectives is for --level intra_node")
            where = "; ".join(sorted({s.get("device", "unknown device") for s in sets}))
            fragment = collective_sweep.flow_fragment(sets, args.link_GBps, args.base_latency_us, where)
        text = json.dumps(fragment, indent=2)
    except (KeyError, ValueError) as e:
        parser.error("%s: %s" % (" ".join(args.fit_collectives), e))
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signature", action="append", default=[], help="an op signature to measure (repeatable)")
    parser.add_argument("--signatures", help="a file of signatures, one per line")
    parser.add_argument("--transformer", help="hidden=..,heads=..,ffn=..,seq=..,vocab=..[,kv_heads=..,mlp=swiglu]")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--framework", default="megatron", choices=FRAMEWORKS,
                        help="whose kernels --transformer lists: megatron and deepspeed fuse Q, K, V into one "
                             "GEMM; fsdp (TorchTitan) runs wq, wk, wv and w1, w3 apart")
    parser.add_argument("--precision", default="bf16", choices=PRECISIONS)
    parser.add_argument("--attention", choices=ATTENTION_KINDS,
                        help="how attention runs, as the model's flash_attention says: fused (one SDPA kernel) or "
                             "unfused (Megatron's QK^T, softmax, PV); needed to measure attention signatures")
    parser.add_argument("--no-causal", dest="causal", action="store_false",
                        help="fused attention without the causal mask (default: causal, as GPT-style models)")
    parser.add_argument("--device", help="cuda, cuda:1, cpu (default: cuda when available)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--sustain-s", type=float,
                        help="seconds each op runs back to back before it is timed, so that the GPU sits at its "
                             "power limit as in training (default: 2 on a GPU, 0 on the CPU); 0 times bursts")
    parser.add_argument("--list", action="store_true", help="print the signatures and exit (no PyTorch needed)")
    parser.add_argument("-o", "--output", help="write {\"measured_us\": {...}} here (default: stdout)")
    parser.add_argument("--collectives", action="store_true",
                        help="sweep collective sizes (run under torchrun): all_reduce over the world, or --kinds")
    parser.add_argument("--kinds", help="with --collectives: a comma list of all_reduce, all_gather, "
                                        "reduce_scatter, all_to_all, send_recv, or all")
    parser.add_argument("--group-sizes", help="with --collectives: group sizes, e.g. 2,4,8 (default: the world)")
    parser.add_argument("--fit-collectives", metavar="POINTS", nargs="+",
                        help="fit --collectives outputs (one all_reduce file, or several collectives and group "
                             "sizes inside one node: latency_us and collective_efficiency) to link constants")
    parser.add_argument("--level", default="intra_node", choices=("intra_node", "inter_node"))
    parser.add_argument("--link-GBps", type=float, help="per-GPU link bandwidth per direction at --level")
    parser.add_argument("--base-latency-us", type=float, default=8.4, help="NCCL's fixed cost per call")
    args = parser.parse_args(argv)
    if args.sustain_s is not None and not 0 <= args.sustain_s <= MAX_SUSTAIN_S:
        parser.error("--sustain-s must be 0 to %g seconds, not %g" % (MAX_SUSTAIN_S, args.sustain_s))

    if args.collectives or args.fit_collectives:
        return _collectives(args, parser)

    signatures = list(args.signature)
    if args.signatures:
        with open(args.signatures) as f:
            signatures += [line.strip() for line in f if line.strip() and not line.startswith("#")]
    if args.transformer:
        signatures += transformer_signatures(_key_values(args.transformer), args.tp, args.micro_batch, args.precision,
                                             args.framework)
    for text in signatures:
        parse_signature(text)
    if not signatures:
        parser.error("nothing to measure: give --signature, --signatures or --transformer")
    if args.list:
        print("\n".join(signatures))
        return 0
    if args.attention is None and any(parse_signature(t)[0] != "matmul" for t in signatures):
        parser.error("attention signatures need --attention fused or unfused (the model's flash_attention)")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    sustain_s = args.sustain_s if args.sustain_s is not None else (2.0 if device.startswith("cuda") else 0.0)
    try:
        table = measure(signatures, device, args.warmup, args.repeat, sustain_s, args.attention, args.causal)
    except ValueError as e:
        parser.error(str(e))
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    how = ("mean of %d back-to-back runs after %g s of back-to-back runs (sustained)" % (args.repeat, sustain_s)
           if sustain_s > 0 else "median of %d synchronised runs (bursts)" % args.repeat)
    if args.attention:
        how += "; attention %s%s" % (args.attention, ", causal" if args.causal and args.attention == "fused" else "")
    result = {
        "measured_us": table,
        "source": "scripts/measure_ops.py on %s, PyTorch %s, %s" % (name, torch.__version__, how),
    }
    text = json.dumps(result, indent=2, sort_keys=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
