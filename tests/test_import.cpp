// Importers and the Megatron exporter (core/src/import, docs/import.md): real launch scripts
// and config.json files from public repositories (tests/import/, each with its source), the
// GPT-3 175B validation case, export -> import on every scenario, and the errors that name
// the offending argument.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "error_path.h"
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/import.h"
#include "proteus/presets.h"

using nlohmann::json;
using namespace proteus;
using proteus::test::error_path;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/tests/import/" + name, std::ios::binary);
  REQUIRE_MESSAGE(f, "missing fixture " << name);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The resolved config as JSON, names cleared (Megatron arguments carry no run or model name).
json resolved(const std::string& config_text) {
  Config c = parse_config(config_text);
  c.name.clear();
  c.model.name.clear();
  return json::parse(config_to_json(c));
}

Config import_config(const std::string& text, const std::string& cluster, int nodes = 0) {
  MegatronImportOptions o;
  o.cluster_json = cluster;
  o.nodes = nodes;
  return parse_config(import_megatron(text, o).config_json);
}

MegatronImportOptions on(const std::string& cluster, int nodes) {
  MegatronImportOptions o;
  o.cluster_json = cluster;
  o.nodes = nodes;
  return o;
}

}  // namespace

TEST_CASE("import: the GPT-3 175B run's Megatron script gives the hand-written validation case") {
  // tests/validation/published.json, case megatron-gpt3-175b-1024, written by hand from the
  // paper; the fixture is Megatron-LM's own launch script of that run (#SBATCH --nodes=128).
  std::ifstream f(std::string(PROTEUS_SOURCE_DIR) + "/tests/validation/published.json", std::ios::binary);
  const json published = json::parse(f);
  json hand;
  for (const json& c : published["cases"])
    if (c["id"] == "megatron-gpt3-175b-1024") hand = c["config"];
  REQUIRE(hand.is_object());
  hand.erase("simulation");  // simulator limits, not part of the run
  // The run's Megatron-LM (2021) scattered pipeline tensors over tp (scatter_gather_p2p); the
  // script cannot say which Megatron ran it, so the import assumes Megatron-Core's whole tensors
  // and says so.
  REQUIRE(hand["strategy"].value("scatter_gather_p2p", false));
  hand["strategy"].erase("scatter_gather_p2p");
  const ImportResult r = import_megatron(fixture("megatron-gpt3-175b.sh"), on("dgx-a100-80g", 0));
  CHECK(resolved(r.config_json) == resolved(hand.dump()));
  CHECK(std::any_of(r.assumed.begin(), r.assumed.end(), [](const std::string& a) {
    return a.find("strategy.scatter_gather_p2p") != std::string::npos;
  }));
  // What it read: 8 x 16 x 8 = 1024 GPUs from #SBATCH --nodes=128 and TP/PP; vocabulary
  // 50257 (GPT-2 BPE, pretrain_gpt.py's default tokenizer) padded to a multiple of 128 x 8.
  const Config c = parse_config(r.config_json);
  CHECK(c.cluster.nodes == 128);
  CHECK(c.strategy.dp == 8);
  CHECK(c.model.vocab == 51200);
  CHECK(c.training.precision == Precision::Fp16);
  CHECK(c.strategy.recompute == Recompute::Full);
  bool lr_ignored = false;
  for (const std::string& s : r.ignored) lr_ignored = lr_ignored || s == "--lr";
  CHECK(lr_ignored);
}

TEST_CASE("export -> import is the identity on every transformer scenario") {
  int checked = 0;
  for (const Preset& p : embedded_presets()) {
    if (p.kind != PresetKind::Scenario) continue;
    const std::string config = "{\"preset\": \"" + p.name + "\"}";
    const Config c = parse_config(config);
    if (c.model.kind != ModelKind::Transformer) {
      // CNN and DLRM scenarios have no Megatron form: the error names the field.
      CHECK(error_path([&] { export_megatron(config); }) == "model.kind");
      continue;
    }
    CAPTURE(p.name);
    if (c.strategy.schedule == Schedule::DualPipe || c.strategy.schedule == Schedule::DualPipeV) {
      // deepseek-v3-h800 (dualpipe): Megatron-LM has neither DualPipe schedule; the error names
      // the field.
      CHECK(error_path([&] { export_megatron(config); }) == "strategy.schedule");
      continue;
    }
    if (c.model.vocab % c.strategy.tp != 0) {
      // gpt2-1.5b-proteus: GPT-2's 50257 rows split 4 ways, which Megatron cannot train unpadded.
      CHECK(error_path([&] { export_megatron(config); }) == "model.vocab");
      continue;
    }
    const std::string args = export_megatron(config);
    const json cluster = json::parse(config_to_json(c))["cluster"];
    const ImportResult back = import_megatron(args, on(cluster.dump(), 0));
    CHECK(resolved(back.config_json) == resolved(config));
    ++checked;
  }
  // default, gpt-12l-dp32, gpt3-175b-megatron, llama3-405b-16k, mixtral-8x7b-ep,
  // gpt-oss-120b-gb200, qwen3-235b-gb300, llama3.1-8b-mi355x
  CHECK(checked == 8);
}

TEST_CASE("import: bare arguments, torchrun lines, variables, arrays and conditionals") {
  const std::string bare =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
      "--micro-batch-size 2 --global-batch-size 16 --vocab-size 1000 --bf16";
  Config c = import_config(bare, "dgx-h100", 1);
  CHECK(c.strategy.dp == 8);
  CHECK(c.model.vocab == 1024);  // padded to a multiple of 128 x tp
  CHECK(c.model.ffn_hidden == 1024);
  CHECK(c.training.precision == Precision::Bf16);

  const std::string script =
      "#!/bin/bash\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "GPUS=8; NODES=${NNODES:-2}\n"
      "TP=2\n"
      "DTYPE=fp8\n"
      "ARGS=(\n  --num-layers 4  # four\n  --hidden-size 512\n)\n"
      "ARGS+=(--num-attention-heads 8 --group-query-attention --num-query-groups 2)\n"
      "if [[ \"$DTYPE\" == \"fp8\" ]]; then\n  EXTRA=(\"--fp8-format hybrid\")\nelse\n  EXTRA=()\nfi\n"
      "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=$GPUS --nnodes $NODES pretrain_gpt.py \\\n"
      "  ${ARGS[@]} --swiglu \\\n"
      "  --tensor-model-parallel-size $TP --sequence-parallel --seq-length 1024 \\\n"
      "  --micro-batch-size 1 --global-batch-size $((4*8)) --tokenizer-type Llama2Tokenizer \\\n"
      "  --bf16 ${EXTRA[@]} --use-distributed-optimizer --overlap-grad-reduce 2>&1 | tee log.txt\n";
  c = import_config(script, "dgx-h100");
  CHECK(c.cluster.nodes == 2);
  CHECK(c.strategy.tp == 2);
  CHECK(c.strategy.dp == 8);
  CHECK(c.model.kv_heads == 2);
  CHECK(c.model.mlp == MlpKind::Swiglu);
  CHECK(c.model.ffn_hidden == 1344);  // Megatron: int(4h * 2/3 / 64) * 64 for SwiGLU
  CHECK(c.model.vocab == 32000);      // Llama 2 tokenizer, 32000 = 125 x 256
  CHECK(c.training.global_batch == 32);
  CHECK(c.training.precision == Precision::Fp8);
  CHECK(c.strategy.zero == 1);
  CHECK(c.strategy.sequence_parallel);
  // Megatron's default bucket: max(40M, 1M x dp) fp32 gradients = 160 MB.
  CHECK(c.strategy.grad_bucket_MB == doctest::Approx(160));
}

TEST_CASE("import: bad input gets an error naming the argument or field") {
  const std::string base =
      "--hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --vocab-size 1000 ";
  CHECK(error_path([&] { import_megatron(base + "--num-layer 2", on("dgx-h100", 1)); }) == "--num-layer");
  CHECK(error_path([&] { import_megatron(base + "--num-layers two", on("dgx-h100", 1)); }) == "--num-layers");
  CHECK(error_path([&] { import_megatron(base + "--num-layers 2 --fp16 --bf16", on("dgx-h100", 1)); }) ==
        "--bf16");
  CHECK(error_path([&] { import_megatron(base + "--num-layers 2 --fp16 yes", on("dgx-h100", 1)); }) ==
        "--fp16");
  CHECK(error_path([&] {
          import_megatron(base + "--num-layers 2 --tensor-model-parallel-size 3", on("dgx-h100", 1));
        }) == "--tensor-model-parallel-size");
  CHECK(error_path([&] { import_megatron(base + "--num-layers 2", on("", 1)); }) == "cluster");
  CHECK(error_path([&] { import_megatron(base + "--num-layers 2", on("dgx-h100", 0)); }) == "--nnodes");
  CHECK(error_path([&] { import_hf("{\"architectures\": [\"FalconForCausalLM\"]}"); }) == "architectures[0]");
  CHECK(error_path([&] {
          import_hf("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096}");
        }) == "num_hidden_layers");
  CHECK(error_path([&] {
          import_hf("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": \"32\"}");
        }) == "num_hidden_layers");
  // Numbers outside 64 bits are errors naming the key (found by fuzz/fuzz_import.cpp: casting
  // 1e300 to an integer was undefined behaviour); a whole float within range still counts.
  for (const char* n : {"1e300", "-1e300", "18446744073709551615", "9.3e18"})
    CHECK(error_path([&] {
            import_hf(std::string("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": ") + n +
                      "}");
          }) == "num_hidden_layers");
  CHECK(error_path([&] {
          import_hf("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": 2.5}");
        }) == "num_hidden_layers");
  // Over the size limit: refused before any parsing.
  const std::string huge(17 * 1024 * 1024, ' ');
  CHECK(error_path([&] { import_megatron(huge, on("dgx-h100", 1)); }) == "");
}

TEST_CASE("import: Transformer Engine's FP8, TP-overlap and CP knobs map to their strategy fields") {
  // Megatron-LM arguments.py: --fp8-recipe {tensorwise, delayed, mxfp8, blockwise} (tensorwise is
  // TE's Float8CurrentScaling), --fp8-param-gather (asserts a distributed optimizer or FSDP),
  // --tp-only-amax-red, --tp-comm-overlap (asserts --sequence-parallel), --cp-comm-type
  // (nargs='+', one per layer or one for all) and --hierarchical-context-parallel-sizes [a2a, p2p].
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 1024 --micro-batch-size 1 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --sequence-parallel --context-parallel-size 4 ";
  const std::string fp8 = base + "--fp8-format hybrid --use-distributed-optimizer ";
  Config c =
      import_config(fp8 +
                        "--fp8-recipe tensorwise --fp8-param-gather --tp-only-amax-red --tp-comm-overlap "
                        "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2",
                    "dgx-h100", 1);
  CHECK(c.training.precision == Precision::Fp8);
  CHECK(c.training.fp8_recipe == Fp8Recipe::Current);
  CHECK(c.strategy.fp8_param_gather);
  CHECK(c.strategy.tp_only_amax_red);
  CHECK(c.strategy.tp_comm_overlap);
  CHECK(c.strategy.cp_comm_type == CpCommType::A2aP2p);
  CHECK(c.strategy.cp_a2a_size == 2);
  CHECK(import_config(fp8 + "--fp8-recipe mxfp8 --cp-comm-type all_gather all_gather", "dgx-h100", 1)
            .training.fp8_recipe == Fp8Recipe::Mxfp8);
  CHECK(import_config(fp8 + "--cp-comm-type all_gather all_gather", "dgx-h100", 1).strategy.cp_comm_type ==
        CpCommType::AllGather);

  // Knobs that do nothing in the run are reported, not guessed: no FP8, one tp rank, mixed per-layer types.
  MegatronImportOptions o = on("dgx-h100", 1);
  const ImportResult r = import_megatron(
      base + "--fp8-recipe delayed --fp8-param-gather --tp-only-amax-red --cp-comm-type p2p a2a", o);
  CHECK(r.ignored.size() == 4);
  const Config bf16 = parse_config(r.config_json);
  CHECK_FALSE(bf16.strategy.fp8_param_gather);
  CHECK(bf16.strategy.cp_comm_type == CpCommType::P2p);

  // What Megatron itself refuses is an error naming the argument.
  CHECK(error_path([&] { import_megatron(base + "--fp8-format hybrid --fp8-param-gather", o); }) ==
        "--fp8-param-gather");
  const std::string no_sp =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --tp-comm-overlap";
  CHECK(error_path([&] { import_megatron(no_sp, o); }) == "--tp-comm-overlap");
  CHECK(error_path([&] { import_megatron(fp8 + "--fp8-recipe fp4", o); }) == "--fp8-recipe");
  CHECK(error_path([&] { import_megatron(fp8 + "--cp-comm-type ring", o); }) == "--cp-comm-type");
  CHECK(error_path([&] {
          import_megatron(fp8 + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 4", o);
        }) == "--hierarchical-context-parallel-sizes");

  // And back: the default scenario with every knob set exports arguments that import to it again.
  json knobs = json::parse(config_to_json(parse_config(R"({"preset": "default"})")));
  knobs["training"]["precision"] = "fp8";
  knobs["training"]["fp8_recipe"] = "current";
  knobs["strategy"].update(json{{"dp", 1},
                                {"cp", 4},
                                {"cp_comm_type", "a2a+p2p"},
                                {"cp_a2a_size", 2},
                                {"tp_comm_overlap", true},
                                {"fp8_param_gather", true},
                                {"tp_only_amax_red", true}});
  const std::string args = export_megatron(knobs.dump());
  const ImportResult back = import_megatron(args, on(knobs["cluster"].dump(), 0));
  CHECK(back.ignored.empty());
  CHECK(resolved(back.config_json) == resolved(knobs.dump()));
}

TEST_CASE("import: Hugging Face config.json files give the presets' models") {
  // tests/import/SOURCES.md names each file's repository.
  const std::pair<const char*, const char*> files[] = {
      {"hf-llama-3.1-8b.json", "llama3.1-8b"},    {"hf-qwen3-8b.json", "qwen3-8b"},
      {"hf-qwen3-30b-a3b.json", "qwen3-30b-a3b"}, {"hf-qwen3-235b-a22b.json", "qwen3-235b-a22b"},
      {"hf-deepseek-v3.json", "deepseek-v3"},     {"hf-gpt-oss-120b.json", "gpt-oss-120b"},
      {"hf-mixtral-8x22b.json", "mixtral-8x22b"}};
  const std::string rest =
      ", \"cluster\": \"dgx-h100\", \"training\": {\"global_batch\": 8, \"seq_len\": 1024}, \"strategy\": {\"dp\": 8}}";
  for (const auto& [file, preset] : files) {
    CAPTURE(file);
    const ImportResult r = import_hf(fixture(file));
    const json model = json::parse(r.config_json)["model"];
    json imported = resolved("{\"model\": " + model.dump() + rest)["model"];
    json expected = resolved(std::string("{\"model\": \"") + preset + "\"" + rest)["model"];
    CHECK(imported == expected);
  }
}

TEST_CASE("import: Megatron-LM example scripts") {
  // Llama 3 8B FP8 on one H100 node: the DTYPE=fp8 branch adds --fp8-format, the MOCK
  // branch gives --vocab-size 128256; GQA 8 groups of 128 channels; distributed optimizer.
  Config c = import_config(fixture("megatron-llama3-8b-h100-fp8.sh"), "dgx-h100");
  CHECK(c.model.layers == 32);
  CHECK(c.model.kv_heads == 8);
  CHECK(c.model.ffn_hidden == 14336);
  CHECK(c.model.vocab == 128256);
  CHECK(c.model.flash_attention);  // --attention-backend fused
  CHECK(c.training.precision == Precision::Fp8);
  CHECK(c.training.seq_len == 8192);
  CHECK(c.strategy.dp == 8);
  CHECK(c.strategy.zero == 1);
  CHECK(c.strategy.overlap_param_gather);
  CHECK(c.training.global_batch == 128);
  // Mixtral example (2 layers, 2 experts, 2 GPUs per node with expert parallel 2): the
  // launcher's --nproc_per_node 2 overrides the preset's 8 GPUs per node; --bf16 is
  // commented out, so fp32.
  c = import_config(fixture("megatron-mixtral-8x7b.sh"), "dgx-h100");
  CHECK(c.cluster.gpus_per_node == 2);
  CHECK(c.strategy.ep == 2);
  CHECK(c.model.moe.experts == 2);
  CHECK(c.model.moe.top_k == 2);
  CHECK(c.model.moe.routing == MoeRouting::Dropless);
  CHECK(c.model.vocab == 32000);
  CHECK(c.training.precision == Precision::Fp32);
  // BERT-Large 340M with TP 8 x PP 16 (128 GPUs: 16 nodes): an encoder with token types and
  // the binary head; BertWordPieceLowerCase's 30522 padded to a multiple of 128 x 8.
  c = import_config(fixture("megatron-bert-340m.sh"), "dgx-h100", 16);
  CHECK_FALSE(c.model.causal);
  CHECK(c.model.type_vocab == 2);
  CHECK(c.model.pooler);
  CHECK(c.model.vocab == 30720);
  CHECK(c.strategy.pp == 16);
  CHECK(c.training.precision == Precision::Fp16);
}

TEST_CASE("export -> import keeps the 2025 model features") {
  for (const char* preset : {"deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-8b"}) {
    CAPTURE(preset);
    const bool moe = std::string(preset) != "qwen3-8b";
    const std::string config =
        std::string("{\"model\": \"") + preset +
        "\", \"cluster\": {\"preset\": \"dgx-h100\", \"nodes\": 8}, \"training\": "
        "{\"global_batch\": 64, \"seq_len\": 4096}, \"strategy\": {\"dp\": 32, \"tp\": 2, "
        "\"ep\": " +
        std::string(moe ? "8" : "1") + ", \"zero\": 1, \"sequence_parallel\": true}}";
    const json cluster = resolved(config)["cluster"];
    const ImportResult back = import_megatron(export_megatron(config), on(cluster.dump(), 0));
    CHECK(resolved(back.config_json) == resolved(config));
  }
}

namespace {

// A Megatron-DeepSpeed launch line as BigScience's BLOOM 176B run passed it (tr11-176B-ml.slurm:
// TP 4, PP 12, 48 nodes, ALiBi, an embedding LayerNorm, the vocabulary padded to 250880, ZeRO
// stage 0 with bf16: DeepSpeed's BF16_Optimizer).
std::string megatron_deepspeed(const std::string& extra) {
  return "python -u -m torch.distributed.run --nproc_per_node 8 --nnodes 48 pretrain_gpt.py"
         " --tensor-model-parallel-size 4 --pipeline-model-parallel-size 12 --num-layers 70"
         " --hidden-size 14336 --num-attention-heads 112 --seq-length 2048 --max-position-embeddings 2048"
         " --micro-batch-size 2 --global-batch-size 2048 --rampup-batch-size 192 16 9_765_625"
         " --tokenizer-type PretrainedFromHF --tokenizer-name-or-path bigscience/tokenizer"
         " --embed-layernorm --bf16 --position-embedding-type alibi --checkpoint-activations"
         " --pad-vocab-size-to 250880 --kill-switch-path /tmp/kill --abort-on-unmet-fused-kernel-constraints"
         " --deepspeed_config ./ds_config.json --deepspeed-activation-checkpointing" +
         extra;
}

bool listed(const std::vector<std::string>& notes, const std::string& start) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.rfind(start, 0) == 0; });
}

}  // namespace

TEST_CASE("import: a Megatron-DeepSpeed launch runs DeepSpeed's engine at its --zero-stage") {
  const ImportResult r =
      import_megatron(megatron_deepspeed(" --deepspeed --zero-stage 0"), on("dgx-a100-80g", 0));
  const Config c = parse_config(r.config_json);
  CHECK(c.strategy.framework == Framework::DeepSpeed);
  CHECK(c.strategy.zero == 0);  // with bf16: BF16_Optimizer (tests/test_bf16_optimizer.cpp)
  CHECK(c.strategy.tp == 4);
  CHECK(c.strategy.pp == 12);
  CHECK(c.strategy.dp == 8);
  CHECK(c.strategy.recompute == Recompute::Full);
  CHECK(c.model.vocab == 250880);
  CHECK_FALSE(c.model.learned_positions);
  CHECK(c.training.precision == Precision::Bf16);
  CHECK(listed(r.ignored, "--position-embedding-type alibi"));
  CHECK(listed(r.ignored, "--embed-layernorm"));
  CHECK(listed(r.assumed, "--deepspeed_config ./ds_config.json is not read"));
  // Megatron's pipeline p2p assumptions are not DeepSpeed's (its engine's p2p is fixed).
  CHECK_FALSE(listed(r.assumed, "pipeline tensors sent whole"));
  // Without --zero-stage: Megatron-DeepSpeed's default, 1, said so.
  const ImportResult d = import_megatron(megatron_deepspeed(" --deepspeed"), on("dgx-a100-80g", 0));
  CHECK(parse_config(d.config_json).strategy.zero == 1);
  CHECK(listed(d.assumed, "ZeRO stage 1"));
  // Without --deepspeed the DeepSpeed arguments have no effect: Megatron-LM, said so.
  const ImportResult m = import_megatron(megatron_deepspeed(" --zero-stage 2"), on("dgx-a100-80g", 0));
  CHECK(parse_config(m.config_json).strategy.framework == Framework::Megatron);
  CHECK(parse_config(m.config_json).strategy.zero == 0);
  CHECK(listed(m.ignored, "--zero-stage: used only with --deepspeed"));
}

TEST_CASE("import: Megatron-DeepSpeed's --ds-sequence-parallel-size is DeepSpeed-Ulysses, cp by all-to-all") {
  // examples_deepspeed/sequence_parallel (Megatron-DeepSpeed): GPT-3 6.7B at 32K tokens, sp 4,
  // ZeRO-3, on 2 DGX H100 nodes: dp = 16 / 4 = 4.
  const std::string launch =
      "deepspeed pretrain_gpt.py --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1"
      " --no-pipeline-parallel --ds-sequence-parallel-size 4 --num-layers 32 --hidden-size 4096"
      " --num-attention-heads 32 --seq-length 32768 --max-position-embeddings 32768 --micro-batch-size 1"
      " --global-batch-size 8 --fp16 --use-flash-attn-v2 --checkpoint-activations --deepspeed"
      " --deepspeed_config ds_config.json --zero-stage 3 --deepspeed-activation-checkpointing";
  const ImportResult r = import_megatron(launch, on("dgx-h100", 2));
  const Config c = parse_config(r.config_json);
  CHECK(c.strategy.framework == Framework::DeepSpeed);
  CHECK(c.strategy.cp == 4);
  CHECK(c.strategy.cp_comm_type == CpCommType::A2a);
  CHECK(c.strategy.dp == 4);
  CHECK(c.strategy.zero == 3);
  CHECK(listed(r.assumed, "DeepSpeed-Ulysses over 4 ranks"));
  CHECK_FALSE(listed(r.ignored, "--ds-sequence-parallel-size"));
  // The export names it the same way back.
  const std::string args = export_megatron(r.config_json);
  CHECK(args.find("--ds-sequence-parallel-size 4") != std::string::npos);
  CHECK(args.find("--context-parallel-size") == std::string::npos);
  CHECK(args.find("--cp-comm-type") == std::string::npos);
  // Megatron-DeepSpeed's flash-attn flag, not Megatron-Core's --attention-backend.
  CHECK(args.find("--use-flash-attn-v2") != std::string::npos);
  CHECK(args.find("--attention-backend") == std::string::npos);
  const json cluster = resolved(r.config_json)["cluster"];
  CHECK(resolved(import_megatron(args, on(cluster.dump(), 0)).config_json) == resolved(r.config_json));
}

TEST_CASE("import: Megatron-DeepSpeed arguments Proteus cannot take are errors naming them") {
  const MegatronImportOptions a100 = on("dgx-a100-80g", 0);
  // DeepSpeed-Ulysses: Megatron-DeepSpeed's own checks (arguments.py, initialize.py), and FPDT.
  for (const char* extra : {" --ds-sequence-parallel-size 2",  // without --deepspeed
                            " --deepspeed --ds-sequence-parallel-size 2 --context-parallel-size 2",
                            " --deepspeed --ds-sequence-parallel-size 2 --sequence-parallel",
                            " --deepspeed --ds-sequence-parallel-size 2 --ds-sequence-parallel-fpdt"}) {
    CAPTURE(extra);
    CHECK(error_path([&] { import_megatron(megatron_deepspeed(extra), a100); }) ==
          "--ds-sequence-parallel-size");
  }
  CHECK(error_path([&] {
          import_megatron(megatron_deepspeed(" --deepspeed --no-pipeline-parallel"), a100);
        }) == "--no-pipeline-parallel");
  CHECK(error_path([&] { import_megatron(megatron_deepspeed(" --pad-vocab-size-to 250881"), a100); }) ==
        "--pad-vocab-size-to");
  CHECK(error_path([&] { import_megatron(megatron_deepspeed(" --deepspeed --zero-stage 4"), a100); }) ==
        "--zero-stage");
}

TEST_CASE("export -> import is the identity on DeepSpeed configs at DeepSpeed's overlap defaults") {
  // overlap_grad_reduce is DeepSpeed's overlap_comm, false at stages 1-2 and true at 3 unless its
  // JSON says otherwise; the export writes a comment line when the config differs.
  const char* strategies[] = {
      R"({"framework":"deepspeed","dp":8,"tp":4,"pp":2,"zero":0,"overlap_grad_reduce":false})",
      R"({"framework":"deepspeed","dp":16,"tp":4,"zero":1,"overlap_grad_reduce":false})",
      R"({"framework":"deepspeed","dp":64,"zero":3,"overlap_grad_reduce":true})"};
  for (const char* strategy : strategies) {
    CAPTURE(strategy);
    const std::string config =
        std::string(R"({"model":"gpt3-1.3b","cluster":{"preset":"dgx-a100-80g","nodes":8},)") +
        R"("training":{"global_batch":256,"precision":"bf16"},"strategy":)" + strategy + "}";
    const std::string args = export_megatron(config);
    CHECK(args.find("--deepspeed") != std::string::npos);
    CHECK(args.find("overlap_comm") == std::string::npos);
    const json cluster = resolved(config)["cluster"];
    CHECK(resolved(import_megatron(args, on(cluster.dump(), 0)).config_json) == resolved(config));
  }
  const std::string overlapped =
      R"({"model":"gpt3-1.3b","cluster":{"preset":"dgx-a100-80g","nodes":8},"training":{"global_batch":256},)"
      R"("strategy":{"framework":"deepspeed","dp":64,"zero":2,"overlap_grad_reduce":true}})";
  CHECK(export_megatron(overlapped).find(R"("overlap_comm": true)") != std::string::npos);
  // fp32 reductions under DeepSpeed's ZeRO optimizer are its communication_data_type.
  const std::string fp32 =
      R"({"model":"gpt3-1.3b","cluster":{"preset":"dgx-a100-80g","nodes":8},"training":{"global_batch":256},)"
      R"("strategy":{"framework":"deepspeed","dp":64,"zero":1,"grad_reduce_in_fp32":true}})";
  CHECK(export_megatron(fp32).find(R"("communication_data_type": "fp32")") != std::string::npos);
  // BF16_Optimizer at ZeRO-1 is DeepSpeed's data_types.grad_accum_dtype fp32.
  const std::string accum =
      R"({"model":"gpt3-1.3b","cluster":{"preset":"dgx-a100-80g","nodes":8},"training":{"global_batch":256},)"
      R"("strategy":{"framework":"deepspeed","dp":64,"zero":1,"grad_accum_in_fp32":true}})";
  CHECK(export_megatron(accum).find(R"("grad_accum_dtype": "fp32")") != std::string::npos);
  CHECK(export_megatron(fp32).find("grad_accum_dtype") == std::string::npos);
  CHECK(export_megatron(overlapped).find("communication_data_type") == std::string::npos);
}
