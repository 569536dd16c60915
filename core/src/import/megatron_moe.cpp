// Megatron's mixture-of-experts arguments -> the model's moe object (experts, top-k, expert
// FFN width, capacity or dropless routing, shared experts, leading dense layers, router bias)
// and the strategy's expert tensor parallelism and token dispatcher.
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "megatron_arg_reader.h"
#include "megatron_parts.h"
#include "proteus/error.h"

namespace proteus::import_detail {

namespace {

// "--moe-layer-freq": 1 (every layer), or a pattern such as "([0]*3+[1]*58)" whose dense
// layers all come first.
int64_t first_dense_layers(ArgReader& in, int64_t layers) {
  const std::string arg = "--moe-layer-freq";
  if (!in.has(arg)) return 0;
  std::string t;
  for (const std::string& w : in.args().values.at(arg)) t += w;
  if (t == "1") return 0;
  std::vector<int> pattern;
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '[') {
      const size_t close = t.find(']', i);
      if (close == std::string::npos) break;
      std::vector<int> items;
      for (size_t k = i + 1; k < close; ++k)
        if (t[k] == '0' || t[k] == '1') items.push_back(t[k] - '0');
      size_t k = close + 1;
      int64_t repeat = 1;
      if (k < t.size() && t[k] == '*') {
        repeat = std::strtoll(t.c_str() + k + 1, nullptr, 10);
        while (++k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) {}
      }
      for (int64_t r = 0; r < repeat && static_cast<int64_t>(pattern.size()) <= layers; ++r)
        pattern.insert(pattern.end(), items.begin(), items.end());
      i = k;
    } else {
      ++i;
    }
  }
  if (static_cast<int64_t>(pattern.size()) != layers) {
    throw Error(
        "invalid_config", arg,
        arg + " \"" + t + "\": expected 1 or a list of one 0/1 per layer (" + std::to_string(layers) + ")");
  }
  int64_t dense = 0;
  while (dense < layers && pattern[static_cast<size_t>(dense)] == 0) ++dense;
  for (int64_t i = dense; i < layers; ++i)
    if (pattern[static_cast<size_t>(i)] == 0)
      throw Error("invalid_config", arg, arg + ": dense layers after the first MoE layer are not simulated");
  return dense;
}

}  // namespace

void moe_part(ArgReader& in, Json& model, std::vector<std::string>& ignored,
              std::vector<std::string>& assumed) {
  const int64_t experts = in.integer("--num-experts", 0, 0, 65536);
  if (experts == 0) return;
  Json moe;
  moe["experts"] = experts;
  moe["top_k"] = in.integer("--moe-router-topk", 2, 1, experts);
  moe["expert_ffn_hidden"] =
      in.integer("--moe-ffn-hidden-size", model["ffn_hidden"].get<int64_t>(), 1, 16777216);
  if (in.has("--moe-expert-capacity-factor")) {
    moe["capacity_factor"] = in.number("--moe-expert-capacity-factor", 1.0);
    moe["routing"] = "capacity";
    if (!in.flag("--moe-pad-expert-input-to-capacity"))
      ignored.push_back(
          "--moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity: buckets are costed padded to capacity");
  } else {
    moe["routing"] = "dropless";
    moe["imbalance"] = 1.0;
    assumed.push_back(
        "dropless routing (no --moe-expert-capacity-factor) with perfectly balanced experts (moe.imbalance 1.0)");
  }
  moe["shared_expert_ffn_hidden"] = in.integer("--moe-shared-expert-intermediate-size", 0, 0, 16777216);
  moe["first_dense_layers"] = first_dense_layers(in, model["layers"].get<int64_t>());
  moe["router_bias"] = in.flag("--moe-router-enable-expert-bias");
  model["moe"] = moe;
}

// Expert tensor parallelism and the token dispatcher, with Megatron-LM's defaults
// (arguments.py: --expert-tensor-parallel-size = tp, --moe-token-dispatcher-type allgather).
// flex (DeepEP / HybridEP fused dispatch) is not simulated: refused by name.
void moe_strategy_part(ArgReader& in, const Json& model, int64_t tp, Json& st,
                       std::vector<std::string>& assumed) {
  const int64_t etp = in.integer("--expert-tensor-parallel-size", tp, 1, 1 << 20);
  const std::string dispatcher = in.text("--moe-token-dispatcher-type", "allgather");
  if (dispatcher != "allgather" && dispatcher != "alltoall") {
    throw Error(
        "invalid_config", "--moe-token-dispatcher-type",
        "--moe-token-dispatcher-type " + dispatcher +
            ": only allgather and alltoall are simulated (flex, the DeepEP/HybridEP fused dispatch, is not)");
  }
  if (!model.contains("moe")) return;  // a dense model: Megatron uses neither
  if (dispatcher == "allgather" && tp > 1 && etp != 1) {
    throw Error(
        "invalid_config", "--moe-token-dispatcher-type",
        "--moe-token-dispatcher-type allgather (Megatron's default) with experts split by "
        "--tensor-model-parallel-size " +
            std::to_string(tp) +
            " is not simulated: pass --moe-token-dispatcher-type alltoall or --expert-tensor-parallel-size 1");
  }
  if (etp != tp) st["expert_tp"] = etp;
  st["moe_dispatcher"] = dispatcher;
  if (!in.has("--moe-token-dispatcher-type"))
    assumed.push_back("moe_dispatcher allgather: Megatron-LM's default --moe-token-dispatcher-type");
}

}  // namespace proteus::import_detail
