// Runs fn(i, worker) for i in [0, n) on `threads` threads (the caller's
// among them), each taking the next index; the first error stops the rest
// and is returned. Internal to report: the store's read calls are safe from
// several threads, and pages are independent of each other.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "ki/status.h"

namespace ki::report {

inline Status ParallelFor(size_t n, int threads, const std::function<Status(size_t i, int worker)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto work = [&](int worker) {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      Status st = fn(i, worker);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(st);
        next = n;
        return;
      }
    }
  };
  threads = std::max(1, std::min<int>(threads, int(std::min<size_t>(n, 16))));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& t : pool) t.join();
  return first_error;
}

}  // namespace ki::report
