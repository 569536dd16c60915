// How the model is trained: the config's "training" object.
#pragma once
#include <cstdint>

namespace proteus {

enum class Precision { Fp32, Tf32, Fp16, Bf16, Fp8 };
enum class Optimizer { Adam, Sgd };
// How Transformer Engine scales FP8 tensors (docs/frameworks/fp8.md, "FP8"): delayed (scale from the
// amax history: one read per cast), current (amax of the tensor itself: two reads), mxfp8
// (Blackwell block scaling, one E8M0 scale per 32 values, row- and column-wise copies).
enum class Fp8Recipe { Delayed, Current, Mxfp8 };

struct TrainingSpec {
  int64_t global_batch = 0;  // samples (sequences, images) per iteration
  int64_t seq_len = 0;       // transformers; 0 in the config = the model's
  Precision precision = Precision::Bf16;
  Optimizer optimizer = Optimizer::Adam;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // precision fp8 only
  bool fp8_attention = false;                 // TE's fp8_dpa: attention in FP8 too (default bf16)
};

const char* to_string(Precision);
const char* to_string(Optimizer);
const char* to_string(Fp8Recipe);
// Bytes of one element of activations / weights in this precision (fp32 & tf32 → 4, else 2; fp8 → 1
// for GEMM inputs but 2 for stored activations, as Transformer Engine keeps bf16 copies).
double activation_bytes(Precision);
bool is_mixed_precision(Precision);  // fp16/bf16/fp8: fp32 master weights, 16-bit weights

}  // namespace proteus
