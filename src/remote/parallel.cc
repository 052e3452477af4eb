// RunParallel and OpenTarget (target.h, transfer.h).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "remote/target.h"
#include "remote/transfer.h"

namespace ki::remote {

Result<std::unique_ptr<Target>> OpenTarget(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                           Env& env) {
  if (url.scheme == RemoteUrl::Scheme::kLayout) return OpenLayout(url, opts, access, env);
  return OpenRegistry(url, opts, access, env);
}

// An exception out of fn (a third-party library that throws on input it
// did not expect, std::bad_alloc) becomes a failure too: escaping a worker
// thread it would std::terminate the process, where the caller's Status
// would have said what failed. fn should not throw; this is the last line
// of defence, not a way of reporting. IOError: exit 5, what cli/main.cc's
// outermost catch gives the same exception on the main thread.
Status RunParallel(Target& target, int parallelism, size_t count,
                   const std::function<Status(Conn&, size_t)>& fn) {
  if (count == 0) return Status::OK();
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status first;
  auto fail = [&](Status st) {
    std::lock_guard<std::mutex> l(mu);
    if (first.ok()) first = std::move(st);
    stop = true;
  };
  auto worker = [&] {
    try {
      auto conn = target.Connect();
      if (!conn.ok()) return fail(conn.status());
      for (size_t i; !stop && (i = next++) < count;) {
        Status st = fn(**conn, i);
        if (!st.ok()) fail(std::move(st));
      }
    } catch (const std::exception& e) {
      fail(Status::IOError(std::string("internal error in a transfer worker: ") + e.what()));
    } catch (...) {
      fail(Status::IOError("internal error in a transfer worker: an unknown exception"));
    }
  };
  int n = int(std::min<size_t>(std::max(1, parallelism), count));
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return first;
}

}  // namespace ki::remote
