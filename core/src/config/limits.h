// The stated limits of the config (docs/config.md lists them). Values beyond them are
// rejected with a clear error rather than risking overflow or an endless simulation.
#pragma once
#include <cstdint>

namespace proteus::config_limits {

constexpr int64_t kMaxInputBytes = 16 * 1024 * 1024;  // whole config text
constexpr int kMaxDepth = 256;                        // nesting of arrays/objects
// Objects and arrays in the whole text, counted before the JSON is built: 16 MiB of "{}," are
// 5.6 million objects, 1 GB once parsed. The largest valid configs hold ~100,000 (graph ops).
constexpr int64_t kMaxJsonContainers = 250'000;
// Values of any kind (a 1024-GPU NVLink matrix has a million numbers): 16 MiB of "0," would be
// 8 million, 128 MB once parsed and seconds to read twice.
constexpr int64_t kMaxJsonValues = 2'000'000;
constexpr int64_t kMaxStringChars = 4096;               // any string value
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;  // integers exactly representable in JS
// nodes * gpus_per_node. 131,072 covers the largest published training runs (Llama 3: 16,384
// H100; 100k-GPU clusters). The executor's cost grows linearly with the GPUs a data-parallel
// ring spans (one flow per ring hop), ~6 ms and ~45 KB per node on a 2-core machine, so this
// cap keeps the worst case near two minutes; docs/robustness.md has the measurements.
constexpr int64_t kMaxGpus = 131'072;
constexpr int64_t kMaxGpusPerNode = 1024;
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxHidden = 1'048'576;
constexpr int64_t kMaxHeads = 65'536;
constexpr int64_t kMaxFfnHidden = 16'777'216;
constexpr int64_t kMaxSeqLen = 16'777'216;
constexpr int64_t kMaxVocab = int64_t{1} << 31;
constexpr int64_t kMaxExperts = 65'536;
// global_batch, micro_batch: the micro-batch count (global_batch / (dp * micro_batch)) is an int;
// at 2^31 it wrapped to a negative count and simulated nothing (a silently wrong result).
constexpr int64_t kMaxBatch = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxImageSize = 16'384;
constexpr int64_t kMaxChannels = 65'536;
constexpr int64_t kMaxClasses = int64_t{1} << 31;
constexpr int64_t kMaxWidth = 16'777'216;  // MLP widths, features
constexpr int64_t kMaxMlpLayers = 1'000;
constexpr int64_t kMaxTables = 100'000;
constexpr int64_t kMaxTableRows = int64_t{1} << 40;
constexpr int64_t kMaxEmbeddingDim = 1'048'576;
constexpr int64_t kMaxLookups = 1'048'576;
constexpr int64_t kMaxGraphOps = 100'000;
constexpr int64_t kMaxGraphDim = int64_t{1} << 40;
constexpr double kMaxGraphAmount = 1e18;     // FLOPs / bytes per sample
constexpr int64_t kMaxParallel = 1'048'576;  // dp, tp, pp, cp, ep
constexpr int64_t kMaxVirtualStages = 10'000;
// Every override is matched against every module (a 10,000-layer model has ~100,000), so
// their product bounds the work: 1,000 x 10,000 layers takes about a second.
constexpr int64_t kMaxOverrides = 1'000;
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
// Smallest rates a simulation divides work by (validate.cpp checks them). Below these the
// predicted times overflow double and the result would read "null"; they are far below any
// real hardware (1 MB/s, 1 GFLOPS, 0.1 % efficiency).
constexpr double kMinBandwidth_GBps = 1e-3;
constexpr double kMinTFLOPS = 1e-3;
constexpr double kMinEfficiency = 1e-3;

}  // namespace proteus::config_limits
