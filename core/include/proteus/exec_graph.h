// The distributed execution graph (DESIGN.md §3, "ExecGraph"): what every simulated rank
// runs, on which stream, after what. Produced by compile(), played by the HTAE executor.
//
// With the symmetry reduction on, only one representative rank per pipeline stage is
// simulated (ranks differing only in dp/ep/cp/tp coordinates run identical programs);
// `multiplicity` says how many GPUs it stands for, and collectives carry the mesh axes they
// span so the executor can place the flows of every sibling group on the topology.
// With it off, every GPU is a simulated rank and every collective lists all its members.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>
#include "proteus/mesh.h"
#include "proteus/op_graph.h"

namespace proteus {

enum class Phase : uint8_t { Forward, BackwardInput, BackwardWeight, Recompute, Optimizer, Sync };
// ParamComm: parameter all-gathers of ZeRO-3/FSDP, on their own stream beside the gradient
// reductions of DpComm (FSDP's all_gather_stream vs reduce_scatter_stream, DeepSpeed's
// allgather stream vs reduce_and_partition_stream; docs/frameworks/data-parallelism.md).
enum class Stream : uint8_t { Compute = 0, TpComm = 1, DpComm = 2, PpComm = 3, ParamComm = 4 };
constexpr int kNumStreams = 5;
enum class TaskKind : uint8_t { Compute, Collective };
// RingExchange: one step of a ring pass (Transformer Engine's context-parallel KV exchange,
// AttnFuncWithCPAndKVP2P's batch_isend_irecv; its userbuffers ring exchange): every member sends
// the shard it holds to its ring successor and receives its predecessor's, all at once. A pass
// of n members is n - 1 such steps, each a call of its own with one hop's latency.
enum class CollectiveKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, RingExchange };
enum class MemCategory : uint8_t { Weights, Gradients, OptimizerStates, Activations, CommBuffers };
constexpr int kNumMemCategories = 5;

// What a compute task does on one GPU (already divided by its shards).
struct ComputeWork {
  OpKind op_kind = OpKind::Custom;
  double flops = 0;
  double bytes = 0;                                            // HBM traffic
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0, gemm_batch = 1;  // per-GPU GEMM shape, 0 if none
  int kernels = 1;                                             // kernel launches
  // Memory-bound kernels that run beside the op, before it (FP8 cast/transpose/amax of its
  // inputs, docs/frameworks/fp8.md "FP8"): HBM bytes, timed at memory speed and added to the op's.
  double side_bytes = 0;
  // Under FP8 training, a GEMM Transformer Engine does not run in FP8 (Megatron's output
  // layer, the MoE router): timed at the bf16 peak.
  bool high_precision = false;
  // SMs a concurrent communication kernel holds while this GEMM runs (Transformer Engine's
  // userbuffers with set_sm_margin: the GEMM is launched on sm_count - sm_reserved SMs,
  // docs/frameworks/tensor-parallelism-and-moe.md "Tensor-parallel communication overlap"). 0: the whole GPU.
  int sm_reserved = 0;
  // Identical GEMMs in flight at once, sharing the GPU's waves: Transformer Engine issues the
  // chunks of a split GEMM (userbuffers' ring exchange and pipeline) round-robin over
  // NVTE_COMM_OVERLAP_MAX_STREAMS = 3 compute streams, so the next chunk's tiles fill the SMs a
  // chunk's last wave leaves idle. Timed as one GEMM of concurrent_gemms x its tiles, each chunk
  // taking its share. 1: alone on the GPU.
  int concurrent_gemms = 1;
  // The FLOPs of this work over those of one GEMM of its shape: below 1 for one op's part of a
  // fused kernel (Megatron's linear_qkv), above 1 for an op that runs as several kernels of that
  // shape (PyTorch's wk and wv). A measured time of the shape is scaled by it.
  double gemm_kernel_share = 1;
  // Bytes per output element the GEMM's epilogue reads from and writes back to an accumulation
  // buffer (Megatron's fused weight-gradient accumulation into main_grad, beta = 1: its dtype
  // read and written); 0: the output is written once, in the GEMM's output dtype.
  double accumulate_bytes_per_output = 0;
  // The op's backward (its input-gradient pass): attention kernels are measured apart for it.
  bool backward = false;
};

// A memory change applied when a task starts (at_end = false) or ends (at_end = true).
struct MemEvent {
  MemCategory category = MemCategory::Activations;
  bool at_end = false;
  double bytes = 0;  // + allocate, - free
};

struct Task {
  TaskKind kind = TaskKind::Compute;
  Phase phase = Phase::Forward;
  Stream stream = Stream::Compute;
  int rank = -1;         // index into ExecGraph::ranks
  int micro_batch = -1;  // -1: once per iteration
  int label = -1;        // index into ExecGraph::labels ("layers.3.mlp.fc1")
  int stage = 0;         // pipeline stage (virtual stage for interleaved schedules)
  int work = -1;         // kind == Compute: index into ExecGraph::works
  int collective = -1;   // kind == Collective: index into ExecGraph::collectives
};

struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  // Algorithm-independent size S per rank: all-reduce the buffer; all-gather the gathered
  // output; reduce-scatter the unreduced input; all-to-all what each rank sends in total
  // (its own share included); send-recv the message; ring exchange the shard each member
  // passes on.
  double bytes = 0;
  AxisMask axes = 0;              // mesh axes the group spans (pp for send-recv)
  std::vector<int> group;         // GPU ids of all members, in ring order
  std::vector<int> member_tasks;  // one task per simulated member rank (in the same ExecGraph)
  // Collectives with the same signature (>= 0) have equal kind, axes, bytes and group, so the
  // executor plans them once without comparing groups; -1: not interned (compared by value).
  int signature = -1;
  // A userbuffers collective of tp_comm_overlap: copy-engine transfers or kernels on SMs the
  // overlapped GEMM already leaves them (ComputeWork::sm_reserved), so it does not slow
  // compute by gpu.compute_slowdown_with_comm as an NCCL collective does.
  bool sm_free = false;
};

struct SimRank {
  int gpu = 0;
  int stage = 0;                                         // physical pipeline stage
  int multiplicity = 1;                                  // GPUs this rank stands for
  std::array<double, kNumMemCategories> static_bytes{};  // held for the whole iteration
};

struct ExecGraph {
  Mesh mesh;
  bool symmetric = true;  // true: ranks are representatives of their stage
  std::vector<SimRank> ranks;
  std::vector<Task> tasks;
  std::vector<int> dep_offsets{0};  // CSR: deps of task t are deps[dep_offsets[t] .. dep_offsets[t+1])
  std::vector<int> deps;
  // Memory events, in shared lists (every micro-batch's forward of an op allocates alike):
  // task t applies list task_mem[t] (-1: none), the events
  // mem_events[mem_list_offsets[l] .. mem_list_offsets[l+1]).
  std::vector<int> task_mem;
  std::vector<int> mem_list_offsets{0};
  std::vector<MemEvent> mem_events;
  // In-order queue per (rank, stream): queues[rank * kNumStreams + stream].
  std::vector<std::vector<int>> queues;
  std::vector<Collective> collectives;
  std::vector<std::string> labels;
  // What compute tasks do, shared: every micro-batch's forward of an op does the same work,
  // and a task of 28 bytes instead of 96 keeps a million-task graph in half the memory.
  std::vector<ComputeWork> works;

  // For the report
  double model_flops_per_iteration = 0;     // what MFU counts (no recompute)
  double hardware_flops_per_iteration = 0;  // what the GPUs execute (recompute included)
  int64_t samples_per_iteration = 0;
  int64_t tokens_per_iteration = 0;
  int micro_batches = 0;
  int pipeline_stages = 1;
  int gpus = 1;

  // Builder helpers (the compiler appends tasks in program order per queue).
  int add_task(const Task& t, const std::vector<int>& task_deps, const std::vector<MemEvent>& mem = {});
  int label_id(const std::string& label);              // interns
  int add_work(const ComputeWork& work);               // appends; returns the index for Task::work
  int add_mem_list(const MemEvent* events, size_t n);  // appends; -1 when n == 0
  const ComputeWork& work_of(const Task& t) const { return works[static_cast<size_t>(t.work)]; }
  // Net bytes task `task` allocates in `category` (its memory events of that category).
  double memory_change(int task, MemCategory category) const;
  std::unordered_map<std::string, int> label_index;  // for label_id
};

const char* to_string(Phase);
// One letter per phase, as pipeline-schedule papers write them: F, B, W; R recompute,
// O optimizer, S sync.
const char* phase_letter(Phase);
const char* to_string(Stream);
const char* to_string(CollectiveKind);
const char* to_string(MemCategory);

}  // namespace proteus
