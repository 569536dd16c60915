// Megatron's kernel choices -> the strategy's fused-kernel switches (bias-dropout, bias-activation,
// masked softmax, RoPE) and the attention kernel Transformer Engine is told to use.
#include <string>
#include <vector>

#include "megatron_arg_reader.h"
#include "megatron_parts.h"

namespace proteus::import_detail {

// Megatron's --no-*-fusion flags (megatron/training/arguments.py; core_transformer_config_from_args
// takes bias_activation_fusion from --no-bias-swiglu-fusion under --swiglu, else from
// --no-bias-gelu-fusion). docs/frameworks/attention-and-kernels.md, "Megatron's fused kernels".
void kernel_fusion_part(ArgReader& in, const Json& model, Json& st, std::vector<std::string>& ignored) {
  const bool swiglu = model.value("mlp", "gelu") == "swiglu";
  if (in.flag("--no-bias-dropout-fusion")) st["bias_dropout_fusion"] = false;
  const char* activation_flag = swiglu ? "--no-bias-swiglu-fusion" : "--no-bias-gelu-fusion";
  const char* other_flag = swiglu ? "--no-bias-gelu-fusion" : "--no-bias-swiglu-fusion";
  if (in.flag(activation_flag)) st["bias_activation_fusion"] = false;
  if (in.flag(other_flag))
    ignored.push_back(std::string(other_flag) + ": the model's activation is " +
                      (swiglu ? "SwiGLU" : "GELU"));
  if (in.flag("--no-masked-softmax-fusion")) {
    st["masked_softmax_fusion"] = false;
    if (model.value("flash_attention", false))
      ignored.push_back("--no-masked-softmax-fusion: flash attention has no separate softmax");
  }
  if (in.flag("--no-rope-fusion")) {
    st["apply_rope_fusion"] = false;
    if (model.value("learned_positions", true))
      ignored.push_back("--no-rope-fusion: the model has no rotary embedding");
  }
  if (in.flag("--no-gradient-accumulation-fusion")) st["gradient_accumulation_fusion"] = false;
  if (in.flag("--no-persist-layer-norm"))
    ignored.push_back("--no-persist-layer-norm: another fused LayerNorm kernel, costed the same");
}

// --attention-backend names the kernel Transformer Engine may use (Megatron-Core's AttnBackend
// sets NVTE_FUSED_ATTN / NVTE_FLASH_ATTN): fused -> cuDNN, flash -> flash-attn (FlashAttention-2;
// TE takes FlashAttention-3 instead where it is installed on Hopper). auto is what TE picks
// itself, the framework's default (strategy.attention_kernel "auto"); unfused / local are not a
// fused kernel (model.flash_attention false, model_part). docs/frameworks/attention-and-kernels.md,
// "Attention kernels".
void attention_kernel_part(ArgReader& in, Json& st, std::vector<std::string>& assumed) {
  if (!in.has("--attention-backend")) return;
  const std::string b =
      in.choice("--attention-backend", "auto", {"auto", "flash", "fused", "unfused", "local"});
  if (b == "fused") st["attention_kernel"] = "cudnn";
  if (b == "flash") {
    st["attention_kernel"] = "fa2";
    assumed.push_back(
        "--attention-backend flash: FlashAttention-2 (Transformer Engine runs FlashAttention-3 where it is "
        "installed on Hopper: set strategy.attention_kernel \"fa3\")");
  }
}

}  // namespace proteus::import_detail
