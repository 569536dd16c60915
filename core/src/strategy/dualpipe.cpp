// DualPipeV, step by step as dualpipev.py runs it (its eight steps are quoted below). A
// backward "with zero bubble" (enable_zb) leaves its weight gradient in WeightGradStore, a
// FIFO that _weight_chunk pops; any other backward computes its weight gradient at once,
// written here as B immediately followed by its W. _forward_backward_chunk(a, b) is an
// overlapped group: F of chunk a, then B (and W) of chunk b marked with_previous.
#include "dualpipe.h"

#include <algorithm>
#include <deque>

namespace proteus {
namespace {

class DualPipeVStage {
 public:
  DualPipeVStage(int stages, int micro_batches, int rank) : p_(stages), m_(micro_batches), r_(rank) {}

  std::vector<Pass> order() {
    const int p = p_, r = r_;
    for (int i = 0; i < (p - r - 1) * 2; ++i) forward(0);  // Step 1: nF0
    for (int i = 0; i < r + 1; ++i) {                      // Step 2: nF0F1
      forward(0);
      forward(1);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // Step 3: nB1W1F1 (use zero bubble)
      backward(1, true);
      weight();
      forward(1);
    }
    for (int i = 0; i < m_ - 2 * p + r + 1; ++i) {  // Step 4 (main step): nF0B1F1B0
      // The last rank's first F0 and B1 are not overlapped ("to further reduce bubble size").
      const bool overlap = !(i == 0 && r == p - 1);
      forward(0);
      backward(1, false, overlap);
      forward(1);
      backward(0, false, true);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // Step 5: nB1F1B0
      backward(1, false);
      forward(1);
      backward(0, false, true);
    }
    // Step 6: nB1B0 (the second half of the chunks use zero bubble); the switch point depends
    // on the rank's parity so that exactly r + 1 weight gradients are left for steps 7 and 8.
    bool zb = false;
    for (int i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1) zb = true;
      backward(1, zb);
      if (i == (r + 1) / 2 && r % 2 == 0) zb = true;
      backward(0, zb);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // Step 7: nWB0 (use zero bubble)
      weight();
      backward(0, true);
    }
    for (int i = 0; i < r + 1; ++i) weight();  // Step 8: nW
    return out_;
  }

 private:
  void forward(int chunk) { out_.push_back({PassKind::F, next_f_[chunk]++, chunk}); }
  // zero_bubble: the weight gradient waits in the FIFO; else it follows at once. with_previous:
  // this backward (and its W) overlaps the forward just issued.
  void backward(int chunk, bool zero_bubble, bool with_previous = false) {
    const int mb = next_b_[chunk]++;
    out_.push_back({PassKind::B, mb, chunk, with_previous});
    if (zero_bubble)
      waiting_w_.push_back({PassKind::W, mb, chunk});
    else
      out_.push_back({PassKind::W, mb, chunk, with_previous});
  }
  void weight() {
    out_.push_back(waiting_w_.front());
    waiting_w_.pop_front();
  }

  const int p_, m_, r_;
  int next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
  std::deque<Pass> waiting_w_;
  std::vector<Pass> out_;
};

}  // namespace

std::vector<Pass> dualpipe_v_stage(int stages, int micro_batches, int rank) {
  return DualPipeVStage(stages, micro_batches, rank).order();
}

// DualPipe.step runs the same eight steps as DualPipeV.step with num_half_ranks = p/2 ranks,
// half_rank = min(r, p-1-r) and half_num_chunks = m/2 micro-batches per direction (step 4:
// half_num_chunks - num_ranks + half_rank + 1 = m/2 - 2(p/2) + h + 1, DualPipeV's count at
// n = p/2, m/2, rank h). Its "phase" 0 is, on the first half of the ranks, the forward
// direction (module[0], copy A: the rank is near that pipeline's start) and on the second half
// the reverse one (`phase ^= self.is_in_second_half`); the middle ranks (h = p/2 - 1) do not
// overlap their first F0 and B1, as DualPipeV's last rank. So rank r's order is DualPipeV's
// order of rank h, its chunk k the phase, mapped to the copy and its half of the micro-batches.
std::vector<Pass> dualpipe_stage(int stages, int micro_batches, int rank) {
  const int half = micro_batches / 2, h = std::min(rank, stages - 1 - rank);
  const bool second_half = rank >= stages / 2;
  std::vector<Pass> out = DualPipeVStage(stages / 2, half, h).order();
  for (Pass& pass : out) {
    pass.chunk = second_half ? 1 - pass.chunk : pass.chunk;  // the copy: 0 = A, 1 = B
    pass.micro_batch += pass.chunk == 1 ? half : 0;
  }
  return out;
}

}  // namespace proteus
