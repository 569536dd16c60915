// DualPipeV, step by step as dualpipev.py runs it (its eight steps are quoted below). A
// backward "with zero bubble" (enable_zb) leaves its weight gradient in WeightGradStore, a
// FIFO that _weight_chunk pops; any other backward computes its weight gradient at once,
// written here as B immediately followed by its W. _forward_backward_chunk(a, b) is an
// overlapped group: F of chunk a, then B (and W) of chunk b marked with_previous.
#include "dualpipe.h"

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

}  // namespace proteus
