// Megatron-DeepSpeed's launch arguments (microsoft/Megatron-DeepSpeed megatron/arguments.py
// _add_zero_args, _add_activation_checkpoint_args; DeepSpeed's add_config_arguments): --deepspeed
// hands the model to DeepSpeed's engine (framework "deepspeed", its pipeline engine under pp > 1)
// and --zero-stage names the ZeRO stage of the DeepSpeed config, which the importer does not read
// (docs/import.md, "Megatron-DeepSpeed").
#include "megatron_parts.h"

namespace proteus::import_detail {

namespace {

void zero_stage(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                std::vector<std::string>& assumed) {
  if (in.flag("--use-distributed-optimizer"))
    ignored.push_back(
        "--use-distributed-optimizer: Megatron's distributed optimizer is not used under --deepspeed; "
        "DeepSpeed's ZeRO stage (--zero-stage) applies");
  if (in.has("--zero-stage")) {
    st["zero"] = in.integer("--zero-stage", 1, 0, 3);
  } else {
    st["zero"] = 1;
    assumed.push_back(
        "ZeRO stage 1: Megatron-DeepSpeed's --zero-stage default (the DeepSpeed config sets it)");
  }
  if (in.has("--deepspeed-config"))
    assumed.push_back(
        "--deepspeed_config " + in.text("--deepspeed-config") +
        " is not read: the ZeRO stage is --zero-stage's, the batch sizes the Megatron arguments' "
        "(DeepSpeed checks that they agree)");
}

// Memory-saving options of DeepSpeed's activation checkpointing: the checkpoints themselves.
void checkpoint_options(ArgReader& in, std::vector<std::string>& ignored) {
  if (in.flag("--partition-activations"))
    ignored.push_back(
        "--partition-activations: the checkpointed layer inputs split over tensor parallelism "
        "are not simulated (each rank keeps the whole input)");
  if (in.flag("--checkpoint-in-cpu"))
    ignored.push_back("--checkpoint-in-cpu: checkpoints offloaded to host memory are not simulated");
  if (in.has("--checkpoint-num-layers") && in.integer("--checkpoint-num-layers", 1, 1, 1 << 20) != 1)
    ignored.push_back("--checkpoint-num-layers: full recompute is simulated one layer at a time");
}

}  // namespace

// DeepSpeed-Ulysses (deepspeed.sequence.layer.DistributedAttention): the sequence split over the
// --ds-sequence-parallel-size ranks, heads exchanged by all-to-all around the attention, gradients
// reduced and ZeRO-sharded over the data x sequence ranks (sequence_data_parallel_group): what
// strategy.cp is under framework deepspeed. Megatron-DeepSpeed's checks (megatron/arguments.py,
// megatron/initialize.py) are kept as errors.
int64_t context_parallel_size(ArgReader& in) {
  const int64_t megatron = in.integer("--context-parallel-size", 1, 1, 1 << 20);
  const int64_t ulysses = in.integer("--ds-sequence-parallel-size", 1, 1, 1 << 20);
  if (ulysses == 1) return megatron;
  const auto refuse = [](const std::string& why) {
    throw Error("invalid_config", "--ds-sequence-parallel-size", "--ds-sequence-parallel-size: " + why);
  };
  if (megatron > 1) refuse("\"Megatron-lm CP is not compatible with Deepspeed SP\"; give one of the two");
  if (!in.flag("--deepspeed"))
    refuse("\"deepspeed must be enable when ds_sequence_parallel_size > 1\"; add --deepspeed");
  if (in.flag("--sequence-parallel"))
    refuse(
        "DeepSpeed's sequence parallelism \"is not compatible with Megatron-LM's sequence parallel\"; "
        "remove --sequence-parallel");
  if (in.flag("--ds-sequence-parallel-fpdt"))
    refuse("FPDT (--ds-sequence-parallel-fpdt: chunked attention with host offloading) is not simulated");
  return ulysses;
}

void deepspeed_part(ArgReader& in, Json& st, std::vector<std::string>& ignored,
                    std::vector<std::string>& assumed) {
  if (st.value("cp", int64_t{1}) > 1 && in.has("--ds-sequence-parallel-size"))
    assumed.push_back("DeepSpeed-Ulysses over " + std::to_string(st["cp"].get<int64_t>()) +
                      " ranks: strategy.cp with cp_comm_type \"a2a\", framework deepspeed's");
  if (in.flag("--no-pipeline-parallel") && st.value("pp", 1) > 1)
    throw Error("invalid_config", "--no-pipeline-parallel",
                "contradicts --pipeline-model-parallel-size " + std::to_string(st.value("pp", 1)));
  if (!in.flag("--deepspeed")) {
    for (const char* name : {"--zero-stage", "--deepspeed-config", "--deepspeed-activation-checkpointing"})
      if (in.has(name)) ignored.push_back(std::string(name) + ": used only with --deepspeed");
    return;
  }
  st["framework"] = "deepspeed";
  if (st.contains("align_grad_reduce")) {
    st.erase("align_grad_reduce");
    ignored.push_back(
        "--no-align-grad-reduce / --no-delay-grad-reduce: Megatron-Core's schedules' option; "
        "DeepSpeed's engine reduces the gradients");
  }
  zero_stage(in, st, ignored, assumed);
  // Whether ZeRO reduces during the backward is the JSON's overlap_comm, whose default is true at
  // stage 3 only; it matters at stages 1-2 outside a pipeline and at 3 (docs/frameworks/
  // data-parallelism.md, "What DeepSpeed overlaps").
  StrategySpec spec;
  spec.zero = static_cast<int>(st["zero"].get<int64_t>());
  spec.pp = static_cast<int>(st.value("pp", int64_t{1}));
  const int zero = spec.zero;
  st["overlap_grad_reduce"] = zero == 3;
  if (deepspeed_can_overlap_grad_reduce(spec))
    assumed.push_back(std::string("overlap_comm ") + (zero == 3 ? "true" : "false") +
                      ": DeepSpeed's default at ZeRO stage " + std::to_string(zero) +
                      " (set strategy.overlap_grad_reduce if the DeepSpeed config says otherwise)");
  in.flag("--deepspeed-activation-checkpointing");  // DeepSpeed's implementation of the recompute
  checkpoint_options(in, ignored);
  if (in.has("--pp-partition-method"))
    ignored.push_back("--pp-partition-method " + in.text("--pp-partition-method") +
                      ": layers are split evenly over the stages (DeepSpeed's 'parameters' and "
                      "'type:' balancing are not simulated)");
}

}  // namespace proteus::import_detail
