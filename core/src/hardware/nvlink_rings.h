// Rings NCCL builds over an NVLink mesh (DGX-1 hybrid cube-mesh and the like), private to the
// hardware/collective code. NCCL searches the node's NVLink graph for rings that visit every
// GPU and each use one NVLink per hop; a ring and its reverse use the two directions of the
// same links, so every cycle found gives two channels.
//
// Here: all Hamiltonian cycles over the group's local GPUs are enumerated (depth first,
// neighbours in group order, so the result is deterministic), then the largest set of them
// whose NVLink use fits is packed (an edge (i, j) may carry as many cycles as the pair has
// NVLinks, links[i][j]); the search stops early at the bound "NVLinks per GPU / 2". Both
// steps have fixed step budgets so a large mesh cannot take exponential time; on exhaustion
// the best packing found so far is returned.
#pragma once
#include <vector>
#include "proteus/cluster_spec.h"

namespace proteus {

// Cycles (each an ordering of `local_members`, starting with local_members[0]) using distinct
// NVLink units. Empty when the members cannot be ringed over NVLink (or there are fewer than 3).
std::vector<std::vector<int>> nvlink_mesh_cycles(const IntraNodeSpec& intra,
                                                 const std::vector<int>& local_members);

}  // namespace proteus
