// NCCL's protocol constants (nccl_protocol.h). Values from NVIDIA/nccl src/graph/tuning.cc at
// commit b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2 (NCCL 2.20.3):
//   baseLat   LL: Tree 6.8, Ring 6.6                                           us per call
//   hwLat     LL: NVLINK Tree .6, Ring .6; PCI Tree 1.0, Ring 1.0; NET Tree 5.0, Ring 2.7
//                                                                              us per hop
//   llMaxBws  {Volta-N1 39.0, Intel-N2 39.0, Intel-N4 20.4}, {Ampere-N1 87.7, AMD-N2 22.5,
//             AMD-N4 19.0}, {Hopper-N1 87.7, ...}                              GB/s
#include "proteus/nccl_protocol.h"
#include "proteus/error.h"
#include "proteus/units.h"

namespace proteus {
namespace {

// LL, [family Ring, Tree]
constexpr double kLLBaseLatency_us[2] = {6.6, 6.8};
// LL, [hop kind NVLink, PCIe, Net][family Ring, Tree]
constexpr double kLLHopLatency_us[kHopKinds][2] = {{0.6, 0.6}, {1.0, 1.0}, {2.7, 5.0}};

}  // namespace

const char* protocol_name(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::LL:
      return "LL";
    case NcclProtocol::Simple:
      break;
  }
  return "Simple";
}

double protocol_payload_share(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::LL:
      return 0.5;  // 4 data bytes per 8-byte word
    case NcclProtocol::Simple:
      break;
  }
  return 1.0;
}

double nccl_protocol_latency_s(NcclFamily family, NcclProtocol protocol, const HopCounts& hops) {
  if (protocol != NcclProtocol::LL) throw Error("internal", "", "NCCL's latency tables are used for LL only");
  const size_t f = family == NcclFamily::Ring ? 0 : 1;
  double latency_us = kLLBaseLatency_us[f];
  for (size_t kind = 0; kind < hops.size(); ++kind) latency_us += hops[kind] * kLLHopLatency_us[kind][f];
  return latency_us * kSecondsPerUs;
}

double ll_max_bus_Bps(int nodes) { return nodes >= 3 ? 20.4e9 : 39.0e9; }

}  // namespace proteus
