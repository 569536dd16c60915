// Which layers each model chunk holds and which stage runs it: the even split, Megatron-Core's
// uneven-pipeline options, and the chunk placement (round robin or V).
#include <algorithm>
#include <string>

#include "proteus/error.h"
#include "proteus/strategy_tree.h"

namespace proteus {

std::vector<int> split_layers(int layers, int chunks) {
  std::vector<int> out(static_cast<size_t>(chunks), 0);
  if (chunks <= 0) return out;
  const int base = (layers + chunks - 1) / chunks;
  int deficit = base * chunks - layers;
  std::fill(out.begin(), out.end(), base);
  // Take the missing layers from the ends inwards: first, last, second, second-to-last, ...
  for (int i = 0; deficit > 0 && i < chunks; ++i) {
    const int idx = (i % 2 == 0) ? i / 2 : chunks - 1 - i / 2;
    if (out[idx] > 0) {
      --out[idx];
      --deficit;
    }
  }
  // Tiny models with more chunks than layers per chunk can still leave a deficit: spread it.
  for (int idx = 0; deficit > 0 && idx < chunks; ++idx)
    while (deficit > 0 && out[idx] > 0) {
      --out[idx];
      --deficit;
    }
  return out;
}

std::vector<int> chunk_placement(int stages, int chunks_per_stage, bool v_shape) {
  std::vector<int> out(static_cast<size_t>(stages * chunks_per_stage));
  for (int c = 0; c < stages * chunks_per_stage; ++c)
    out[static_cast<size_t>(c)] = v_shape ? (c < stages ? c : 2 * stages - 1 - c) : c % stages;
  return out;
}

namespace {

const std::string kFirst = "strategy.first_stage_layers", kLast = "strategy.last_stage_layers",
                  kEmbedding = "strategy.account_for_embedding_in_pipeline_split",
                  kLoss = "strategy.account_for_loss_in_pipeline_split";

std::string str(int64_t n) { return std::to_string(n); }

// Layers on each pipeline rank under --decoder-first/last-pipeline-num-layers. Megatron-Core
// (transformer_block.py get_num_layers_to_build): the ranks in between share what the ends leave
// and must divide it ("With uneven pipelineing the left over layers must be divisible by left
// over stages"); TransformerConfig.__post_init__ refuses pp 1 and counts below 1.
std::vector<int> first_last_rank_layers(const StrategySpec& s, int layers) {
  const std::string& named = s.first_stage_layers > 0 ? kFirst : kLast;
  if (s.pp < 2) throw invalid_config(named, "uneven first/last pipeline stages need pp >= 2");
  const bool first = s.first_stage_layers > 0, last = s.last_stage_layers > 0;
  const int middle = s.pp - (first ? 1 : 0) - (last ? 1 : 0);
  const int rest = layers - s.first_stage_layers - s.last_stage_layers;
  if (rest < 0)
    throw invalid_config(named, "the first and last stages take " +
                                    str(s.first_stage_layers + s.last_stage_layers) +
                                    " layers but the model has " + str(layers));
  if (middle > 0 && rest % middle != 0)
    throw invalid_config(named, "the " + str(rest) + " layers left for the " + str(middle) +
                                    " middle stages do not divide evenly (Megatron-Core: the left over "
                                    "layers must be divisible by left over stages)");
  // pp 2 with both ends set has no middle: Megatron-Core builds exactly the two counts, so they
  // must add up to the model (else layers would be lost or invented).
  if (middle == 0 && rest != 0)
    throw invalid_config(named, "with pp " + str(s.pp) + " the first and last stages hold every layer: " +
                                    str(s.first_stage_layers + s.last_stage_layers) +
                                    " given, the model has " + str(layers));
  std::vector<int> out(static_cast<size_t>(s.pp), middle > 0 ? rest / middle : 0);
  if (first) out.front() = s.first_stage_layers;
  if (last) out.back() = s.last_stage_layers;
  return out;
}

}  // namespace

std::vector<int> megatron_stage_layers(const StrategySpec& s, int layers) {
  const int v = chunks_per_stage(s), chunks = model_chunks(s);
  const bool first_last = s.first_stage_layers > 0 || s.last_stage_layers > 0;
  const bool e = s.embedding_as_layer, l = s.loss_as_layer;
  // get_num_layers_to_build asserts "Does not support standalone embedding stage and standalone
  // loss stage with uneven pp".
  if (first_last && (e || l))
    throw invalid_config(e ? kEmbedding : kLoss,
                         "cannot be combined with first_stage_layers / last_stage_layers (Megatron-Core)");
  if (!s.stage_layers.empty())
    throw invalid_config("strategy.stage_layers",
                         "give either stage_layers or Megatron-Core's uneven-pipeline options, not both");
  std::vector<int> out(static_cast<size_t>(chunks), 0);
  if (first_last) {
    // Megatron-Core places chunks round robin; a V puts the first and the last chunk on stage 0,
    // where "the first stage's layers" has no single meaning.
    if (v_placement(s))
      throw invalid_config(
          s.first_stage_layers > 0 ? kFirst : kLast,
          "needs chunks placed round robin; this schedule places them in a V (use stage_layers)");
    const std::vector<int> per_rank = first_last_rank_layers(s, layers);
    const std::vector<int> stage_of = chunk_placement(s.pp, v, false);
    for (int r = 0; r < s.pp; ++r)
      if (per_rank[static_cast<size_t>(r)] % v != 0)
        throw invalid_config(
            r == 0 && s.first_stage_layers > 0         ? kFirst
            : r == s.pp - 1 && s.last_stage_layers > 0 ? kLast
                                                       : std::string("strategy.virtual_stages"),
            "stage " + str(r) + " holds " + str(per_rank[static_cast<size_t>(r)]) +
                " layers, not divisible by its " + str(v) + " model chunks (Megatron-Core requires it)");
    for (int c = 0; c < chunks; ++c)
      out[static_cast<size_t>(c)] = per_rank[static_cast<size_t>(stage_of[static_cast<size_t>(c)])] / v;
    return out;
  }
  // The embedding and the loss each count as a layer: pp * v chunks share layers + e + l slots
  // evenly, then the first chunk gives one to the embedding and the last one to the loss
  // (Llama 3 405B: 126 + 2 on 16 stages = 8 slots each: 7, 8 x 14, 7).
  const int slots = layers + (e ? 1 : 0) + (l ? 1 : 0);
  if (slots % chunks != 0)
    throw invalid_config(
        e ? kEmbedding : kLoss,
        str(layers) + " layers + " + str(slots - layers) + " (embedding/loss) = " + str(slots) +
            " do not divide evenly into pp x chunks = " + str(chunks) + " (Megatron-Core requires it)");
  std::fill(out.begin(), out.end(), slots / chunks);
  if (e) --out.front();
  if (l) --out.back();
  if (out.front() < 0 || out.back() < 0)
    throw invalid_config(e ? kEmbedding : kLoss, "a chunk of " + str(slots / chunks) +
                                                     " slot cannot hold both the embedding and the loss");
  return out;
}

}  // namespace proteus
