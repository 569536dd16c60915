// What the program builder looks up about ops, computed once per compile and shared by every
// rank: each chunk's ops, each tensor's consumers, labels, full-recompute segments, the
// stages that hold each weight, and the memory each op keeps for its backward.
#pragma once
#include <utility>
#include <vector>

#include "program_builder.h"
#include "recompute_groups.h"

namespace proteus {

struct Segment {  // a run of ops recomputed together under full recompute
  std::vector<int> ops;
  double checkpoint_bytes = 0;
};

class OpIndex {
 public:
  OpIndex(const ProgramInputs& in, ExecGraph* exec);

  std::vector<std::vector<int>> chunk_ops;                  // ops of each model chunk, forward order
  std::vector<std::vector<std::pair<int, int>>> consumers;  // per tensor: (op, input index)
  std::vector<int> labels;                                  // per op: ExecGraph label id
  std::vector<Segment> segments;
  std::vector<int> seg_of_op;  // -1: not under full recompute
  // Parameter groups (fsdp_units.cpp): FSDP2's (framework fsdp; TorchTitan's apply_fsdp calls
  // fully_shard on each TransformerBlock and on the model) and Megatron-FSDP's (framework
  // megatron, ZeRO-3: fsdp_unit_modules [TransformerLayer], the other parameters in unit 0):
  // per chunk, the root unit first (every op outside the layers: embedding, final norm, output
  // layer, loss), then one unit per layer; each unit's ops in forward order. What is gathered,
  // prefetched and reduced as one parameter group.
  std::vector<std::vector<int>> fsdp_units;
  std::vector<char> fsdp_unit_is_root;
  std::vector<int> unit_of_op;                          // -1: none (another framework)
  std::vector<double> fsdp_unit_elements;               // per unit: weight elements gathered on a rank
  std::vector<double> megatron_fsdp_prefetch_elements;  // per chunk: suggested_AG_prefetch_size
  // The units whose gathers a pass issues ahead while `unit` computes. FSDP2, one: forward, the
  // next in execution order (the root, which runs first, prefetches layer 0; the last layer
  // nothing, the root being gathered); backward, in reverse post-forward order, the root (its
  // output layer runs first) prefetches the last layer, a layer the one before it.
  // Megatron-FSDP: the next layers in the pass's order until the prefetched elements reach the
  // prefetch size; in the backward nothing from the root.
  std::vector<int> fsdp_prefetch_units(int unit, bool forward) const;
  // Gathered weights that stay from the forward to the backward (no pp): the root's, which
  // FSDP2 never reshards after the forward ("For the root, do not reshard after forward since
  // for training, the parameters would be freed and all-gathered immediately",
  // FSDPState._lazy_init) and Megatron-FSDP never releases (its post-forward release is
  // registered on FSDP unit modules only); under FSDP2 also the last block's, which
  // TorchTitan's apply_fsdp does not reshard after its forward ("FSDP would prefetch it
  // immediately").
  bool keeps_gather_to_backward(int op) const;
  // The root unit's gathered weights are freed only by its post-backward, which FSDP2 runs in
  // the root's final backward callback (its inputs, the token ids, need no gradient, so no
  // post-backward hook fires earlier): after the backward of its first op, the embedding.
  bool frees_gather_at_root_post_backward(int op) const;
  // Megatron-FSDP's root (no pp): its buckets are released only when the iteration's gradient
  // sync resets the all-gather pipeline, so the first micro-batch's gather serves every other
  // and no post-backward frees it (root_post_backward_frees skips it).
  bool gather_kept_for_iteration(int unit) const;
  // Under TorchTitan's op-level checkpointing (torch_op_sac.h): an op of a segment whose
  // output the forward saved whole is not run again; the replay serves it from the cache.
  // Compiled (torch.compile's partitioner), an op whose output no backward needs is not run
  // again either (a row-parallel linear whose reduce-scatter is saved, the block's last add).
  bool replay_served_from_cache(int op) const;
  RecomputeGroups groups;                       // selective recompute by module (recompute_groups.h)
  std::vector<std::vector<int>> weight_stages;  // stages that hold each weight tensor
  // Per parameter (strategy/optimizer_state.h): optimizer states, the step's HBM traffic and
  // what the step allocates while it runs.
  double weight_bytes = 2, opt_state_bytes = 12, opt_traffic_bytes = 30, opt_transient_bytes = 0;

  // Selective recompute drops what the op saves beyond its inputs.
  bool drops_extra(int op) const;
  double fwd_alloc(int op) const;        // activation bytes the forward keeps
  double recompute_alloc(int op) const;  // ... and the recompute before the backward
  double held(int op) const;             // ... all of which the op's backward frees
  double replay_alloc(int op) const;     // what running the op's forward again allocates
  // Ops with weights get a separate weight-gradient task when it does any work.
  bool has_w(int op) const;
  // Matmul and convolution backward needs the input for the weight gradient only.
  bool input_needed_by_w(int op) const;

 private:
  void build_segments();
  void build_fsdp_units();
  void count_unit_elements();
  double cached_output_bytes(int op) const;
  bool reads_cached_reduce_scatter(int producer, int consumer, int k) const;
  void mark_dropped_replays();
  std::vector<char> replay_dropped_;  // per op: compiled, its replay is dead code
  double segment_replay_bytes(int op) const;
  const OpGraph& g_;
  const StrategyTree& tree_;
  const std::vector<OpPlan>& plans_;
};

}  // namespace proteus
