#include "torch_op_sac.h"

#include <map>

namespace proteus {

namespace {

// One aten.mm per nn.Linear: a dense linear's GEMMs (Op::torch_linears of them) and a router's
// gate; not a grouped expert GEMM (torch._grouped_mm, not in the save list).
int mm_calls(const Op& op) {
  if (op.kind == OpKind::Router) return 1;
  if (op.kind != OpKind::Matmul || op.weights.empty() || op.find_dim("expert") >= 0) return 0;
  return op.torch_linears;
}

// The fused SDPA kernels are in the save list; attention without them (SDPA's math path: bmm,
// softmax, dropout) is recomputed. Flash attention's backward reads its output O.
bool saved_attention(const Op& op) { return op.kind == OpKind::Attention && op.backward_reads_output; }

}  // namespace

std::vector<double> torch_op_sac_saved_shares(const OpGraph& g) {
  std::vector<double> share(g.ops.size(), -1.0);
  std::map<int, int> mm_count;  // per block (layer index): aten.mm calls so far in its forward
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const int layer = g.modules[op.module].layer;
    if (layer < 0) continue;
    if (saved_attention(op)) {
      share[i] = 1.0;
      continue;
    }
    const int calls = mm_calls(op);
    int saved = 0;
    for (int c = 0; c < calls; ++c)
      if (++mm_count[layer] % 2 == 1) ++saved;  // "except every second mm"
    share[i] = calls > 0 ? static_cast<double>(saved) / calls : 0.0;
  }
  return share;
}

}  // namespace proteus
