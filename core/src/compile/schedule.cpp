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

std::vector<Pass> zb_h1(int p, int m, int s) {
  const int warmup = std::min(p - s - 1, m);
  const int deferred = p - s - 1;  // W passes held back to fill the cool-down bubble
  std::vector<Pass> out;
  int f = 0, b = 0, w = 0;
  for (; f < warmup; ++f) out.push_back({PassKind::F, f, 0});
  while (f < m) {
    out.push_back({PassKind::F, f++, 0});
    out.push_back({PassKind::B, b++, 0});
    if (b - w > deferred) out.push_back({PassKind::W, w++, 0});
  }
  while (b < m) {
    out.push_back({PassKind::B, b++, 0});
    if (b - w > deferred) out.push_back({PassKind::W, w++, 0});
  }
  while (w < m) out.push_back({PassKind::W, w++, 0});
  return out;
}

}  // namespace

std::vector<Pass> stage_schedule(Schedule schedule, int stages, int micro_batches, int virtual_stages,
                                 int stage) {
  switch (schedule) {
    case Schedule::GPipe: return gpipe(micro_batches);
    case Schedule::OneFOneB: return one_f_one_b(stages, micro_batches, stage);
    case Schedule::Interleaved1F1B:
      return interleaved(stages, micro_batches, std::max(1, virtual_stages), stage);
    case Schedule::ZbH1: return zb_h1(stages, micro_batches, stage);
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
