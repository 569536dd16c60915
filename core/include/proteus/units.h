// Unit conversions. Names carry units everywhere else; these are the only bare factors.
#pragma once

namespace proteus {
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kBytesPerGB = 1e9;  // _GBps fields are 1e9 bytes/s per direction
constexpr double kBytesPerMB = 1e6;  // grad_bucket_MB follows PyTorch DDP's decimal MB
constexpr double kFlopsPerTFLOP = 1e12;
constexpr double kSecondsPerUs = 1e-6;
}  // namespace proteus
