#!/usr/bin/env python3
"""Tests of scripts/measure_ops.py. The signature helpers need no PyTorch; the timing tests run
only where torch imports (CI has none: they are skipped, not failed). Run: python3 tests/test_measure_ops.py"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "measure_ops.py")
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import measure_ops  # noqa: E402

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


class Signatures(unittest.TestCase):
    def test_round_trip(self):
        text = "matmul:M=2048,N=4608,K=12288,B=1:fp16"
        self.assertEqual(measure_ops.parse_signature(text), ("matmul", 2048, 4608, 12288, 1, "fp16"))
        self.assertEqual(measure_ops.signature(*measure_ops.parse_signature(text)), text)

    def test_rejects_non_gemm_signatures(self):
        for bad in ("norm:flops=1,bytes=2:bf16", "matmul:M=1,N=2,K=3:bf16", "matmul:M=1,N=2,K=3,B=1:int4"):
            with self.assertRaises(ValueError):
                measure_ops.parse_signature(bad)

    def test_megatron_layer_shapes(self):
        # GPT-3 175B on TP 8, micro-batch 1, seq 2048: tokens 2048; per GPU Megatron's fused
        # linear_qkv 3 x 1536 = 4608, o_proj K 1536, fc1 N 6144, fc2 K 6144, lm_head N 6400;
        # attention batch 96/8 = 12 heads.
        sigs = measure_ops.transformer_signatures(
            {"hidden": 12288, "heads": 96, "ffn": 49152, "seq": 2048, "vocab": 51200}, tp=8, precision="fp16")
        self.assertIn("matmul:M=2048,N=4608,K=12288,B=1:fp16", sigs)
        self.assertIn("matmul:M=2048,N=12288,K=4608,B=1:fp16", sigs)  # its input gradient
        self.assertNotIn("matmul:M=2048,N=3072,K=12288,B=1:fp16", sigs)  # no separate [K | V] GEMM
        self.assertIn("matmul:M=2048,N=12288,K=1536,B=1:fp16", sigs)
        self.assertIn("matmul:M=2048,N=6144,K=12288,B=1:fp16", sigs)
        self.assertIn("matmul:M=2048,N=12288,K=6144,B=1:fp16", sigs)
        self.assertIn("matmul:M=2048,N=6400,K=12288,B=1:fp16", sigs)
        self.assertIn("attention:M=2048,N=2048,K=128,B=12:fp16", sigs)
        self.assertIn("attention_backward:M=2048,N=2048,K=128,B=12:fp16", sigs)
        # fc1's input gradient (tokens x in x out) and weight gradient (out x in x tokens)
        self.assertIn("matmul:M=2048,N=12288,K=6144,B=1:fp16", sigs)
        self.assertIn("matmul:M=6144,N=12288,K=2048,B=1:fp16", sigs)
        with self.assertRaises(ValueError):
            measure_ops.transformer_signatures({"hidden": 64, "heads": 3, "ffn": 256, "seq": 8, "vocab": 10}, tp=2)

    def test_fp8_layers_keep_the_lm_head_and_attention_in_bf16(self):
        # As CostModel::precision_of costs them: TE's linears FP8, Megatron's output layer (not a TE
        # module) and attention (no fp8_dpa) bf16.
        sigs = measure_ops.transformer_signatures(
            {"hidden": 1024, "heads": 16, "ffn": 4096, "seq": 512, "vocab": 8192}, tp=4, precision="fp8")
        self.assertIn("matmul:M=512,N=768,K=1024,B=1:fp8", sigs)   # linear_qkv
        self.assertIn("matmul:M=512,N=1024,K=1024,B=1:fp8", sigs)  # fc1 (and fc2: same shape)
        self.assertIn("matmul:M=512,N=2048,K=1024,B=1:bf16", sigs)  # lm_head
        self.assertIn("attention:M=512,N=512,K=64,B=4:bf16", sigs)
        self.assertIn("attention_backward:M=512,N=512,K=64,B=4:bf16", sigs)
        self.assertFalse(any(s.startswith("attention") and s.endswith(":fp8") for s in sigs))

    def test_fsdp_runs_wq_wk_wv_w1_w3_apart(self):
        # TorchTitan's Llama 3 8B on TP 2: wq 4096 / 2, wk = wv 8 x 128 / 2, w1 = w3 14336 / 2.
        sigs = measure_ops.transformer_signatures(
            {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "seq": 8192, "vocab": 128256,
             "mlp": "swiglu"}, tp=2, framework="fsdp")
        self.assertIn("matmul:M=8192,N=2048,K=4096,B=1:bf16", sigs)  # wq
        self.assertIn("matmul:M=8192,N=512,K=4096,B=1:bf16", sigs)   # wk, wv
        self.assertIn("matmul:M=8192,N=7168,K=4096,B=1:bf16", sigs)  # w1, w3
        self.assertNotIn("matmul:M=8192,N=14336,K=4096,B=1:bf16", sigs)
        with self.assertRaises(ValueError):
            measure_ops.transformer_signatures({"hidden": 64, "heads": 4, "ffn": 256, "seq": 8, "vocab": 16},
                                               framework="jax")

    def test_attention_needs_to_be_told_fused_or_unfused(self):
        # Checked before PyTorch is imported: a fused model timed with unfused attention (or the
        # reverse) would replace its attention cost with another kernel's.
        done = subprocess.run([sys.executable, SCRIPT, "--signature", "attention:M=64,N=64,K=16,B=2:bf16",
                               "--device", "cpu"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 2)
        self.assertIn("--attention fused or unfused", done.stderr)

    def test_list_needs_no_torch(self):
        out = subprocess.run([sys.executable, SCRIPT, "--list", "--signature", "matmul:M=8,N=8,K=8,B=1:fp32"],
                             check=True, capture_output=True, text=True).stdout
        self.assertEqual(out.split(), ["matmul:M=8,N=8,K=8,B=1:fp32"])


import collective_sweep  # noqa: E402


def synthetic_points(n, link_GBps, efficiency, alpha_us, base_us=8.4):
    """All-reduce times as Proteus's ring model gives them (collective_sweep's docstring)."""
    factor = 2.0 * (n - 1) / n
    return {"collective": "all_reduce", "world": n, "gpus_per_node": 8, "device": "synthetic",
            "points": [[s, base_us + 2 * (n - 1) * alpha_us + factor * s / (link_GBps * 1e9 * efficiency) * 1e6]
                       for s in collective_sweep.SIZES]}


class CollectiveFit(unittest.TestCase):
    def test_recovers_the_constants_it_was_made_with(self):
        # 8 GPUs on 450 GB/s NVLink at 80% bus efficiency and 3.4 us per hop (NCCL's NVLink hwLat):
        # a 1 GiB all-reduce moves 2*7/8 GiB = 1.879 GB per GPU at 360 GB/s in 5219.5 us, plus
        # 8.4 + 14 x 3.4 = 56.0 us of latency: busbw 1.879 GB / 5275.5 us = 356.2 GB/s.
        raw = synthetic_points(8, 450, 0.80, 3.4)
        eff, alpha, busbw = collective_sweep.fit(raw, "intra_node", 450)
        self.assertAlmostEqual(eff, 0.80, places=6)
        self.assertAlmostEqual(alpha, 3.4, places=6)
        self.assertAlmostEqual(busbw, 356.2, delta=0.1)

    def test_fragment_is_a_cluster_override_with_sources(self):
        raw = synthetic_points(16, 50, 0.9, 9.6)
        frag = collective_sweep.fragment(raw, "inter_node", 50)
        node = frag["cluster"]["inter_node"]
        self.assertEqual(set(node), {"bus_efficiency", "latency_us", "sources"})
        self.assertAlmostEqual(node["bus_efficiency"], 0.9, places=4)
        self.assertAlmostEqual(node["latency_us"], 9.6, places=3)
        self.assertEqual(set(node["sources"]), {"bus_efficiency", "latency_us"})

    def test_rejects_what_it_cannot_fit(self):
        raw = synthetic_points(8, 450, 0.8, 3.4)
        for bad in (dict(raw, collective="all_gather"), dict(raw, world=1),
                    dict(raw, points=[p for p in raw["points"] if p[0] < 64 * 1024 ** 2])):
            with self.assertRaises(ValueError):
                collective_sweep.fit(bad, "intra_node", 450)
        with self.assertRaises(ValueError):
            collective_sweep.fit(raw, "nvlink", 450)

    def test_fit_from_the_command_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "points.json")
            with open(path, "w") as f:
                json.dump(synthetic_points(8, 450, 0.75, 2.0), f)
            out = subprocess.run([sys.executable, SCRIPT, "--fit-collectives", path, "--level", "intra_node",
                                  "--link-GBps", "450"], check=True, capture_output=True, text=True).stdout
            self.assertAlmostEqual(json.loads(out)["cluster"]["intra_node"]["bus_efficiency"], 0.75, places=4)


import xla_collective_table  # noqa: E402

# Three entries as XLA's collective_interpolator_data.h writes them (openxla/xla at 040b3849,
# "sm_90"; fields trimmed to those the extraction reads, values verbatim).
XLA_EXCERPT = """
  entries {
    key: "sm_90"
    value {
      entries {
        instruction {
          opcode: "all-reduce"
          shape {
            element_type: F32
            dimensions: 134217728
            layout { minor_to_major: 0 tail_padding_alignment_in_elements: 1 }
            is_dynamic_dimension: false
          }
          channel_id: 1
          use_global_device_ids: true
          iota_collective_device_list {
            num_replica_groups: 1
            num_devices_per_group: 8
            iota_reshape_dims: 8
            iota_transpose_perm: 0
          }
        }
        network_throughput_bytes_per_sec: 220787703321
      }
      entries {
        instruction {
          opcode: "reduce-scatter"
          shape {
            element_type: F32
            dimensions: 67108864
            layout { minor_to_major: 0 tail_padding_alignment_in_elements: 1 }
            is_dynamic_dimension: false
          }
          dimensions: 0
          channel_id: 1
          use_global_device_ids: true
          iota_collective_device_list {
            num_replica_groups: 1
            num_devices_per_group: 8
            iota_reshape_dims: 8
            iota_transpose_perm: 0
          }
        }
        network_throughput_bytes_per_sec: 376090719201
      }
      entries {
        instruction {
          name: "collective-permute"
          opcode: "collective-permute"
          shape {
            element_type: F32
            dimensions: 32768
            layout { minor_to_major: 0 tail_padding_alignment_in_elements: 1 }
            is_dynamic_dimension: false
          }
          metadata {}
          channel_id: 1
          id: 4294967299
          operand_ids: 4294967298
          source_target_pairs { target: 4 }
          source_target_pairs { source: 1 target: 5 }
          source_target_pairs { source: 2 target: 6 }
          source_target_pairs { source: 3 target: 7 }
          frontend_attributes {}
          statistics_viz {}
        }
        fingerprint: "d28e01182634547a1027d109446f3b88"
        network_throughput_bytes_per_sec: 6836280185
      }
    }
  }
"""


class XlaCollectiveTable(unittest.TestCase):
    DATA = os.path.join(HERE, "calibration", "xla_collective_table.json")

    def test_extracts_the_textproto(self):
        table = xla_collective_table.extract(XLA_EXCERPT)
        self.assertEqual(table, {"sm_90": [
            {"op": "all-reduce", "groups": 1, "size": 8, "elements": 134217728, "Bps": 220787703321},
            {"op": "reduce-scatter", "groups": 1, "size": 8, "elements": 67108864, "Bps": 376090719201},
            {"op": "collective-permute", "pairs": "oneway", "elements": 32768, "Bps": 6836280185}]})
        # The committed data file holds these three entries verbatim.
        with open(self.DATA) as f:
            committed = json.load(f)["gpus"]["sm_90"]
        for entry in table["sm_90"]:
            self.assertIn(entry, committed)

    def test_bytes_follow_the_generator(self):
        # collective_perf_table_gen.cc: reduce-scatter's tensor size is its input, the output
        # (the stored dimensions) times the group: 67108864 x 4 B x 8 = 2 GiB in 5710.0 us.
        rs = {"op": "reduce-scatter", "groups": 1, "size": 8, "elements": 67108864, "Bps": 376090719201}
        self.assertEqual(xla_collective_table.collective_bytes(rs), 2 * 1024 ** 3)
        ar = {"op": "all-reduce", "groups": 1, "size": 8, "elements": 134217728, "Bps": 220787703321}
        self.assertEqual(xla_collective_table.collective_bytes(ar), 512 * 1024 ** 2)
        for pairs, name in (([(0, 1), (1, 0), (2, 3), (3, 2)], "mutual"), ([(i, (i + 1) % 8) for i in range(8)], "ring")):
            self.assertEqual(xla_collective_table.permute_pattern(pairs), name)
        with self.assertRaises(ValueError):
            xla_collective_table.permute_pattern([(0, 3), (3, 5)])

    def test_committed_table_is_complete(self):
        with open(self.DATA) as f:
            data = json.load(f)
        for gpu in ("sm_90", "sm_100"):
            sets = xla_collective_table.point_sets(data, gpu)
            self.assertEqual(len(sets), 15)  # 4 collectives x 3 group shapes + 3 permute patterns
            self.assertTrue(all(len(s["points"]) == 22 for s in sets.values()))
        with self.assertRaises(ValueError):
            xla_collective_table.point_sets(data, "sm_80")


def flow_points(kind, n, efficiency, alpha_us, link_GBps=450, base_us=8.4):
    """Times of one collective inside a node as the flow model gives them."""
    sizes = [2 ** i for i in range(16, 32)]
    return {"collective": kind, "world": n, "points": [
        [s, collective_sweep.model_us(kind, n, s, alpha_us, efficiency, link_GBps, base_us)] for s in sizes]}


class FlowModelFit(unittest.TestCase):
    def test_recovers_the_constants_it_was_made_with(self):
        # alpha 2.5 us on a 0.01 us grid; efficiencies per (kind, n) as made.
        made = {("all_reduce", 8): 0.85, ("all_reduce", 2): 0.5, ("all_gather", 8): 0.75,
                ("all_gather", 2): 0.55, ("reduce_scatter", 8): 0.7, ("reduce_scatter", 2): 0.4,
                ("all_to_all", 8): 0.6, ("all_to_all", 2): 0.5}
        sets = [flow_points(k, n, e, 2.5) for (k, n), e in made.items()] + [flow_points("send_recv", 2, 0.65, 2.5)]
        alpha, eff, rms = collective_sweep.fit_flow_model(sets, 450)
        self.assertAlmostEqual(alpha, 2.5, places=9)
        self.assertLess(rms, 1e-9)
        for c, e in made.items():
            self.assertAlmostEqual(eff[c], e, places=9)
        self.assertAlmostEqual(eff["send_recv"], 0.65, places=9)
        node = collective_sweep.flow_fragment(sets, 450)["cluster"]["intra_node"]
        self.assertEqual(node["collective_efficiency"]["members"], [2, 8])
        self.assertEqual(node["collective_efficiency"]["all_reduce"], [0.5, 0.85])
        self.assertEqual(set(node["sources"]), {"latency_us", "collective_efficiency"})

    def test_rejects_what_it_cannot_fit(self):
        with self.assertRaises(ValueError):
            collective_sweep.fit_flow_model([dict(flow_points("all_reduce", 8, 0.8, 1), collective="broadcast")], 450)
        with self.assertRaises(ValueError):
            collective_sweep.fit_flow_model([dict(flow_points("all_reduce", 8, 0.8, 1), world=1)], 450)
        with self.assertRaises(ValueError):  # a group of 16 on nodes of 8: not an intra-node point
            collective_sweep.fit_flow_model([dict(flow_points("all_reduce", 16, 0.8, 1), gpus_per_node=8)], 450)
        with self.assertRaises(ValueError):  # a size missing for one kind
            collective_sweep.flow_fragment([flow_points("all_reduce", 8, 0.8, 1),
                                            flow_points("all_gather", 4, 0.8, 1)], 450)

    def test_fits_the_committed_table_from_the_command_line(self):
        # The dgx-h100 and dgx-b200 presets' intra-node constants are this fit's output
        # (NVLink 4: 450 GB/s per GPU per direction; NVLink 5: 900).
        for gpu, link, name in (("sm_90", "450", "dgx-h100"), ("sm_100", "900", "dgx-b200")):
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "xla_collective_table.py"),
                                "points", XlaCollectiveTable.DATA, "--gpu", gpu, "-o", tmp], check=True)
                files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp))
                out = subprocess.run([sys.executable, SCRIPT, "--fit-collectives"] + files + ["--link-GBps", link],
                                     check=True, capture_output=True, text=True).stdout
            node = json.loads(out)["cluster"]["intra_node"]
            with open(os.path.join(HERE, "..", "core", "presets", "clusters", name + ".json")) as f:
                preset = json.load(f)["intra_node"]
            self.assertEqual(node["latency_us"], preset["latency_us"], name)
            self.assertEqual(node["collective_efficiency"], preset["collective_efficiency"], name)


class FakeNode:
    """sweep_sets' backend on a node that follows the flow model exactly: 8 GPUs on 450 GB/s,
    alpha 2.5 us per hop, one efficiency per (kind, n); records what the sweep asked of it."""

    def __init__(self, efficiency, rank=0, world=8):
        self.efficiency, self.rank, self.world = efficiency, rank, world
        self.gpus_per_node, self.device = 8, "fake node"
        self.prepared, self.runs = [], 0

    def prepare(self, kind, n, s):
        self.prepared.append((kind, n, s))

        def op():
            self.runs += 1
            return collective_sweep.model_us(kind, n, s, 2.5, self.efficiency[kind, n], 450)
        return op

    def time_us(self, op):
        return op()

    def slowest(self, us):
        return us


class CollectiveSweep(unittest.TestCase):
    MADE = {("all_reduce", 2): 0.5, ("all_reduce", 4): 0.7, ("all_reduce", 8): 0.85,
            ("all_gather", 2): 0.55, ("all_gather", 4): 0.65, ("all_gather", 8): 0.75,
            ("reduce_scatter", 2): 0.4, ("reduce_scatter", 4): 0.6, ("reduce_scatter", 8): 0.7,
            ("all_to_all", 2): 0.5, ("all_to_all", 4): 0.55, ("all_to_all", 8): 0.6, ("send_recv", 2): 0.65}

    def test_every_kind_and_group_size_feeds_the_joint_fit(self):
        node = FakeNode(self.MADE)
        sets = collective_sweep.sweep_sets(node, list(collective_sweep.SWEEP_KINDS), [2, 4, 8], warmup=1, repeat=3)
        # One set per collective and group size; send-recv over pairs only.
        self.assertEqual([(s["collective"], s["world"]) for s in sets],
                         [(k, n) for k in collective_sweep.KIND_KEYS for n in (2, 4, 8)] + [("send_recv", 2)])
        self.assertEqual([s["concurrent_groups"] for s in sets[:3]], [4, 2, 1])
        self.assertEqual(node.runs, len(sets) * len(collective_sweep.SIZES) * (1 + 3))
        # Every member's shard is whole bf16 elements.
        for kind, n, size in node.prepared:
            self.assertEqual(size % (2 * n), 0, (kind, n, size))
        fragment = collective_sweep.flow_fragment(sets, 450)["cluster"]["intra_node"]
        self.assertAlmostEqual(fragment["latency_us"], 2.5, places=2)
        table = fragment["collective_efficiency"]
        self.assertEqual(table["members"], [2, 4, 8])
        for kind in collective_sweep.KIND_KEYS:
            self.assertEqual(table[kind], [self.MADE[kind, n] for n in (2, 4, 8)], kind)
        self.assertEqual(table["send_recv"], 0.65)

    def test_only_rank_zero_writes(self):
        self.assertIsNone(collective_sweep.sweep_sets(FakeNode(self.MADE, rank=3), ["all_reduce"], [8], 0, 1))

    def test_groups_and_sizes(self):
        self.assertEqual(collective_sweep.groups_of(8, 4), [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(collective_sweep.message_bytes(8 * 1024, 8), 8 * 1024)
        self.assertEqual(collective_sweep.message_bytes(1000, 3), 996)  # 166 bf16 per member
        self.assertEqual(collective_sweep.parse_kinds("all"), list(collective_sweep.SWEEP_KINDS))
        self.assertEqual(collective_sweep.parse_group_sizes("2,4,8", 16), [2, 4, 8])
        for bad in ("broadcast", "all_reduce,gather", ""):
            with self.assertRaises(ValueError):
                collective_sweep.parse_kinds(bad)
        for bad in ("3", "1", "2,x", ""):
            with self.assertRaises(ValueError):
                collective_sweep.parse_group_sizes(bad, 8)
        with self.assertRaises(ValueError):
            collective_sweep.groups_of(6, 4)

    def test_command_line_checks_before_starting_nccl(self):
        # No torchrun, no PyTorch needed: a bad flag is named before anything is imported.
        env = dict(os.environ, WORLD_SIZE="8")
        for args, word in ((["--kinds", "gather"], "--kinds"), (["--kinds", "all", "--group-sizes", "3"], "--group-sizes")):
            run = subprocess.run([sys.executable, SCRIPT, "--collectives"] + args, env=env,
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn(word, run.stderr)
        env.pop("WORLD_SIZE")
        run = subprocess.run([sys.executable, SCRIPT, "--collectives", "--kinds", "all"], env=env,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertIn("torchrun", run.stderr)

    def test_fit_reads_a_sweep_file_of_sets(self):
        sets = collective_sweep.sweep_sets(FakeNode(self.MADE), list(collective_sweep.SWEEP_KINDS), [2, 4, 8], 0, 1)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "node.json")
            with open(path, "w") as f:
                json.dump({"sets": sets}, f)
            out = subprocess.run([sys.executable, SCRIPT, "--fit-collectives", path, "--link-GBps", "450"],
                                 check=True, capture_output=True, text=True).stdout
        self.assertEqual(json.loads(out)["cluster"]["intra_node"]["collective_efficiency"]["all_gather"],
                         [0.55, 0.65, 0.75])


import xla_matmul_table  # noqa: E402

# XLA's matmul_interpolator_data.h as written (tensorflow/tensorflow a305421c, "sm_100": the
# batch-1 4096^3 entry, a batch-2 one at m 256 (not kept: its rows are the batch-1 grid's) and
# the batch-4 one at m 4096 (kept: the row 16384), values verbatim), and an older copy's
# upper-case dtype keys (thenexthub/Machina's third_party/xla copy, "sm_90", b 1 m 512 n 256 k 256).
XLA_MATMUL_EXCERPT = """
constexpr char kDefaultMatmulPTable[] = R"pb(
  entries {
    key: "sm_100"
    value {
      entries {
        b: 1
        m: 4096
        n: 4096
        k: 4096
        flops { key: "bf16xbf16->bf16" value: 1416867213789406 }
        flops { key: "f32xf32->f32" value: 757940978271899 }
        flops { key: "f8e4m3fnxf8e4m3fn->bf16" value: 2764981863158106 }
        flops { key: "f8e4m3fnxf8e5m2->bf16" value: 2785491852050019 }
        flops { key: "f8e5m2xf8e4m3fn->bf16" value: 2784419640842787 }
      }
      entries {
        b: 2
        m: 256
        n: 256
        k: 256
        flops { key: "bf16xbf16->bf16" value: 13527285627897 }
        flops { key: "f32xf32->f32" value: 11212842773600 }
        flops { key: "f8e4m3fnxf8e4m3fn->bf16" value: 12942886017357 }
      }
      entries {
        b: 4
        m: 4096
        n: 4096
        k: 4096
        flops { key: "bf16xbf16->bf16" value: 1670467342710337 }
        flops { key: "f32xf32->f32" value: 869747066286761 }
        flops { key: "f8e4m3fnxf8e4m3fn->bf16" value: 3279676742061148 }
        flops { key: "f8e4m3fnxf8e5m2->bf16" value: 3280107240848911 }
        flops { key: "f8e5m2xf8e4m3fn->bf16" value: 3281752003581683 }
      }
    }
  }
  entries {
    key: "sm_90"
    value {
      entries {
        b: 1
        m: 512
        n: 256
        k: 256
        flops { key: "BF16xBF16->BF16" value: 12520310447761 }
        flops { key: "F32xF32->F32" value: 9731563805104 }
      }
    }
  }
)pb";
"""


class XlaMatmulTable(unittest.TestCase):
    DATA = os.path.join(HERE, "calibration", "xla_matmul_table.json")
    CLUSTERS = os.path.join(HERE, "..", "core", "presets", "clusters")
    # Preset -> the device whose table it carries (H200 and H800 reuse the H100 measurement).
    PRESETS = {"dgx-h100": "sm_90", "dgx-h200": "sm_90", "hgx-h800": "sm_90", "dgx-b200": "sm_100"}
    SCRIPT = os.path.join(HERE, "..", "scripts", "xla_matmul_table.py")

    def data(self):
        with open(self.DATA) as f:
            return json.load(f)

    def test_extracts_batch_one_and_the_batched_rows(self):
        table = xla_matmul_table.extract(XLA_MATMUL_EXCERPT)
        self.assertEqual(table, {
            "sm_100": [{"m": 4096, "n": 4096, "k": 4096, "bf16": 1416867213789406, "fp8": 2764981863158106},
                       {"b": 4, "m": 4096, "n": 4096, "k": 4096, "bf16": 1670467342710337,
                        "fp8": 3279676742061148}],
            "sm_90": [{"m": 512, "n": 256, "k": 256, "bf16": 12520310447761}]})
        committed = self.data()["gpus"]["sm_100"]
        for entry in table["sm_100"]:
            self.assertIn(entry, committed)

    def test_extract_replaces_one_device_and_keeps_the_others(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "data.json")
            with open(path, "w") as f:
                f.write(xla_matmul_table.dump_data({"sm_90": self.data()["gpus"]["sm_90"]}))
            data = json.loads(xla_matmul_table.extract_into(XLA_MATMUL_EXCERPT, "sm_100", path))
        self.assertEqual(len(data["gpus"]["sm_100"]), 2)
        self.assertEqual(data["gpus"]["sm_90"], self.data()["gpus"]["sm_90"])
        self.assertEqual(data["sources"]["sm_100"]["commit"][:8], "a305421c")
        with self.assertRaises(ValueError):  # a device without a recorded header copy
            xla_matmul_table.extract_into(XLA_MATMUL_EXCERPT, "sm_100_B200", None)

    def test_committed_data_is_the_full_grid(self):
        data = self.data()
        self.assertEqual(data["sources"]["sm_90"]["commit"][:8], "372d578b")
        self.assertEqual(data["sources"]["sm_100"]["commit"][:8], "a305421c")
        for gpu in ("sm_90", "sm_100"):
            entries = data["gpus"][gpu]
            # m, n, k = 256 .. 4096 at b 1, and n, k = 256 .. 4096 at b 2 and 4 with m 4096
            self.assertEqual(len(entries), 125 + 50, gpu)
            self.assertEqual({e.get("b", 1) for e in entries if e["m"] != 4096}, {1}, gpu)
            table = xla_matmul_table.preset_table(data, gpu)
            self.assertEqual(table["m"], [256, 512, 1024, 2048, 4096, 8192, 16384])
        b200, h100 = (xla_matmul_table.preset_table(data, g)["TFLOPS"] for g in ("sm_100", "sm_90"))
        # n = k = 4096 by rows 4096, 8192, 16384: B200 still rising, H100 saturated (within 3%).
        self.assertEqual([b200["bf16"][i][4][4] for i in (4, 5, 6)], [1416.9, 1466.6, 1670.5])
        self.assertEqual([b200["fp8"][i][4][4] for i in (4, 5, 6)], [2765.0, 3123.5, 3279.7])
        self.assertEqual([h100["bf16"][i][4][4] for i in (4, 5, 6)], [783.3, 807.7, 793.1])
        with self.assertRaises(ValueError):
            xla_matmul_table.preset_table(data, "sm_80")
        with self.assertRaises(ValueError):  # a missing point is an error, not a hole in the table
            xla_matmul_table.preset_table({"gpus": {"sm_100": data["gpus"]["sm_100"][1:]}}, "sm_100")
        twice = data["gpus"]["sm_100"] + [dict(data["gpus"]["sm_100"][0], b=16, m=256)]  # 16 x 256 = 4096 rows
        with self.assertRaises(ValueError):  # two measurements for one row
            xla_matmul_table.preset_table({"gpus": {"sm_100": twice}}, "sm_100")

    def test_presets_are_regenerated_from_the_data(self):
        for preset, gpu in self.PRESETS.items():
            path = os.path.join(self.CLUSTERS, preset + ".json")
            done = subprocess.run([sys.executable, self.SCRIPT, "preset", self.DATA, "--gpu", gpu, "--check", path],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            text = subprocess.run([sys.executable, self.SCRIPT, "preset", self.DATA, "--gpu", gpu], check=True,
                                  capture_output=True, text=True).stdout
            with open(path) as f:
                self.assertIn(text.rstrip("\n"), f.read(), preset)


class FakeGpu:
    """A GPU whose clock falls once it has run `saturate_s` seconds of back-to-back work: a call
    takes `burst_s` before that and `burst_s / sustained_share` after, as a GEMM that draws more
    than the power limit at boost clock (docs/fidelity/gemm.md, "Sustained GEMMs"). Calls queue; sync()
    waits for them, which advances the time the way a synchronising host sees it."""

    def __init__(self, burst_s, sustained_share, saturate_s):
        self.burst_s, self.share, self.saturate_s = burst_s, sustained_share, saturate_s
        self.now = 0.0  # the host's clock
        self.busy_s = 0.0  # back-to-back GPU time since the GPU was last idle
        self.queued = 0
        self.calls = 0

    def clock(self):
        return self.now

    def run(self):
        self.queued += 1
        self.calls += 1
        self.now += 1e-6  # the launch

    def sync(self):
        for _ in range(self.queued):
            t = self.burst_s if self.busy_s < self.saturate_s else self.burst_s / self.share
            self.busy_s += t
            self.now += t
        self.queued = 0


class SustainedTiming(unittest.TestCase):
    def test_bursts_time_the_boost_clock(self):
        gpu = FakeGpu(burst_s=1e-3, sustained_share=0.88, saturate_s=0.5)
        us = measure_ops.time_runs(gpu.run, gpu.sync, warmup=3, repeat=10, sustain_s=0, clock=gpu.clock)
        self.assertAlmostEqual(us, 1000 + 1, delta=0.01)  # 1 ms and the launch

    def test_a_sustained_window_times_the_saturated_clock(self):
        gpu = FakeGpu(burst_s=1e-3, sustained_share=0.88, saturate_s=0.5)
        us = measure_ops.time_runs(gpu.run, gpu.sync, warmup=3, repeat=100, sustain_s=1.0, clock=gpu.clock)
        # After a second of back-to-back work the calls take 1 ms / 0.88.
        self.assertAlmostEqual(us, 1000 / 0.88 + 1, delta=0.5)  # and the 1 us launch
        self.assertGreater(gpu.calls, 800)  # it did run back to back for the second

    def test_an_op_under_the_limit_times_the_same_either_way(self):
        burst, sustained = FakeGpu(2e-4, 1.0, 0.1), FakeGpu(2e-4, 1.0, 0.1)
        a = measure_ops.time_runs(burst.run, burst.sync, 3, 20, 0, clock=burst.clock)
        b = measure_ops.time_runs(sustained.run, sustained.sync, 3, 20, 0.5, clock=sustained.clock)
        self.assertAlmostEqual(a, b, delta=1.5)  # only the launches' place differs

    def test_a_sustain_outside_0_to_600_s_is_refused(self):
        for bad in ("-1", "inf", "nan", "601"):
            done = subprocess.run([sys.executable, SCRIPT, "--signature", "matmul:M=32,N=32,K=32,B=1:fp32",
                                   "--sustain-s", bad, "--device", "cpu"], capture_output=True, text=True)
            self.assertEqual(done.returncode, 2, bad)  # argparse's usage error, before PyTorch is imported
            self.assertIn("--sustain-s must be 0 to 600 seconds", done.stderr)


class FakeTorch:
    """What fp8_unsupported reads of torch: the version, the FP8 API, the GPU's capability."""

    class version:
        hip = None

    def __init__(self, capability=(9, 0), scaled_mm=True):
        self.__version__ = "2.5.0"
        if scaled_mm:
            self._scaled_mm = object()
            self.float8_e4m3fn = object()
        outer = self

        class cuda:
            @staticmethod
            def get_device_capability(device):
                return outer.capability

            @staticmethod
            def get_device_name(device):
                return "Fake GPU"
        self.cuda = cuda
        self.capability = capability


class Fp8Support(unittest.TestCase):
    def test_an_h100_times_fp8_gemms(self):
        self.assertIsNone(measure_ops.fp8_unsupported(FakeTorch((9, 0)), "cuda", 4096, 4096, 4096))
        self.assertIsNone(measure_ops.fp8_unsupported(FakeTorch((8, 9)), "cuda:1", 16, 32, 48))

    def test_each_reason_is_named(self):
        cases = [
            (FakeTorch((8, 0)), "cuda", (4096, 4096, 4096), "compute capability 8.0"),
            (FakeTorch(), "cpu", (4096, 4096, 4096), "the device is cpu"),
            (FakeTorch(scaled_mm=False), "cuda", (4096, 4096, 4096), "PyTorch 2.1 or later"),
            (FakeTorch(), "cuda", (4096, 4100, 4096), "multiples of 16, not M=4096, N=4100, K=4096"),
        ]
        for torch, device, (m, n, k), reason in cases:
            why = measure_ops.fp8_unsupported(torch, device, m, n, k)
            self.assertIsNotNone(why, reason)
            self.assertIn(reason, why)


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
class Timing(unittest.TestCase):
    def test_cpu_shapes(self):
        small, large = "matmul:M=64,N=64,K=64,B=1:fp32", "matmul:M=512,N=512,K=512,B=1:fp32"
        table = measure_ops.measure([small, large, "attention:M=64,N=64,K=16,B=2:fp32",
                                     "attention_backward:M=64,N=64,K=16,B=2:fp32"], device="cpu", warmup=1, repeat=5,
                                    attention="unfused")
        self.assertEqual(len(table), 4)
        fused = measure_ops.measure(["attention:M=64,N=64,K=16,B=2:fp32"], device="cpu", warmup=1, repeat=3,
                                    attention="fused")
        self.assertGreater(fused["attention:M=64,N=64,K=16,B=2:fp32"], 0)
        self.assertTrue(all(us > 0 for us in table.values()))
        self.assertGreater(table[large], table[small])  # 512x more FLOPs

    def test_fp8_on_the_cpu_says_why_it_cannot(self):
        with self.assertRaisesRegex(ValueError, "FP8 tensor cores|PyTorch 2.1"):
            measure_ops.measure(["matmul:M=32,N=32,K=32,B=1:fp8"], device="cpu", warmup=0, repeat=1)

    def test_writes_a_table_the_config_accepts(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "table.json")
            subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--repeat", "2", "--warmup", "1",
                            "--signature", "matmul:M=32,N=32,K=32,B=2:fp32", "-o", path], check=True)
            with open(path) as f:
                table = json.load(f)
            self.assertEqual(list(table["measured_us"]), ["matmul:M=32,N=32,K=32,B=2:fp32"])
            self.assertIn("source", table)


if __name__ == "__main__":
    unittest.main()
