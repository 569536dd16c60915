// The attention kernel a run uses (strategy.attention_kernel, docs/frameworks/attention-and-kernels.md
// "Attention kernels") and the measured kernel table of the Hopper presets (attention_table.h,
// docs/fidelity/attention.md "Attention by kernel"). Expected values are the FlashAttention-3 paper's
// (Shah et al., arXiv 2407.08608v2, Figures 5 and 6; H100 SXM5, head dimension 128).
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include "attention_work.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/attention_table.h"
#include "proteus/config.h"
#include "proteus/cost_model.h"
#include "proteus/import.h"
#include "proteus/simulation.h"
#include "relative_approx.h"

using namespace proteus;

namespace {

std::string config_text(const std::string& cluster, const std::string& strategy_extra) {
  return R"({"model": {"preset": "llama3-8b", "seq_len": 8192}, "cluster": {"preset": ")" + cluster +
         R"(", "nodes": 1}, "training": {"global_batch": 8, "seq_len": 8192, "precision": "bf16"},
         "strategy": {"dp": 8, )" +
         strategy_extra + "}}";
}

// One attention op per GPU: b*heads = 32 blocks of seq x seq x head_dim.
ComputeWork attention_work(int64_t seq, int64_t head_dim, bool backward) {
  return test::attention_work(seq, head_dim, backward, 32);
}

CostModel h100_cost(AttentionKernel kernel, bool causal = true) {
  CostModel cost = cost_model_of(parse_config(config_text("dgx-h100", R"("framework": "fsdp")")));
  cost.attention_kernel = kernel;
  cost.causal_attention = causal;
  return cost;
}

double time_ratio(AttentionKernel kernel, int64_t seq, bool causal, bool backward, int64_t head_dim = 128) {
  const ComputeWork w = attention_work(seq, head_dim, backward);
  return h100_cost(kernel, causal).compute_time_s(w) /
         h100_cost(AttentionKernel::Cudnn, causal).compute_time_s(w);
}

}  // namespace

TEST_CASE("attention kernel: each framework's default, an explicit choice kept") {
  const auto kernel_of = [](const std::string& extra) {
    return attention_kernel_of(parse_config(config_text("dgx-h100", extra)).strategy);
  };
  // Megatron-Core -> Transformer Engine: FusedAttention (cuDNN) preferred on sm90.
  CHECK(kernel_of(R"("framework": "megatron", "zero": 1)") == AttentionKernel::Cudnn);
  // TorchTitan: F.scaled_dot_product_attention, FLASH_ATTENTION first (FlashAttention-2).
  CHECK(kernel_of(R"("framework": "fsdp")") == AttentionKernel::Fa2);
  // Megatron-DeepSpeed: --use-flash-attn-v2.
  CHECK(kernel_of(R"("framework": "deepspeed")") == AttentionKernel::Fa2);
  CHECK(kernel_of(R"("framework": "fsdp", "attention_kernel": "cudnn")") == AttentionKernel::Cudnn);
  CHECK(kernel_of(R"("framework": "fsdp", "attention_kernel": "fa3")") == AttentionKernel::Fa3);
  CHECK(kernel_of(R"("framework": "fsdp", "attention_kernel": "auto")") == AttentionKernel::Fa2);
}

TEST_CASE("attention kernel: an unknown kernel is an error naming the field") {
  CHECK(test::error_path([] { parse_config(config_text("dgx-h100", R"("attention_kernel": "fa4")")); }) ==
        "strategy.attention_kernel");
  CHECK(test::error_path([] { parse_config(config_text("dgx-h100", R"("attention_kernel": 2)")); }) ==
        "strategy.attention_kernel");
}

TEST_CASE("attention kernel: FlashAttention-2 against cuDNN at the paper's measured points") {
  // Causal forward, 8K: FA2 333, cuDNN 529 TFLOP/s -> the op takes 529/333 as long.
  CHECK(time_ratio(AttentionKernel::Fa2, 8192, true, false) ==
        proteus::test::approx(529.0 / 333).epsilon(1e-12));
  CHECK(time_ratio(AttentionKernel::Fa2, 16384, true, false) ==
        proteus::test::approx(539.0 / 335).epsilon(1e-12));
  // No mask forward, 2K: 362 against 617.
  CHECK(time_ratio(AttentionKernel::Fa2, 2048, false, false) ==
        proteus::test::approx(617.0 / 362).epsilon(1e-12));
  // Backward, no mask, 8K: 318 against 518; a causal backward (not measured) takes the same.
  CHECK(time_ratio(AttentionKernel::Fa2, 8192, false, true) ==
        proteus::test::approx(518.0 / 318).epsilon(1e-12));
  CHECK(time_ratio(AttentionKernel::Fa2, 8192, true, true) ==
        proteus::test::approx(518.0 / 318).epsilon(1e-12));
  // FlashAttention-3 is faster than cuDNN at 16K causal forward: 616 against 539.
  CHECK(time_ratio(AttentionKernel::Fa3, 16384, true, false) ==
        proteus::test::approx(539.0 / 616).epsilon(1e-12));
  // FA2 reaches about 0.62 of cuDNN at every length from 2K (the paper's figures).
  for (int64_t s : {2048, 4096, 8192, 16384}) {
    CAPTURE(s);
    CHECK(1 / time_ratio(AttentionKernel::Fa2, s, true, false) == proteus::test::approx(0.62).epsilon(0.03));
  }
}

TEST_CASE("attention kernel: log-length interpolation, clamped outside the measured lengths") {
  // 4K to 8K causal forward: at 2^12.5 = 5793 the geometric mean of the two ratios.
  const double r4 = 518.0 / 319, r8 = 529.0 / 333;
  CHECK(time_ratio(AttentionKernel::Fa2, 5793, true, false) ==
        proteus::test::approx(std::sqrt(r4 * r8)).epsilon(1e-4));
  // Below 512 the 512 ratio (315/191), above 16K the 16K one (539/335).
  CHECK(time_ratio(AttentionKernel::Fa2, 128, true, false) ==
        proteus::test::approx(315.0 / 191).epsilon(1e-12));
  CHECK(time_ratio(AttentionKernel::Fa2, 131072, true, false) ==
        proteus::test::approx(539.0 / 335).epsilon(1e-12));
}

TEST_CASE("attention kernel: cuDNN, other head dimensions and GPUs without a table keep the roofline") {
  // The reference kernel at the level's length (level_seq, 16K): exactly attention_efficiency
  // (0.55 of 989.4 TFLOP/s on H100).
  const ComputeWork w = attention_work(16384, 128, false);
  CHECK(h100_cost(AttentionKernel::Cudnn).compute_time_s(w) == w.flops / (989.4e12 * 0.55));
  // Head dimension 64: not measured at this head dimension in the table, the roofline for any kernel.
  CHECK(time_ratio(AttentionKernel::Fa2, 8192, true, false, 64) == 1.0);
  // A100: no table.
  CostModel a100 = cost_model_of(parse_config(config_text("dgx-a100-80g", R"("framework": "fsdp")")));
  CHECK(a100.attention_kernel == AttentionKernel::Fa2);
  const double a100_fa2 = a100.compute_time_s(w);
  a100.attention_kernel = AttentionKernel::Cudnn;
  CHECK(a100.compute_time_s(w) == a100_fa2);
  // Unfused attention (flash_attention false): the table measures fused kernels only.
  CostModel unfused = h100_cost(AttentionKernel::Fa2);
  unfused.fused_attention = false;
  CHECK(unfused.compute_time_s(w) == h100_cost(AttentionKernel::Cudnn).compute_time_s(w));
}

TEST_CASE("attention kernel: fewer keys reach less of the level, as cuDNN measured") {
  // attention_efficiency holds at level_seq (16K keys); cuDNN's causal forward at 2K, 4K and 8K
  // is 484, 518 and 529 TFLOP/s against 539 at 16K, so the same FLOPs take 539/484, 539/518 and
  // 539/529 as long as at the level.
  const auto per_flop_s = [](AttentionKernel kernel, int64_t seq, bool causal, bool backward) {
    const ComputeWork w = attention_work(seq, 128, backward);
    return h100_cost(kernel, causal).compute_time_s(w) / w.flops;
  };
  const double level = per_flop_s(AttentionKernel::Cudnn, 16384, true, false);
  CHECK(level == proteus::test::approx(1 / (989.4e12 * 0.55)).epsilon(1e-12));
  CHECK(per_flop_s(AttentionKernel::Cudnn, 2048, true, false) / level ==
        proteus::test::approx(539.0 / 484).epsilon(1e-12));
  CHECK(per_flop_s(AttentionKernel::Cudnn, 4096, true, false) / level ==
        proteus::test::approx(539.0 / 518).epsilon(1e-12));
  CHECK(per_flop_s(AttentionKernel::Cudnn, 8192, true, false) / level ==
        proteus::test::approx(539.0 / 529).epsilon(1e-12));
  // Beyond the last measured length the level holds; at 512 keys 539/315, and below it clamps.
  CHECK(per_flop_s(AttentionKernel::Cudnn, 131072, true, false) ==
        proteus::test::approx(level).epsilon(1e-12));
  CHECK(per_flop_s(AttentionKernel::Cudnn, 256, true, false) / level ==
        proteus::test::approx(539.0 / 315).epsilon(1e-12));
  // Backward (no mask curve): 465 at 2K against 516 at 16K.
  const double level_bwd = per_flop_s(AttentionKernel::Cudnn, 16384, false, true);
  CHECK(per_flop_s(AttentionKernel::Cudnn, 2048, false, true) / level_bwd ==
        proteus::test::approx(516.0 / 465).epsilon(1e-12));
  // Another kernel: its own rate at its length over cuDNN's at 16K (FA2 causal 2K: 298).
  CHECK(per_flop_s(AttentionKernel::Fa2, 2048, true, false) / level ==
        proteus::test::approx(539.0 / 298).epsilon(1e-12));
}

TEST_CASE("attention kernel: level_seq outside the measured lengths is an error naming it") {
  const auto message = [](const std::string& level) {
    return test::error_path([&] {
      parse_config(
          R"({"model": {"preset": "gpt2-small"}, "cluster": {"preset": "dgx-a100-80g", "gpu": {"attention_table": {"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "level_seq": )" +
          level +
          R"(, "TFLOPS": {"cudnn": {"forward_causal": [1, 2], "forward": [1, 2], "backward": [1, 2]}}}}}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})");
    });
  };
  CHECK(message("1024") == test::kNoError);
  CHECK(message("2048") == "cluster.gpu.attention_table.level_seq");
  CHECK(message("0") == "cluster.gpu.attention_table.level_seq");
}

TEST_CASE("attention kernel: the search's compute bound allows the fastest kernel") {
  const GpuSpec gpu = parse_config(config_text("dgx-h100", R"("framework": "fsdp")")).cluster.gpu;
  // FA3 over cuDNN at 16K causal forward, 616/539, is the table's largest ratio.
  CHECK(max_attention_kernel_factor(gpu.attention_table) == doctest::Approx(616.0 / 539));
}

TEST_CASE("attention kernel: a malformed table is an error naming the field") {
  const auto message = [](const std::string& table) {
    return test::error_path([&] {
      parse_config(
          R"({"model": {"preset": "gpt2-small"}, "cluster": {"preset": "dgx-a100-80g", "gpu": {"attention_table": )" +
          table + R"(}}, "training": {"global_batch": 8}, "strategy": {"dp": 8}})");
    });
  };
  const std::string curves = R"({"forward_causal": [1, 2], "forward": [1, 2], "backward": [1, 2]})";
  CHECK(message(R"({"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "TFLOPS": {"cudnn": )" +
                curves + "}}") == test::kNoError);
  // A source that measured the causal forward only: the other curves may be left out.
  CHECK(
      message(
          R"({"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "TFLOPS": {"cudnn": {"forward_causal": [1, 2]}}})") ==
      test::kNoError);
  CHECK(message(R"({"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "TFLOPS": {"fa2": )" + curves +
                "}}") == "cluster.gpu.attention_table.reference");
  CHECK(
      message(
          R"({"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "TFLOPS": {"cudnn": {"forward_causal": [1], "forward": [1, 2], "backward": [1, 2]}}})") ==
      "cluster.gpu.attention_table.TFLOPS.cudnn.forward_causal");
  CHECK(message(R"({"head_dim": 128, "reference": "cudnn", "seq": [512, 1024], "TFLOPS": {"fa4": )" + curves +
                "}}") == "cluster.gpu.attention_table.TFLOPS.fa4");
  CHECK(message(R"({"head_dim": 128, "reference": "cudnn", "seq": [1024, 512], "TFLOPS": {"cudnn": )" +
                curves + "}}") == "cluster.gpu.attention_table.seq[1]");
}

TEST_CASE("attention kernel: a whole run follows the framework's kernel; Megatron's is unchanged") {
  const auto iteration_s = [](const std::string& extra) {
    const auto result =
        nlohmann::json::parse(simulate_json(config_text("dgx-h100", extra), SimulateOptions{}));
    return result["summary"]["iteration_time_s"].get<double>();
  };
  // TorchTitan (FA2 by default) is slower than the same run on cuDNN attention.
  const double fsdp_fa2 = iteration_s(R"("framework": "fsdp")");
  const double fsdp_cudnn = iteration_s(R"("framework": "fsdp", "attention_kernel": "cudnn")");
  CHECK(fsdp_fa2 > fsdp_cudnn);
  // Megatron's default is the preset's reference kernel: naming it changes nothing.
  CHECK(iteration_s(R"("framework": "megatron", "zero": 1)") ==
        iteration_s(R"("framework": "megatron", "zero": 1, "attention_kernel": "cudnn")"));
}

TEST_CASE("attention kernel: imports map what the input says of the kernel") {
  const std::string args =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 1024 --micro-batch-size 1 "
      "--vocab-size 1000 --bf16 ";
  const auto megatron = [&](const std::string& backend) {
    MegatronImportOptions o;
    o.cluster_json = "dgx-h100";
    o.nodes = 1;
    return parse_config(import_megatron(args + backend, o).config_json);
  };
  // Megatron-Core AttnBackend: fused = TE's FusedAttention (cuDNN), flash = flash-attn, auto =
  // TE's own choice (the framework default, cuDNN on Hopper), unfused = no fused kernel.
  CHECK(megatron("--attention-backend fused").strategy.attention_kernel == AttentionKernel::Cudnn);
  CHECK(megatron("--attention-backend flash").strategy.attention_kernel == AttentionKernel::Fa2);
  CHECK(megatron("--attention-backend auto").strategy.attention_kernel == AttentionKernel::Auto);
  CHECK_FALSE(megatron("--attention-backend unfused").model.flash_attention);
  // Hugging Face attn_implementation: sdpa and flash_attention_2 run FlashAttention-2 on
  // Hopper, flash_attention_3 FlashAttention-3, eager is unfused.
  const auto hf = [](const std::string& impl) {
    return nlohmann::json::parse(
        import_hf(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
            "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000,
            "max_position_embeddings": 1024, "attn_implementation": ")" +
                  impl + "\"}")
            .config_json);
  };
  CHECK(hf("sdpa")["strategy"]["attention_kernel"] == "fa2");
  CHECK(hf("flash_attention_2")["strategy"]["attention_kernel"] == "fa2");
  CHECK(hf("flash_attention_3")["strategy"]["attention_kernel"] == "fa3");
  CHECK(hf("eager")["model"]["flash_attention"] == false);
  CHECK_FALSE(hf("eager").contains("strategy"));
}

TEST_CASE("attention kernel: export to Megatron pins the kernel the config runs") {
  const auto backend = [](const std::string& extra) {
    const std::string out = export_megatron(config_text("dgx-h100", extra));
    const size_t at = out.find("--attention-backend ");
    REQUIRE(at != std::string::npos);
    return out.substr(at + 20, out.find_first_of(" \\\n", at + 20) - at - 20);
  };
  CHECK(backend(R"("framework": "megatron")") == "auto");
  CHECK(backend(R"("framework": "megatron", "attention_kernel": "cudnn")") == "fused");
  CHECK(backend(R"("framework": "fsdp")") == "flash");
}
