#include "cross_entropy_memory.h"

namespace proteus {

namespace {
constexpr double kFp32Bytes = 4;

// .float() copies 16-bit logits and returns fp32 ones as they are.
double fp32_copy(double logit_bytes) { return logit_bytes < kFp32Bytes ? kFp32Bytes : 0; }
}  // namespace

CrossEntropyMemory megatron_cross_entropy_memory(double logit_bytes) {
  CrossEntropyMemory m;
  // The copy becomes the softmax in place; fp32 logits are themselves modified in place.
  m.forward_peak = logit_bytes + fp32_copy(logit_bytes);
  // grad_input is the saved softmax, updated in place; the 16-bit gradient autograd makes of it.
  m.backward_extra = logit_bytes < kFp32Bytes ? logit_bytes : 0;
  return m;
}

CrossEntropyMemory torch_cross_entropy_memory(double logit_bytes, bool loss_parallel) {
  CrossEntropyMemory m;
  if (!loss_parallel) {
    // The logits, their fp32 copy (log_softmax's input) and log_softmax's output at once.
    m.forward_peak = logit_bytes + fp32_copy(logit_bytes) + m.saved;
    // nll_loss_backward's gradient and _log_softmax_backward_data's result, both fp32, while
    // the saved output is still held; the cast to the logits' dtype comes after the first is
    // freed (4 + logit_bytes, below 8).
    m.backward_extra = 2 * kFp32Bytes;
    return m;
  }
  // _log_softmax: shifted = x - max and exp(shifted) beside the logits and their fp32 copy; the
  // output takes exp's place once the sum is taken (shifted still held): 2 + 4 + 4 + 4.
  m.forward_peak = logit_bytes + fp32_copy(logit_bytes) + 2 * kFp32Bytes;
  // _nll_loss_and_log_softmax_backward: zeros_like(x), exp(x) and their sum beside the saved
  // output, before the product with grad_output replaces exp(x); _log_softmax_backward_handler
  // then returns its input (no computation).
  m.backward_extra = 3 * kFp32Bytes;
  return m;
}

}  // namespace proteus
