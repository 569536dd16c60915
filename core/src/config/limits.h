// The stated limits of the config (docs/config.md lists them). Values beyond them are
// rejected with a clear error rather than risking overflow or an endless simulation.
#pragma once
#include <cstdint>

namespace proteus::config_limits {

constexpr int64_t kMaxInputBytes = 16 * 1024 * 1024;  // whole config text
constexpr int kMaxDepth = 256;                        // nesting of arrays/objects
constexpr int64_t kMaxStringChars = 4096;             // any string value
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;  // integers exactly representable in JS
constexpr int64_t kMaxGpus = 1'048'576;               // nodes * gpus_per_node
constexpr int64_t kMaxGpusPerNode = 1024;
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxHidden = 1'048'576;
constexpr int64_t kMaxHeads = 65'536;
constexpr int64_t kMaxFfnHidden = 16'777'216;
constexpr int64_t kMaxSeqLen = 16'777'216;
constexpr int64_t kMaxVocab = int64_t{1} << 31;
constexpr int64_t kMaxExperts = 65'536;
constexpr int64_t kMaxBatch = int64_t{1} << 31;       // global_batch, micro_batch
constexpr int64_t kMaxImageSize = 16'384;
constexpr int64_t kMaxChannels = 65'536;
constexpr int64_t kMaxClasses = int64_t{1} << 31;
constexpr int64_t kMaxWidth = 16'777'216;             // MLP widths, features
constexpr int64_t kMaxMlpLayers = 1'000;
constexpr int64_t kMaxTables = 100'000;
constexpr int64_t kMaxTableRows = int64_t{1} << 40;
constexpr int64_t kMaxEmbeddingDim = 1'048'576;
constexpr int64_t kMaxLookups = 1'048'576;
constexpr int64_t kMaxGraphOps = 100'000;
constexpr int64_t kMaxGraphDim = int64_t{1} << 40;
constexpr double kMaxGraphAmount = 1e18;              // FLOPs / bytes per sample
constexpr int64_t kMaxParallel = 1'048'576;           // dp, tp, pp, cp, ep
constexpr int64_t kMaxVirtualStages = 10'000;
constexpr int64_t kMaxOverrides = 100'000;
constexpr double kMaxGradBucket_MB = 1e6;
constexpr double kMaxMemory_GiB = 1e6;
constexpr double kMaxBandwidth_GBps = 1e7;
constexpr double kMaxTFLOPS = 1e7;
constexpr double kMaxLatency_us = 1e7;
constexpr int64_t kMaxSmCount = 1'000'000;
constexpr int64_t kMaxTile = 4096;
constexpr int64_t kMaxLinksPerPair = 1024;
constexpr double kMaxSlowdown = 100;
constexpr double kMaxOversubscription = 1e4;
constexpr double kMaxCapacityFactor = 1024;

}  // namespace proteus::config_limits
