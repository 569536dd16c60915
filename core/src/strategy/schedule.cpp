#include "proteus/schedule.h"

#include <algorithm>
#include <deque>

#include "dualpipe.h"
#include "proteus/error.h"

namespace proteus {

int PipelineSchedule::global_chunk(int stage, int local) const {
  int seen = 0;
  for (int c = 0; c < chunks(); ++c)
    if (chunk_stage[static_cast<size_t>(c)] == stage && seen++ == local) return c;
  return -1;
}

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

// Megatron-Core's interleaved schedule (pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving and get_schedule_table): virtual micro-batch k
// runs the k-th entry of a table that walks groups of n micro-batches through every chunk
// (the last group holds the rest); the backward walks the same table with the chunks reversed.
// Warm-up is (p - s - 1) * 2 + (v - 1) * n passes. With n = p this is the original Megatron-LM
// schedule (m a multiple of p).
std::vector<Pass> interleaved(int p, int m, int v, int n, int s) {
  std::vector<std::pair<int, int>> table;  // (micro-batch, chunk)
  for (int first = 0; first < m; first += n) {
    const int last = first + n >= m ? m : first + n;
    for (int c = 0; c < v; ++c)
      for (int mb = first; mb < last; ++mb) table.push_back({mb, c});
  }
  const int total = m * v;
  const int warmup = std::min((p - s - 1) * 2 + (v - 1) * n, total);
  auto fwd = [&](int k) {
    return Pass{PassKind::F, table[static_cast<size_t>(k)].first, table[static_cast<size_t>(k)].second};
  };
  auto bwd = [&](int k) {
    return Pass{PassKind::B, table[static_cast<size_t>(k)].first,
                v - 1 - table[static_cast<size_t>(k)].second};
  };
  std::vector<Pass> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(fwd(f));
  while (f < total) {
    out.push_back(fwd(f++));
    out.push_back(bwd(b++));
  }
  for (; b < total; ++b) out.push_back(bwd(b));
  return out;
}

// The zero-bubble family, ordered by playing the pipeline with unit-time F, B and W passes
// (Qi et al., section 2: the handcrafted schedules assume T_F = T_B = T_W). Each stage, when
// free, runs: a W when more than `w_limit` wait (their inputs stay in memory); else a B whose
// gradient has arrived (the critical path; lowest micro-batch, later chunk first); else an F
// while fewer than `in_flight` forwards await their B and the memory it would hold fits
// `memory` chunk forwards, counting each waiting W as `w_fraction` of one (later chunk first:
// finish the V); else a waiting W, which thus fills what would have been a bubble or frees
// the memory the next F needs. The zero-bubble runtime's schedulers keep the same account
// (zbv.py PipelineGraph.put: mem += f_mem, b_mem or w_mem, never above max_mem; "check mem
// before putting f": put_w until it fits), with one limit for every stage.
struct GreedyLimits {
  std::vector<int> in_flight, memory, w_limit;  // per stage
  double w_fraction = 0;                        // PipelineSchedule::w_memory_fraction
};

// Whether one more chunk forward fits the stage's memory limit (chunk-forward units).
bool forward_fits(int in_flight, size_t waiting_w, double w_fraction, int limit) {
  return in_flight + w_fraction * static_cast<double>(waiting_w) + 1 <= limit;
}

std::vector<std::vector<Pass>> unit_time_order(const PipelineSchedule& sc, const GreedyLimits& lim) {
  const int p = sc.stages, m = sc.micro_batches, v = sc.chunks_per_stage, chunks = sc.chunks();
  constexpr int kNotYet = 1 << 30;
  std::vector<std::vector<int>> f_done(static_cast<size_t>(chunks),
                                       std::vector<int>(static_cast<size_t>(m), kNotYet));
  std::vector<std::vector<int>> b_done = f_done;
  std::vector<std::vector<int>> local(static_cast<size_t>(p));  // global chunks of each stage, in order
  for (int c = 0; c < chunks; ++c)
    local[static_cast<size_t>(sc.chunk_stage[static_cast<size_t>(c)])].push_back(c);
  std::vector<std::vector<int>> next_f(static_cast<size_t>(p), std::vector<int>(static_cast<size_t>(v), 0));
  std::vector<std::vector<int>> next_b = next_f;
  std::vector<int> in_flight(static_cast<size_t>(p), 0);
  std::vector<std::deque<Pass>> waiting_w(static_cast<size_t>(p));
  std::vector<std::vector<Pass>> order(static_cast<size_t>(p));
  int64_t remaining = int64_t{3} * chunks * m;
  for (int t = 0; remaining > 0; ++t) {
    for (int s = 0; s < p; ++s) {
      const auto su = static_cast<size_t>(s);
      Pass pass{PassKind::W, -1, 0};
      if (static_cast<int>(waiting_w[su].size()) > lim.w_limit[su]) {
        pass = waiting_w[su].front();
        waiting_w[su].pop_front();
      } else {
        int best_k = -1;
        for (int k = 0; k < v; ++k) {  // B: lowest micro-batch, then the later chunk
          const int c = local[su][static_cast<size_t>(k)], mb = next_b[su][static_cast<size_t>(k)];
          if (mb >= m || f_done[c][mb] > t) continue;
          if (c + 1 < chunks && b_done[c + 1][mb] > t) continue;
          if (best_k < 0 || mb < next_b[su][static_cast<size_t>(best_k)] ||
              (mb == next_b[su][static_cast<size_t>(best_k)] && k > best_k))
            best_k = k;
        }
        if (best_k >= 0) {
          pass = {PassKind::B, next_b[su][static_cast<size_t>(best_k)]++, best_k};
        } else if (in_flight[su] < lim.in_flight[su] &&
                   forward_fits(in_flight[su], waiting_w[su].size(), lim.w_fraction, lim.memory[su])) {
          for (int k = v - 1; k >= 0 && best_k < 0; --k) {  // F: the later chunk first
            const int c = local[su][static_cast<size_t>(k)], mb = next_f[su][static_cast<size_t>(k)];
            if (mb < m && (c == 0 || f_done[c - 1][mb] <= t)) best_k = k;
          }
          if (best_k >= 0) pass = {PassKind::F, next_f[su][static_cast<size_t>(best_k)]++, best_k};
        }
        if (pass.micro_batch < 0 && !waiting_w[su].empty()) {
          pass = waiting_w[su].front();
          waiting_w[su].pop_front();
        }
      }
      if (pass.micro_batch < 0) continue;  // idle this unit
      const int c = local[su][static_cast<size_t>(pass.chunk)];
      if (pass.kind == PassKind::F) {
        f_done[c][pass.micro_batch] = t + 1;
        ++in_flight[su];
      } else if (pass.kind == PassKind::B) {
        b_done[c][pass.micro_batch] = t + 1;
        --in_flight[su];
        waiting_w[su].push_back({PassKind::W, pass.micro_batch, pass.chunk});
      }
      order[su].push_back(pass);
      --remaining;
    }
  }
  return order;
}

}  // namespace

double zb_w_memory_fraction(int64_t hidden, int64_t heads, int64_t seq_len) {
  if (hidden <= 0 || heads <= 0 || seq_len <= 0) return 0;
  const double h = static_cast<double>(hidden);
  return 32 * h / (34 * h + 5 * static_cast<double>(heads) * static_cast<double>(seq_len));
}

PipelineSchedule make_schedule(Schedule kind, int stages, int micro_batches,
                               const std::vector<int>& chunk_stage, int microbatch_group_size,
                               double w_memory_fraction) {
  PipelineSchedule sc;
  sc.stages = stages;
  sc.micro_batches = micro_batches;
  sc.chunks_per_stage = static_cast<int>(chunk_stage.size()) / std::max(1, stages);
  sc.chunk_stage = chunk_stage;
  sc.split_backward = zero_bubble_schedule(kind) || kind == Schedule::DualPipeV || kind == Schedule::DualPipe;
  const int p = stages, m = micro_batches;
  if (kind == Schedule::DualPipeV) {
    for (int s = 0; s < p; ++s) sc.order.push_back(dualpipe_v_stage(p, m, s));
    return sc;
  }
  if (kind == Schedule::DualPipe) {  // two copies over V-placed chunks (chunk p + j: copy B's j)
    sc.copies = 2;
    for (int s = 0; s < p; ++s) sc.order.push_back(dualpipe_stage(p, m, s));
    return sc;
  }
  GreedyLimits lim;
  // Only ZB-V counts them (zbv.py's account). ZB-H1 and ZB-H2 keep the paper's handcrafted
  // in-flight rules: counted at the runtime's estimate, ZB-H1 could defer no W on its first
  // stage and, with flash attention (where a waiting W keeps about what a forward does, not
  // 0.43 of it), its later stages deferred more than their slack (docs/design.md).
  lim.w_fraction = kind == Schedule::ZbV ? w_memory_fraction : 0;
  sc.w_memory_fraction = lim.w_fraction;
  for (int s = 0; s < p; ++s) {
    if (kind == Schedule::ZbH1) {
      // 1F1B's in-flight forwards (p - s); up to p - 1 deferred W, each holding only what
      // the weight gradient reads (the paper's M_W), so the peak stays 1F1B's.
      lim.in_flight.push_back(p - s);
      lim.memory.push_back(p - s);
      lim.w_limit.push_back(p - 1);
    } else if (kind == Schedule::ZbH2) {
      // Up to 2p - 1 micro-batches in flight on the first stage (the paper's (2p-1) M_B), and
      // up to 2p - 1 waiting W: the smallest limit of this greedy with no bubble at T_F = T_B =
      // T_W (p - 1 leaves one). Before, W could wait for up to m, so the memory grew with m
      // (6.2B GPT on 8 GPUs: 20 GiB of activations at m 24, 31 GiB at m 64); the paper's
      // ZB-H2 memory does not depend on m.
      lim.in_flight.push_back(2 * (p - s) - 1);
      lim.memory.push_back(2 * (p - s) - 1);
      lim.w_limit.push_back(2 * p - 1);
    } else if (kind == Schedule::ZbV) {
      // 2p chunk forwards in flight: p stages' worth of activations, 1F1B's first stage, and
      // the same memory limit with the waiting W counted (zbv.py: max_mem = 2 n_stage f_mem);
      // up to 2p - 1 waiting W (ZB-H1's rule over the 2p chunk stages). Before, W could wait
      // for up to 2m: nearly every W went to the end and the memory grew with m (6.2B GPT on
      // 8 GPUs, m 64: 25 GiB of activations against 1F1B's 9), unlike the paper's ZB-V. p - 1
      // leaves a bubble at T_F = T_B = T_W (7 units at p 8); 2p - 1 none.
      lim.in_flight.push_back(2 * p);
      lim.memory.push_back(2 * p);
      lim.w_limit.push_back(2 * p - 1);
    }
  }
  if (sc.split_backward) {
    sc.order = unit_time_order(sc, lim);
    sc.max_in_flight = lim.in_flight;
    return sc;
  }
  const int n = microbatch_group_size > 0 ? microbatch_group_size : p;
  for (int s = 0; s < p; ++s) {
    if (kind == Schedule::GPipe)
      sc.order.push_back(gpipe(m));
    else if (kind == Schedule::Interleaved1F1B)
      sc.order.push_back(interleaved(p, m, sc.chunks_per_stage, n, s));
    else
      sc.order.push_back(one_f_one_b(p, m, s));
  }
  return sc;
}

bool parse_pass(const std::string& text, Pass* out) {
  if (text.size() < 2) return false;
  const char k = text[0];
  if (k != 'F' && k != 'B' && k != 'W') return false;
  int64_t mb = 0, chunk = 0;
  size_t i = 1;
  auto number = [&](int64_t* value) {
    const size_t start = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      *value = *value * 10 + (text[i] - '0');
      if (*value > (1 << 24)) return false;
    }
    return i > start;
  };
  if (!number(&mb)) return false;
  if (i < text.size()) {
    if (text[i] != '.') return false;
    ++i;
    if (!number(&chunk) || i != text.size()) return false;
  }
  out->kind = k == 'F' ? PassKind::F : (k == 'B' ? PassKind::B : PassKind::W);
  out->micro_batch = static_cast<int>(mb);
  out->chunk = static_cast<int>(chunk);
  return true;
}

std::string to_string(const Pass& p) {
  std::string s(1, p.kind == PassKind::F ? 'F' : (p.kind == PassKind::B ? 'B' : 'W'));
  s += std::to_string(p.micro_batch);
  if (p.chunk > 0) s += "." + std::to_string(p.chunk);
  return s;
}

std::string to_string(const std::vector<Pass>& passes) {
  std::string s;
  for (const Pass& p : passes) {
    if (!s.empty()) s += p.with_previous ? '&' : ' ';
    s += to_string(p);
  }
  return s;
}

}  // namespace proteus

namespace proteus {

std::vector<Pass> stage_schedule(Schedule kind, int stages, int micro_batches, int virtual_stages,
                                 int stage) {
  const bool v = kind == Schedule::ZbV || kind == Schedule::DualPipeV || kind == Schedule::DualPipe;
  const int per_stage = v ? 2 : (kind == Schedule::Interleaved1F1B ? virtual_stages : 1);
  return make_schedule(kind, stages, micro_batches, chunk_placement(stages, per_stage, v))
      .order[static_cast<size_t>(stage)];
}

PipelineSchedule schedule_of(const StrategySpec& spec, const StrategyTree& tree, double w_memory_fraction) {
  if (spec.schedule != Schedule::Explicit)
    return make_schedule(spec.schedule, tree.stages, tree.micro_batches, tree.chunk_stage,
                         spec.microbatch_group_size, w_memory_fraction);
  PipelineSchedule sc;
  sc.stages = tree.stages;
  sc.micro_batches = tree.micro_batches;
  sc.chunks_per_stage = tree.virtual_stages;
  sc.chunk_stage = tree.chunk_stage;
  sc.copies = tree.copies;
  for (size_t s = 0; s < spec.schedule_stages.size(); ++s) {
    std::vector<Pass> order;
    for (size_t i = 0; i < spec.schedule_stages[s].size(); ++i) {
      const std::string& text = spec.schedule_stages[s][i];
      const std::string path =
          "strategy.schedule.stages[" + std::to_string(s) + "][" + std::to_string(i) + "]";
      // "&B3.1": overlapped with the entry before it (an F&B group).
      const bool with_previous = !text.empty() && text[0] == '&';
      Pass pass{};
      if (!parse_pass(with_previous ? text.substr(1) : text, &pass))
        throw invalid_config(path, "\"" + text +
                                       "\" is not a pass: F, B or W, the micro-batch, and \".chunk\" "
                                       "for a stage's second and later chunks (\"F0\", \"B3\", \"W2.1\"; "
                                       "\"&B3\" overlaps the entry before)");
      if (with_previous && i == 0)
        throw invalid_config(path,
                             "\"" + text + "\" overlaps the entry before it, but it is the stage's first");
      pass.with_previous = with_previous;
      sc.split_backward = sc.split_backward || pass.kind == PassKind::W;
      order.push_back(pass);
    }
    sc.order.push_back(std::move(order));
  }
  validate_schedule(sc, "strategy.schedule");
  return sc;
}

}  // namespace proteus
