// NCCL's protocols as the collective planner uses them (docs/fidelity.md, "NCCL's protocols").
// NCCL runs every ring or tree step in one of three protocols and picks, per call, the
// (algorithm, protocol) pair of smallest estimated time (src/graph/tuning.cc,
// ncclTopoTuneModel + ncclTopoGetAlgoTime):
//   Simple: whole buffers behind one flag per step. Full link rate, the largest latency. Its
//           constants are the cluster preset's (collectives.base_latency_us, the per-hop
//           latency_us of intra_node / inter_node), as before protocols were modelled.
//   LL:     every 8-byte word carries 4 bytes of data and a 4-byte flag (src/include/device.h,
//           union ncclLLFifoLine): half of the link carries data, the lowest latency; NCCL
//           caps its bus bandwidth at a measured ceiling (llMaxBws).
//   LL128:  120 data bytes per 128-byte line, NVLink nodes only: not modelled yet (the planner
//           offers LL across nodes only; docs/fidelity.md says why).
// The LL latencies are NCCL's own constants (tuning.cc baseLat and hwLat, NCCL 2.20.3,
// NVIDIA/nccl commit b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2; write-ups quoting 2.28.7 show
// the same values): per call (baseLat) and per hop of each kind (hwLat[NVLINK|PCI|NET]), in
// microseconds.
#pragma once
#include <array>
#include <cstdint>
#include "proteus/topology.h"

namespace proteus {

enum class NcclProtocol : uint8_t { LL, Simple };

const char* protocol_name(NcclProtocol protocol);

// NCCL's latency tables have one row per algorithm family: ring (also all-gather and
// reduce-scatter) and tree (the double binary tree of an all-reduce across nodes).
enum class NcclFamily : uint8_t { Ring, Tree };

// Hops a plan's latency counts, by kind (a ring: its steps at its slowest hop's kind; a tree:
// the network hops and the chain hops inside the nodes).
using HopCounts = std::array<double, kHopKinds>;

// Fraction of the link rate that carries data (LL 1/2, Simple 1).
double protocol_payload_share(NcclProtocol protocol);

// NCCL's baseLat + sum over kinds of hops x hwLat, seconds, for LL (not Simple, whose
// constants are the preset's).
double nccl_protocol_latency_s(NcclFamily family, NcclProtocol protocol, const HopCounts& hops);

// NCCL's measured ceiling on LL's bus bandwidth (tuning.cc llMaxBws), bytes/s, for a
// collective across `nodes` (>= 2) nodes: 2 nodes 39 GB/s, more 20.4 (the Intel-CPU column;
// AMD hosts: 22.5 and 19.0; one node, by GPU generation, 39 or 87.7).
double ll_max_bus_Bps(int nodes);

}  // namespace proteus
