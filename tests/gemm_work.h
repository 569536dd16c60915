// One GEMM C[M,N] = A[M,K] B[K,N] as the cost model sees it, for the cost-model tests: bf16
// operands by default, FP8 ones with operand_bytes 1 (the output stays 16-bit, as TE writes it).
#pragma once
#include <algorithm>
#include <cstdint>

#include "proteus/cost_model.h"

namespace proteus::test {

inline ComputeWork gemm(int64_t m, int64_t n, int64_t k, double operand_bytes = 2) {
  ComputeWork w;
  w.op_kind = OpKind::Matmul;
  w.gemm_m = m;
  w.gemm_n = n;
  w.gemm_k = k;
  w.flops = 2.0 * m * n * k;
  w.bytes = operand_bytes * static_cast<double>(m * k + k * n) +
            2.0 * static_cast<double>(m * n);  // A, B read, C written
  return w;
}

// The time of `w` less its launches: the part the GPU's clock and throughput decide.
inline double busy_s(const CostModel& c, const ComputeWork& w) {
  return c.compute_time_s(w) - c.gpu.kernel_launch_us * 1e-6 * std::max(1, w.kernels);
}

}  // namespace proteus::test
