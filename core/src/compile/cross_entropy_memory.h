// What the language model's cross-entropy holds in memory while it runs, per logit, as each
// framework's code allocates it (docs/frameworks/attention-and-kernels.md "The cross-entropy's memory"). The
// logits are `logit_bytes` per element (2 in bf16); the softmax the backward reads is fp32 in both.
#pragma once

namespace proteus {

struct CrossEntropyMemory {
  // Kept from the forward to the backward: the fp32 softmax (Megatron) or log-softmax (PyTorch).
  double saved = 4;
  // Held while the forward runs: the logits and everything it allocates, the saved tensor
  // included (the logits are freed once the loss has read them; nothing else saves them).
  double forward_peak = 0;
  // Allocated by the backward beyond the saved tensor, at its most.
  double backward_extra = 0;
};

// Megatron-Core's _VocabParallelCrossEntropy (megatron/core/tensor_parallel/cross_entropy.py):
// one .float() copy of the logits, then max subtracted, exp and the division by the sum in place,
// so the copy is the saved softmax; the backward updates it in place into the gradient, which
// autograd casts back to the logits' dtype while the fp32 one is alive.
CrossEntropyMemory megatron_cross_entropy_memory(double logit_bytes);

// TorchTitan's loss_fn, F.cross_entropy(pred.flatten(0, 1).float(), labels): the fp32 copy and
// log_softmax's output (saved) exist together; the backward's nll_loss_backward and
// _log_softmax_backward_data each make a new fp32 tensor before the saved one is released.
// Under tensor parallelism TorchTitan runs it inside DTensor's loss_parallel
// (torch/distributed/tensor/parallel/loss.py) on the vocabulary shard: _log_softmax makes the
// shifted logits and their exponentials before its output, and the fused backward
// (grad_input + exp(x)) * grad_output three fp32 temporaries.
CrossEntropyMemory torch_cross_entropy_memory(double logit_bytes, bool loss_parallel);

}  // namespace proteus
