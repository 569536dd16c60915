#include "te_cp_copies.h"

namespace proteus {

namespace {

// A tensor of x bytes copied (read, write), added in place (read both, write), zero-filled.
double copy(double x) { return 2 * x; }
double add(double x) { return 3 * x; }
double fill(double x) { return x; }

}  // namespace

TeCpCopyBytes te_cp_all_gather_copy_bytes(double q_bytes, double out_bytes, double kv_bytes, int cp) {
  TeCpCopyBytes b;
  if (cp <= 1) return b;
  const double gathered = cp * kv_bytes;         // K and V at full length
  b.forward = copy(gathered) + copy(out_bytes);  // index_select of k_ag, v_ag; out[i].copy_
  // dk, dv = zeros; k_ag, v_ag index_select; dq[i].copy_; dk/dv[range].add_ over 2cp + 1 of the
  // 2cp chunks; index_select of dk, dv.
  const double ranges = gathered * (2.0 * cp + 1) / (2.0 * cp);
  b.backward = fill(gathered) + copy(gathered) + copy(q_bytes) + add(ranges) + copy(gathered);
  return b;
}

double te_cp_a2a_exchange_copy_bytes(double tensor_bytes) { return 2 * copy(tensor_bytes); }

}  // namespace proteus
