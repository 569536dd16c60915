#include "proteus/schedule.h"

#include <algorithm>

namespace proteus {

bool schedule_splits_backward(Schedule schedule) { return schedule == Schedule::ZbH1; }

namespace {

std::vector<Pass> gpipe(int m) {
  std::vector<Pass> out;
  for (int i = 0; i < m; ++i) out.push_back({PassKind::F, i, 0});
  for (int i = 0; i < m; ++i) out.push_back({PassKind::B, i, 0});
  return out;
}

std::vector<Pass> one_f_one_b(int p, int m, int s) {
  const int warmup = std::min(p - s - 1, m);
  std::vector<Pass> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({PassKind::F, f, 0});
  while (f < m) {
    out.push_back({PassKind::F, f++, 0});
    out.push_back({PassKind::B, b++, 0});
  }
  while (b < m) out.push_back({PassKind::B, b++, 0});
  return out;
}

// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving):
// virtual micro-batch k maps to chunk (k / p) % v (reversed for backward) and micro-batch
// (k / (p v)) * p + k % p; warm-up is (p - s - 1) * 2 + (v - 1) * p passes.
std::vector<Pass> interleaved(int p, int m, int v, int s) {
  const int total = m * v;
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  auto fchunk = [&](int k) { return (k / p) % v; };
  auto bchunk = [&](int k) { return v - 1 - (k / p) % v; };
  const int warmup = std::min((p - s - 1) * 2 + (v - 1) * p, total);
  std::vector<Pass> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({PassKind::F, mb_of(f), fchunk(f)});
  while (f < total) {
    out.push_back({PassKind::F, mb_of(f), fchunk(f)});
    ++f;
    out.push_back({PassKind::B, mb_of(b), bchunk(b)});
    ++b;
  }
  for (; b < total; ++b) out.push_back({PassKind::B, mb_of(b), bchunk(b)});
  return out;
}

// ZB-H1 (Qi et al. 2023): the order comes from playing the pipeline with unit-time F, B and W
// passes under the paper's rules: a stage runs B as soon as its gradient has arrived (B is the
// critical path), else the next F while fewer than p-s micro-batches await their B (1F1B's
// in-flight limit), else a pending W, which thus fills what would have been bubbles; at most
// p-s-1 W passes may wait.
std::vector<Pass> zb_h1(int p, int m, int stage) {
  constexpr int kUnknown = -1;
  std::vector<std::vector<int>> f_done(p, std::vector<int>(m, kUnknown));
  std::vector<std::vector<int>> b_done(p, std::vector<int>(m, kUnknown));
  std::vector<std::vector<Pass>> order(p);
  std::vector<int> next_f(p, 0), next_b(p, 0), next_w(p, 0), free_at(p, 0);
  int remaining = 3 * p * m;
  for (int t = 0; remaining > 0; ++t) {
    for (int s = p - 1; s >= 0; --s) {  // later stages first: their B unblocks earlier stages
      if (free_at[s] > t) continue;
      const int b = next_b[s];
      const bool b_ready = b < m && f_done[s][b] != kUnknown && f_done[s][b] <= t &&
                           (s == p - 1 || (b_done[s + 1][b] != kUnknown && b_done[s + 1][b] <= t));
      const int f = next_f[s];
      const bool f_ready = f < m && f - next_b[s] < p - s &&
                           (s == 0 || (f_done[s - 1][f] != kUnknown && f_done[s - 1][f] <= t));
      // At most p-s-1 deferred W passes (their saved inputs stay in memory), so the peak stays
      // near 1F1B's: the last stage runs each W right after its B.
      const bool w_forced = next_b[s] - next_w[s] > p - s - 1;
      if (w_forced) {
        order[s].push_back({PassKind::W, next_w[s]++, 0});
      } else if (b_ready) {
        order[s].push_back({PassKind::B, b, 0});
        b_done[s][b] = t + 1;
        ++next_b[s];
      } else if (f_ready) {
        order[s].push_back({PassKind::F, f, 0});
        f_done[s][f] = t + 1;
        ++next_f[s];
      } else if (next_w[s] < next_b[s]) {
        order[s].push_back({PassKind::W, next_w[s]++, 0});
      } else {
        continue;  // idle this unit
      }
      free_at[s] = t + 1;
      --remaining;
    }
  }
  return order[stage];
}

}  // namespace

std::vector<Pass> stage_schedule(Schedule schedule, int stages, int micro_batches, int virtual_stages,
                                 int stage) {
  switch (schedule) {
    case Schedule::GPipe:
      return gpipe(micro_batches);
    case Schedule::OneFOneB:
      return one_f_one_b(stages, micro_batches, stage);
    case Schedule::Interleaved1F1B:
      return interleaved(stages, micro_batches, std::max(1, virtual_stages), stage);
    case Schedule::ZbH1:
      return zb_h1(stages, micro_batches, stage);
  }
  return {};
}

std::string to_string(const std::vector<Pass>& passes) {
  std::string s;
  for (const Pass& p : passes) {
    if (!s.empty()) s += ' ';
    s += (p.kind == PassKind::F) ? 'F' : (p.kind == PassKind::B ? 'B' : 'W');
    s += std::to_string(p.micro_batch);
    if (p.chunk > 0) s += "." + std::to_string(p.chunk);
  }
  return s;
}

}  // namespace proteus
