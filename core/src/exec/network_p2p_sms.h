// The SMs an NCCL point-to-point kernel to peers on other nodes holds (docs/fidelity/memory-bound.md,
// "Point-to-point between nodes").
//
// The measured compute slowdown beside communication (gpu.compute_slowdown_with_comm) is that of
// NCCL's collectives, whose kernels run one CTA per channel over many channels and move data
// through HBM at NVLink rates. A send or receive to a peer on another node runs on
// NCHANNELS_PER_NET_PEER channels, 2 by default (NCCL src/graph/paths.cc, ncclTopoGetNchannels:
// "Remote rank, use network"), where a peer on the same NVLink node gets 2 per NVLink of the
// path. PyTorch runs an unbatched send or receive on a communicator of the two ranks
// (ProcessGroupNCCL's send/recv key), as Megatron-Core's overlapped pipeline p2p and Transformer
// Engine's context-parallel ring beyond two ranks do. So a member of a send-recv or ring exchange
// whose every peer is on another node holds 2 CTAs per peer, and the compute beside it runs on
// the other SMs; a member with a peer on its own node runs NVLink copies, as a collective does,
// until that copy is done (an NVLink transfer of the same bytes ends well before the network one).
#pragma once

#include "proteus/exec_graph.h"
#include "proteus/topology.h"

namespace proteus {

// NCCL's default channels per network peer (NCCL_NCHANNELS_PER_NET_PEER).
inline constexpr int kNcclChannelsPerNetPeer = 2;

// The CTAs the kernel of the member on `member_gpu` holds for a send-recv or ring exchange when
// every peer it sends to or receives from is on another node: 2 per peer (a pair: one peer; a
// larger ring: the next and the previous member). 0 otherwise, and for any other collective:
// those slow compute by gpu.compute_slowdown_with_comm.
int network_p2p_ctas(const Collective& collective, int member_gpu, const Topology& topology);

// For a member of a ring exchange of three or more members that leaves the member's node, with
// a peer (the next or the previous member) on that node: the CTAs its kernels hold once its
// NVLink copies are done, 2 for the other peer when that one is on another node, 0 when both
// are local (its copies are all done). Until then its NVLink copies run, as a collective's do.
// -1 for any other member or collective: what network_p2p_ctas says holds for the whole transfer.
int network_p2p_ctas_after_local(const Collective& collective, int member_gpu, const Topology& topology);

// The factor compute is stretched by while kernels holding `ctas` SMs run beside it on a GPU of
// `sm_count` SMs: it runs on the others (at least one).
double sm_held_factor(int sm_count, int ctas);

}  // namespace proteus
