// Megatron's launcher and parallelism arguments -> the config's cluster and strategy: nodes and
// GPUs per node, tp/pp/cp/ep and the data-parallel size they leave, batches, virtual and uneven
// pipeline stages, sequence parallelism, optimizer sharding (distributed optimizer, Megatron
// FSDP, torch FSDP2), activation recomputation, gradient buckets and the pipeline's
// point-to-point.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "../config/json_text.h"
#include "megatron_arg_reader.h"
#include "megatron_parts.h"
#include "proteus/error.h"
#include "proteus/import.h"
#include "proteus/presets.h"

namespace proteus::import_detail {

Json cluster_part(const MegatronImportOptions& options, const MegatronArgs& args, int& gpus,
                  std::vector<std::string>& assumed) {
  if (options.cluster_json.empty()) {
    throw Error("invalid_request", "cluster",
                "Megatron arguments do not name the hardware: choose a cluster (proteus import megatron FILE "
                "--cluster dgx-h100 [--nodes N])");
  }
  Json cluster;
  const char first = options.cluster_json.find_first_not_of(" \t\r\n") == std::string::npos
                         ? 0
                         : options.cluster_json[options.cluster_json.find_first_not_of(" \t\r\n")];
  if (first == '{') {
    cluster = Json::parse(config_detail::parse_json_text(options.cluster_json, "the cluster").dump());
  } else {
    cluster = Json{{"preset", options.cluster_json}};
  }
  int per_node = 8;
  if (cluster.contains("gpus_per_node") && cluster["gpus_per_node"].is_number_integer()) {
    per_node = cluster["gpus_per_node"].get<int>();
  } else if (cluster.contains("preset") && cluster["preset"].is_string()) {
    const Preset* p = find_preset(PresetKind::Cluster, cluster["preset"].get<std::string>());
    if (!p)
      throw Error("unknown_preset", "cluster",
                  "no cluster preset \"" + cluster["preset"].get<std::string>() + "\"");
    const auto preset = nlohmann::json::parse(p->json);
    per_node = preset.value("gpus_per_node", 8);
  }
  if (args.nproc_per_node > 0 && args.nproc_per_node != per_node) {
    cluster["gpus_per_node"] = args.nproc_per_node;
    per_node = args.nproc_per_node;
  }
  int nodes = options.nodes > 0 ? options.nodes : args.nnodes;
  if (nodes == 0) {
    if (cluster.contains("nodes") && cluster["nodes"].is_number_integer()) {
      nodes = cluster["nodes"].get<int>();
    } else {
      throw Error(
          "invalid_request", "--nnodes",
          "the number of nodes is not in the arguments (no torchrun --nnodes or #SBATCH --nodes): give it "
          "(proteus import megatron FILE --nodes N)");
    }
  } else if (options.nodes == 0) {
    assumed.push_back("nodes " + std::to_string(nodes) + " from " + args.nnodes_source);
  }
  cluster["nodes"] = nodes;
  gpus = nodes * per_node;
  return cluster;
}

namespace {

// Pipeline layout: "Et|(tt|)*30L" (Megatron-Core's --pipeline-model-parallel-layout) -> the
// transformer layers of each (virtual) stage in model order.
std::vector<int64_t> parse_layout(const std::string& text) {
  const std::string arg = "--pipeline-model-parallel-layout";
  std::string s;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') {
      const size_t close = text.find(')', i);
      if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != '*')
        throw Error("invalid_config", arg, arg + " \"" + text + "\": '(' needs a matching ')*N'");
      size_t k = close + 2;
      int64_t n = 0;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
        n = n * 10 + (text[k++] - '0');
      const std::string body = text.substr(i + 1, close - i - 1);
      for (int64_t r = 0; r < n; ++r) s += body;
      i = k - 1;
    } else if (text[i] == '*' && !s.empty()) {
      size_t k = i + 1;
      int64_t n = 0;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
        n = n * 10 + (text[k++] - '0');
      const char c = s.back();
      for (int64_t r = 1; r < n; ++r) s += c;
      i = k - 1;
    } else if (text[i] != ' ' && text[i] != ',' && text[i] != '"' && text[i] != '\'') {
      s += text[i];
    }
  }
  std::vector<int64_t> stages(1, 0);
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '|') {
      stages.push_back(0);
    } else if (c == 't') {
      ++stages.back();
    } else if (c == 'E') {
      if (stages.size() != 1)
        throw Error("invalid_config", arg,
                    "the embedding (E) must be in the first stage: Proteus places it there");
    } else if (c == 'L') {
      if (s.find('|', i) != std::string::npos)
        throw Error("invalid_config", arg, "the loss (L) must be in the last stage: Proteus places it there");
    } else {
      throw Error("invalid_config", arg,
                  arg + ": layer type '" + std::string(1, c) + "' is not simulated (t, E, L are)");
    }
  }
  return stages;
}

// --recompute-modules as Megatron-Core checks it (transformer_config.py): its names, "moe_act"
// only with --moe-grouped-gemm, "shared_experts" not with --moe-shared-expert-overlap. Names the
// model lacks are kept (strategy.recompute_modules refuses what Megatron refuses for the model).
Json megatron_recompute_modules(ArgReader& in) {
  Json mods = Json::array();
  if (!in.has("--recompute-modules")) return Json::array({"core_attn"});
  const auto& raw = in.args().values;
  for (const std::string& name : in.values("--recompute-modules")) {
    if (!recompute_module_named(name))
      throw Error("invalid_config", "--recompute-modules",
                  "\"" + name + "\" is not one of Megatron-Core's recompute modules");
    if (std::find(mods.begin(), mods.end(), Json(name)) != mods.end()) continue;  // a set in Megatron
    if (name == "moe_act" && raw.count("--moe-grouped-gemm") == 0)
      throw Error("invalid_config", "--recompute-modules",
                  "moe_act in recompute_modules is only supported with --moe-grouped-gemm");
    if (name == "shared_experts" && raw.count("--moe-shared-expert-overlap") > 0)
      throw Error("invalid_config", "--recompute-modules",
                  "shared_experts recompute cannot work with --moe-shared-expert-overlap");
    mods.push_back(name);
  }
  return mods;
}

// Megatron-Core's align_grad_reduce, on unless --no-align-grad-reduce (--no-delay-grad-reduce
// before the rename): under --overlap-grad-reduce its pipeline schedules launch each chunk's
// gradient reductions themselves (docs/frameworks/data-parallelism.md, "When Megatron-Core launches
// the reductions").
void align_grad_reduce_part(ArgReader& in, Json& st, std::vector<std::string>& ignored) {
  const bool no_align = in.flag("--no-align-grad-reduce");
  const bool no_delay = in.flag("--no-delay-grad-reduce");
  if (!no_align && !no_delay) return;
  const std::string flag = no_align ? "--no-align-grad-reduce" : "--no-delay-grad-reduce";
  if (st.value("pp", int64_t{1}) > 1 && st["overlap_grad_reduce"].get<bool>() &&
      st.value("zero", int64_t{0}) != 3)
    st["align_grad_reduce"] = false;
  else
    ignored.push_back(flag +
                      ": acts only on the pipeline schedules' overlapped gradient reduction "
                      "(--overlap-grad-reduce, pp > 1, not Megatron-FSDP)");
}

}  // namespace

Json strategy_part(ArgReader& in, int64_t layers, int gpus, std::vector<std::string>& ignored,
                   std::vector<std::string>& assumed, Json& training, Json& model) {
  Json st;
  const int64_t tp = in.has("--tensor-model-parallel-size")
                         ? in.integer("--tensor-model-parallel-size", 1, 1, 1 << 20)
                         : in.integer("--model-parallel-size", 1, 1, 1 << 20);
  const int64_t pp = in.integer("--pipeline-model-parallel-size", 1, 1, 1 << 20);
  const int64_t cp = context_parallel_size(in);  // Megatron's, or DeepSpeed-Ulysses'
  const int64_t ep = in.integer("--expert-model-parallel-size", 1, 1, 1 << 20);
  if (gpus % (tp * pp * cp) != 0) {
    throw Error("invalid_config", "--tensor-model-parallel-size",
                std::to_string(gpus) + " GPUs are not divisible by tensor x pipeline x context parallel = " +
                    std::to_string(tp * pp * cp));
  }
  const int64_t dp = gpus / (tp * pp * cp);
  st["dp"] = dp;
  st["tp"] = tp;
  st["pp"] = pp;
  st["cp"] = cp;
  st["ep"] = ep;
  moe_strategy_part(in, model, tp, st, assumed);
  const int64_t micro = in.has("--micro-batch-size") ? in.integer("--micro-batch-size", 1, 1, kBig - 1)
                                                     : in.integer("--batch-size", 0, 1, kBig - 1);
  if (micro == 0) throw Error("invalid_config", "--micro-batch-size", "missing --micro-batch-size");
  st["micro_batch"] = micro;
  training["global_batch"] = in.integer("--global-batch-size", micro * dp, 1, kBig - 1);
  if (in.has("--rampup-batch-size"))
    ignored.push_back("--rampup-batch-size: the iteration simulated has the full --global-batch-size");

  // Virtual pipeline stages.
  int64_t vp = 1;
  if (in.has("--virtual-pipeline-model-parallel-size"))
    vp = in.integer("--virtual-pipeline-model-parallel-size", 1, 1, 10000);
  if (in.has("--num-layers-per-virtual-pipeline-stage")) {
    const int64_t per = in.integer("--num-layers-per-virtual-pipeline-stage", 1, 1, 10000);
    if (layers % (per * pp) != 0) {
      throw Error(
          "invalid_config", "--num-layers-per-virtual-pipeline-stage",
          "--num-layers " + std::to_string(layers) +
              " is not divisible by pipeline size x layers per virtual stage = " + std::to_string(per * pp));
    }
    const int64_t v = layers / (per * pp);
    if (in.has("--virtual-pipeline-model-parallel-size") && v != vp) {
      throw Error("invalid_config", "--num-layers-per-virtual-pipeline-stage",
                  "contradicts --virtual-pipeline-model-parallel-size " + std::to_string(vp));
    }
    vp = v;
  }
  st["schedule"] = vp > 1 ? "interleaved-1f1b" : "1f1b";
  st["virtual_stages"] = vp;

  // Uneven pipelines.
  std::vector<int64_t> stage_layers;
  if (in.has("--pipeline-model-parallel-layout")) {
    stage_layers = parse_layout(in.text("--pipeline-model-parallel-layout"));
    if (static_cast<int64_t>(stage_layers.size()) != pp * vp) {
      throw Error("invalid_config", "--pipeline-model-parallel-layout",
                  "the layout has " + std::to_string(stage_layers.size()) +
                      " stages; pipeline x virtual size is " + std::to_string(pp * vp));
    }
  } else if (in.has("--decoder-first-pipeline-num-layers") || in.has("--decoder-last-pipeline-num-layers")) {
    const std::string arg = in.has("--decoder-first-pipeline-num-layers")
                                ? "--decoder-first-pipeline-num-layers"
                                : "--decoder-last-pipeline-num-layers";
    if (vp > 1 || pp < 2)
      throw Error("invalid_config", arg,
                  arg + " needs pp >= 2 and no virtual pipeline here (use --pipeline-model-parallel-layout)");
    const int64_t first = in.integer("--decoder-first-pipeline-num-layers", -1, 0, layers);
    const int64_t last = in.integer("--decoder-last-pipeline-num-layers", -1, 0, layers);
    const int64_t middle_stages = pp - (first >= 0) - (last >= 0);
    const int64_t rest = layers - std::max<int64_t>(first, 0) - std::max<int64_t>(last, 0);
    if (middle_stages <= 0 || rest < 0 || rest % middle_stages != 0) {
      throw Error("invalid_config", arg,
                  "the remaining " + std::to_string(rest) + " layers do not divide evenly over the other " +
                      std::to_string(middle_stages) + " pipeline stages (Megatron requires it)");
    }
    for (int64_t s = 0; s < pp; ++s) stage_layers.push_back(rest / middle_stages);
    if (first >= 0) stage_layers.front() = first;
    if (last >= 0) stage_layers.back() = last;
  }
  if (!stage_layers.empty()) st["stage_layers"] = stage_layers;

  st["sequence_parallel"] = in.flag("--sequence-parallel");

  // Optimizer state sharding.
  int zero = in.flag("--use-distributed-optimizer") ? 1 : 0;
  const bool mfsdp = in.flag("--use-megatron-fsdp");
  if (in.has("--data-parallel-sharding-strategy")) {
    const std::string s = in.choice("--data-parallel-sharding-strategy", "no_shard",
                                    {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    if (!mfsdp)
      ignored.push_back("--data-parallel-sharding-strategy: used by Megatron only with --use-megatron-fsdp");
    else
      zero = s == "no_shard" ? 0 : s == "optim" ? 1 : s == "optim_grads" ? 2 : 3;
  }
  if (in.flag("--use-torch-fsdp2")) {
    if (mfsdp) throw Error("invalid_config", "--use-torch-fsdp2", "contradicts --use-megatron-fsdp");
    zero = 3;
  }
  st["zero"] = zero;

  // Activation recomputation.
  std::string recompute = "none";
  if (in.flag("--recompute-activations")) recompute = "selective";
  if (in.flag("--checkpoint-activations"))
    recompute = "full";  // Megatron-LM before 2022: full, uniform, 1 layer
  if (in.has("--recompute-granularity")) {
    const std::string g = in.choice("--recompute-granularity", "", {"full", "selective"});
    if (recompute != "none" && g != recompute) {
      throw Error("invalid_config", "--recompute-granularity",
                  "contradicts --recompute-activations/--checkpoint-activations");
    }
    recompute = g;
  }
  if (recompute == "full") {
    const std::string method = in.choice("--recompute-method", "uniform", {"uniform", "block"});
    const int64_t n = in.integer("--recompute-num-layers", 1, 0, layers);
    const int64_t per_chunk = layers / (pp * vp);
    if (method == "uniform" && n != 1) {
      ignored.push_back("--recompute-num-layers " + std::to_string(n) +
                        " (uniform): each layer is checkpointed on its own");
    }
    if (method == "block" && n < per_chunk) {
      // The first n layers of each chunk are recomputed, the others keep their activations.
      if (!stage_layers.empty() || layers % (pp * vp) != 0) {
        throw Error(
            "invalid_config", "--recompute-num-layers",
            "block recomputation of part of each stage needs layers divisible by pp x virtual stages");
      }
      Json overrides = Json::array();
      for (int64_t l = 0; l < layers; ++l)
        if (l % per_chunk < n)
          overrides.push_back(Json{{"path", "layers." + std::to_string(l)}, {"recompute", "full"}});
      st["overrides"] = overrides;
      recompute = "none";
    }
  } else if (in.has("--recompute-method") || in.has("--recompute-num-layers")) {
    ignored.push_back(
        "--recompute-method/--recompute-num-layers: used only with --recompute-granularity full");
  }
  // --moe-layer-recompute: deprecated for --recompute-modules moe (TransformerConfig turns it into
  // selective recompute with "moe" appended, and refuses it with full recompute).
  const bool moe_layer_recompute =
      in.args().values.count("--moe-layer-recompute") > 0 && in.flag("--moe-layer-recompute");
  if (moe_layer_recompute && recompute == "full")
    throw Error("invalid_config", "--moe-layer-recompute",
                "Megatron-Core refuses it with --recompute-granularity full");
  if (moe_layer_recompute) recompute = "selective";
  if (recompute == "selective" && (in.has("--recompute-modules") || moe_layer_recompute)) {
    Json mods = megatron_recompute_modules(in);
    if (moe_layer_recompute && std::find(mods.begin(), mods.end(), Json("moe")) == mods.end())
      mods.push_back("moe");
    if (!(mods.size() == 1 && mods[0] == "core_attn")) st["recompute_modules"] = mods;
  } else if (in.has("--recompute-modules")) {
    ignored.push_back("--recompute-modules: used only with --recompute-granularity selective");
  }
  st["recompute"] = recompute;

  st["overlap_grad_reduce"] = in.flag("--overlap-grad-reduce");
  const bool overlap_param = in.flag("--overlap-param-gather");
  if (zero >= 1) st["overlap_param_gather"] = overlap_param;
  // Megatron's DDP bucket is counted in parameters of fp32 main gradients (4 bytes; halved by
  // gradient_dtype_part when they are 16-bit). Without the argument the config keeps framework
  // megatron's default (default_grad_bucket_MB): max(40M, 1M x dp x cp) parameters when gradient
  // reduction overlaps; without overlap all gradients in one bucket after the backward.
  if (in.has("--ddp-bucket-size")) {
    st["grad_bucket_MB"] =
        static_cast<double>(in.integer("--ddp-bucket-size", 0, 1, int64_t{1} << 40)) * kFp32GradBytes / 1e6;
  } else if (st["overlap_grad_reduce"].get<bool>()) {
    assumed.push_back("gradient buckets of Megatron's default max(40M, 1M x dp x cp) parameters");
  }
  align_grad_reduce_part(in, st, ignored);
  return st;
}

// Pipeline point-to-point (docs/frameworks/pipeline.md, "Pipeline point-to-point"). Megatron's
// non-interleaved 1F1B always waits on its sends and receives; the interleaved one does unless
// overlap_p2p_comm, Megatron-LM's default since --no-overlap-p2p-communication replaced
// --overlap-p2p-communication. Megatron-Core sends pipeline tensors whole; the legacy
// scatter/gather over tp (--no-scatter-gather-tensors-in-pipeline turned it off) is not in its
// p2p, and the script cannot say which code ran it.
void pipeline_p2p_part(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                       std::vector<std::string>& assumed) {
  const bool pipelined = st.value("pp", 1) > 1;
  const bool interleaved = st.value("schedule", std::string()) == "interleaved-1f1b";
  const bool overlap_on = in.flag("--overlap-p2p-communication");
  const bool overlap_off = in.flag("--no-overlap-p2p-communication");
  if (overlap_on && overlap_off)
    throw Error("invalid_config", "--no-overlap-p2p-communication",
                "contradicts --overlap-p2p-communication");
  if ((overlap_on || overlap_off) && !(pipelined && interleaved)) {
    ignored.push_back(
        std::string(overlap_on ? "--overlap-p2p-communication" : "--no-overlap-p2p-communication") +
        ": only Megatron's interleaved schedule overlaps its p2p (validate_args turns it off "
        "otherwise; 1F1B always waits)");
  } else if (overlap_on || overlap_off) {
    st["overlap_p2p_comm"] = overlap_on;
  } else if (pipelined && interleaved) {
    assumed.push_back(
        "overlap_p2p_comm true: Megatron-LM's default since --no-overlap-p2p-communication; "
        "older Megatron-LM waited on the interleaved schedule's p2p (set it false)");
  }
  if (in.flag("--no-scatter-gather-tensors-in-pipeline"))
    ignored.push_back(
        "--no-scatter-gather-tensors-in-pipeline: Megatron-Core's p2p sends pipeline tensors whole "
        "already (strategy.scatter_gather_p2p false)");
  else if (pipelined && st.value("tp", 1) > 1 && !st.value("sequence_parallel", false))
    assumed.push_back(
        "pipeline tensors sent whole, as Megatron-Core's p2p; Megatron-LM before it (2021-2023) "
        "scattered them over tp and all-gathered them after the receive: "
        "set strategy.scatter_gather_p2p");
}

}  // namespace proteus::import_detail
