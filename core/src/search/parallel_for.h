// Runs body(i) for i in [0, n) on up to `threads` native threads (one in WebAssembly, which
// has none here). Each i is written by exactly one thread into its own slot by the caller, so
// the result does not depend on the thread count.
#pragma once
#include <atomic>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace proteus::search_detail {

inline void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& body) {
#ifdef __EMSCRIPTEN__
  threads = 1;
#endif
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto worker = [&](int w) {
    try {
      for (int64_t i = next++; i < n; i = next++) body(i);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < threads && w < n; ++w) pool.emplace_back(worker, w);
  worker(0);
  for (std::thread& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace proteus::search_detail
