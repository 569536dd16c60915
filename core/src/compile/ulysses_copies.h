// DeepSpeed-Ulysses (deepspeed/sequence/layer.py, DistributedAttention and single_all_to_all):
// each of Q, K and V goes from the sequence split to the head split by one all-to-all, and the
// attention's output back by another; autograd runs the mirror images in the backward (dO
// before the attention's backward, dQ, dK, dV after). single_all_to_all makes one copy per
// exchange: scattering heads it reshapes and transposes the tensor to [cp, ...] with
// .contiguous() before the all-to-all (Q, K, V; dO), scattering the sequence it transposes the
// received tensor back with .contiguous() after (O; dQ, dK, dV); the other reshape is a view.
// Unlike Transformer Engine's a2a (te_cp_copies.h) there is no chunk reordering (no causal load
// balancing: after the exchange every rank holds the whole sequence) and the backward does not
// exchange the saved output again (the local attention saved its head-split output).
#pragma once

namespace proteus {

// HBM bytes of the copy around one exchange of `tensor_bytes` (what the rank holds of the
// tensors exchanged): read and written once.
constexpr double ulysses_exchange_copy_bytes(double tensor_bytes) { return 2 * tensor_bytes; }

}  // namespace proteus
