// A measured GEMM throughput table (DESIGN.md section 7, "Costs come from tables"): TFLOP/s
// of one M x N x K matrix multiply measured on a grid of sizes, per precision. The cost model
// interpolates it in log space (log2 of sizes, log2 of throughput) and falls back to the
// roofline for shapes below the grid (docs/fidelity/gemm.md).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "proteus/training_spec.h"

namespace proteus {

struct GemmTable {
  // Measured sizes per dimension, strictly increasing, each at least 2 values.
  std::vector<int64_t> m, n, k;
  // Per precision: TFLOP/s at (m[i], n[j], k[l]), stored at (i * n.size() + j) * k.size() + l.
  std::map<Precision, std::vector<double>> TFLOPS;
  bool empty() const { return TFLOPS.empty(); }
};

// Throughput (TFLOP/s) of an m x n x k GEMM (batch B counts as B*m rows: the batch's tiles
// fill the GPU like a taller GEMM's) by trilinear interpolation of log2(TFLOP/s) over
// log2(size). A size above a dimension's largest measured value takes that value (throughput
// has saturated there); a size below the smallest, or a precision without a table, gives
// nothing (the roofline applies).
std::optional<double> gemm_table_TFLOPS(const GemmTable& table, Precision precision, int64_t m, int64_t n,
                                        int64_t k, int64_t batch);

}  // namespace proteus
