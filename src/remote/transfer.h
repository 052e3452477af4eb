// What push.cc and pull.cc share: opening the target of a URL, progress
// reports from the workers, and the names both read and write.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "ki/remote.h"
#include "remote/target.h"

namespace ki::remote {

Result<std::unique_ptr<Target>> OpenTarget(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                           Env& env);

// Serialises progress callbacks from the workers.
class Progress {
 public:
  Progress(const TransferOptions& o, uint64_t total) : fn_(o.progress) { p_.objects_total = total; }
  void Add(uint64_t objects, uint64_t bytes) {
    if (!fn_) return;
    std::lock_guard<std::mutex> l(mu_);
    p_.objects_done += objects;
    p_.bytes_done += bytes;
    fn_(p_);
  }

 private:
  std::function<void(const TransferProgress&)> fn_;
  std::mutex mu_;
  TransferProgress p_;
};

// The referrers tag schema's tag of `d` (distribution-spec), for
// registries without the referrers API.
inline std::string FallbackTag(const Digest& d) { return "sha256-" + d.hex(); }

}  // namespace ki::remote
