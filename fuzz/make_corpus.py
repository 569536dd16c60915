#!/usr/bin/env python3
"""Writes fuzz/corpus/: the seed corpus of the libFuzzer target, built from the presets.

Every scenario preset as written (its file is a config) and by name; every model preset
inlined into a small config on one or two GPUs; every cluster preset inlined under a small
model; and a few hand-written configs that reach rarer paths (graph models, overrides,
interleaved and zero-bubble schedules, nvlink-mesh and pcie-tree clusters, context and
expert parallelism). Findings (of the fuzzer or by hand) are added as fuzz/corpus/finding-*.json by hand.
Run from the repository root: python3 fuzz/make_corpus.py
"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
presets = root / "core" / "presets"
out = root / "fuzz" / "corpus"
out.mkdir(exist_ok=True)


def write(name, config):
    text = config if isinstance(config, str) else json.dumps(config, indent=1)
    (out / f"seed-{name}.json").write_text(text)


for path in sorted((presets / "scenarios").glob("*.json")):
    write(f"scenario-{path.stem}", path.read_text())
    write(f"scenario-name-{path.stem}", {"preset": path.stem})

for path in sorted((presets / "models").glob("*.json")):
    model = json.loads(path.read_text())
    config = {"model": model, "cluster": {"preset": "dgx-h100", "gpus_per_node": 1},
              "training": {"global_batch": 2}, "strategy": {"micro_batch": 1}}
    if model.get("kind", "transformer") == "transformer":
        model["layers"] = min(model["layers"], 2)
        config["training"]["seq_len"] = 128
        config["cluster"]["gpus_per_node"] = 2
        config["strategy"]["tp"] = 2
    write(f"model-{path.stem}", config)

for path in sorted((presets / "clusters").glob("*.json")):
    cluster = json.loads(path.read_text())
    cluster["nodes"] = 2
    gpus = 2 * cluster.get("gpus_per_node", 8)
    write(f"cluster-{path.stem}", {
        "model": {"preset": "gpt2-small", "layers": 2}, "cluster": cluster,
        "training": {"global_batch": gpus, "seq_len": 64}, "strategy": {"dp": gpus}})

write("graph-model", {
    "model": {"kind": "graph", "input_elements": 1024, "ops": [
        {"name": "fc1", "type": "linear", "in_features": 1024, "out_features": 4096},
        {"name": "act", "type": "elementwise", "elements": 4096},
        {"name": "conv", "type": "conv2d", "in_channels": 4, "out_channels": 8, "kernel": 3, "image": 32, "stride": 2},
        {"name": "head", "type": "custom", "flops_per_sample": 1e6, "bytes_per_sample": 4096, "params": 1000}]},
    "cluster": {"preset": "dgx-a100-80g", "gpus_per_node": 4},
    "training": {"global_batch": 16, "precision": "fp32", "optimizer": "sgd"},
    "strategy": {"dp": 2, "pp": 2, "micro_batch": 2, "stage_layers": [3, 1], "schedule": "gpipe"}})
write("interleaved-zero3", {
    "model": {"preset": "gpt3-1.3b", "layers": 8}, "cluster": {"preset": "dgx-a100-40g", "nodes": 2},
    "training": {"global_batch": 32, "seq_len": 256, "precision": "fp16"},
    "strategy": {"dp": 2, "tp": 2, "pp": 4, "micro_batch": 2, "schedule": "interleaved-1f1b", "virtual_stages": 2,
                 "zero": 3, "recompute": "full", "overlap_grad_reduce": False, "grad_bucket_MB": 1,
                 "overrides": [{"path": "layers.*.mlp", "recompute": "selective"},
                               {"path": "layers.**", "map": {"tp": None}}]}})
write("zb-cp-sp", {
    "model": {"preset": "llama2-7b", "layers": 4}, "cluster": {"preset": "dgx-h100"},
    "training": {"global_batch": 8, "seq_len": 1024, "precision": "fp8"},
    "strategy": {"tp": 2, "cp": 2, "pp": 2, "micro_batch": 1, "schedule": "zb-h1", "sequence_parallel": True}})
write("moe-ep", {
    "model": {"preset": "mixtral-8x7b", "layers": 2, "moe": {"experts": 4, "top_k": 1, "capacity_factor": 1.5}},
    "cluster": {"preset": "mi300x-8"}, "training": {"global_batch": 16, "seq_len": 512},
    "strategy": {"dp": 4, "ep": 4, "tp": 2, "zero": 2}})
write("moe-recompute-modules", {
    "model": {"preset": "qwen3-30b-a3b", "layers": 2, "moe": {"experts": 8, "top_k": 2}},
    "cluster": {"preset": "dgx-h100"}, "training": {"global_batch": 8, "seq_len": 256},
    "strategy": {"dp": 4, "ep": 4, "tp": 2, "pp": 1, "zero": 1, "sequence_parallel": True, "recompute": "selective",
                 "recompute_modules": ["layernorm", "moe_act", "shared_experts"],
                 "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "fp8", "store_param_remainders": True}})
write("mla-recompute-modules", {
    "model": {"preset": "deepseek-v3", "layers": 3}, "cluster": {"preset": "dgx-h100"},
    "training": {"global_batch": 8, "seq_len": 256, "precision": "fp8", "fp8_recipe": "current"},
    "strategy": {"dp": 4, "ep": 4, "pp": 2, "zero": 1, "recompute": "selective",
                 "recompute_modules": ["mla_up_proj", "mlp", "moe"], "main_params_dtype": "fp16",
                 "exp_avg_dtype": "fp16", "exp_avg_sq_dtype": "fp16"}})
# Framework fsdp (TorchTitan: FSDP2, DTensor TP and async TP, PyTorch's context parallelism with
# both rotaters, op-level SAC, torch.compile, torchao Float8 with FP8 all-gather).
write("fsdp-cp-all-gather-sac", {
    "model": {"preset": "llama3-8b", "layers": 4}, "cluster": {"preset": "dgx-h100"},
    "training": {"global_batch": 4, "seq_len": 2048, "precision": "fp8", "fp8_recipe": "current"},
    "strategy": {"framework": "fsdp", "tp": 2, "cp": 2, "dp": 2, "micro_batch": 2, "zero": 3,
                 "recompute": "selective", "torch_compile": True, "fp8_param_gather": True,
                 "cp_comm_type": "all_gather", "sequence_parallel": True}})
write("fsdp-pp-cp-p2p-async-tp", {
    "model": {"preset": "llama3-8b", "layers": 8}, "cluster": {"preset": "dgx-h100", "nodes": 2},
    "training": {"global_batch": 8, "seq_len": 4096, "precision": "bf16"},
    "strategy": {"framework": "fsdp", "tp": 2, "cp": 2, "pp": 2, "dp": 2, "micro_batch": 1, "zero": 2,
                 "grad_sync": "at_boundary", "recompute": "full", "schedule": "interleaved-1f1b",
                 "virtual_stages": 2, "torch_compile": True, "tp_comm_overlap": True,
                 "sequence_parallel": True, "cp_comm_type": "p2p"}})
write("megatron-align-grad-reduce", {
    "model": {"preset": "llama3-8b", "layers": 8}, "cluster": {"preset": "dgx-h100", "nodes": 2},
    "training": {"global_batch": 16, "seq_len": 4096, "precision": "bf16"},
    "strategy": {"tp": 2, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "schedule": "interleaved-1f1b",
                 "virtual_stages": 2, "sequence_parallel": True, "overlap_grad_reduce": True,
                 "align_grad_reduce": False, "overlap_p2p_comm": False}})
write("nemo-apex-distributed-adam", {
    "model": {"preset": "llama2-7b", "layers": 8}, "cluster": {"preset": "dgx-h100", "nodes": 2},
    "training": {"global_batch": 16, "seq_len": 4096, "precision": "fp8"},
    "strategy": {"tp": 2, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "schedule": "interleaved-1f1b",
                 "virtual_stages": 2, "sequence_parallel": True, "overlap_grad_reduce": True,
                 "overlap_param_gather": True, "distributed_optimizer": "apex", "store_param_remainders": True}})
write("nvlink-mesh", {
    "model": {"preset": "bert-large", "layers": 2}, "cluster": {"preset": "dgx1-v100-2ib", "nodes": 2},
    "training": {"global_batch": 32, "seq_len": 128, "precision": "fp32"},
    "strategy": {"dp": 4, "tp": 4}, "simulation": {"symmetry": False, "max_timeline_spans": 10}})
write("pcie-tree-oversub", {
    "model": {"preset": "resnet50"}, "cluster": {"preset": "titanxp-pcie", "nodes": 2,
                                                "inter_node": {"oversubscription": 4, "nodes_per_leaf": 1}},
    "training": {"global_batch": 32, "precision": "tf32"}, "strategy": {"dp": 16, "micro_batch": 2}})
