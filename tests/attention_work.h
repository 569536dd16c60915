// One attention op of `blocks` (batch x heads) blocks of seq x seq x head_dim, compute-bound: no
// bytes, no launch time, so the ratio of two times is the ratio of two rates. Shared by the
// attention kernel and Blackwell attention tests.
#pragma once
#include <cstdint>
#include "proteus/exec_graph.h"

namespace proteus::test {

inline ComputeWork attention_work(int64_t seq, int64_t head_dim, bool backward, int64_t blocks) {
  ComputeWork w;
  w.op_kind = OpKind::Attention;
  w.gemm_m = w.gemm_n = seq;
  w.gemm_k = head_dim;
  w.gemm_batch = blocks;
  w.kernels = 0;
  w.backward = backward;
  w.flops = (backward ? 8.0 : 4.0) * static_cast<double>(seq * seq * head_dim * blocks);
  return w;
}

}  // namespace proteus::test
