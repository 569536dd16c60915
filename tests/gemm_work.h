// One bf16 GEMM C[M,N] = A[M,K] B[K,N] as the cost model sees it, for the cost-model tests.
#pragma once
#include <algorithm>
#include <cstdint>

#include "proteus/cost_model.h"

namespace proteus::test {

inline ComputeWork gemm(int64_t m, int64_t n, int64_t k) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = m;
  w.gemm_n = n;
  w.gemm_k = k;
  w.flops = 2.0 * m * n * k;
  w.bytes = 2.0 * (m * k + k * n + m * n);  // bf16 A, B read, C written
  return w;
}

// The time of `w` less its launches: the part the GPU's clock and throughput decide.
inline double busy_s(const CostModel& c, const ComputeWork& w) {
  return c.compute_time_s(w) - c.gpu.kernel_launch_us * 1e-6 * std::max(1, w.kernels);
}

}  // namespace proteus::test
