// The store adapters of a transfer (store_io.h).
#include "remote/store_io.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cerrno>
#include <cstdlib>

namespace ki::remote {

Status StoreSource::Rewind() {
  Stop();
  reader_ = std::thread([this] { Produce(); });
  return Status::OK();
}

Result<size_t> StoreSource::Read(char* buf, size_t n) {
  if (!reader_.joinable()) return Status::IOError("internal error: " + digest_.str() + " read before Rewind");
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (done_ && !result_.ok()) return result_;
    const uint64_t keep = done_ ? 0 : 1;  // the last byte waits for the hash check
    const uint64_t left = size_ > delivered_ + keep ? size_ - delivered_ - keep : 0;
    const size_t k = size_t(std::min<uint64_t>({n, fill_, left, ring_.size() - head_}));
    if (k > 0) {
      std::memcpy(buf, ring_.data() + head_, k);
      head_ = (head_ + k) % ring_.size();
      fill_ -= k;
      delivered_ += k;
      cv_.notify_all();
      return k;
    }
    if (done_ && fill_ == 0) return size_t(0);
    cv_.wait(l);
  }
}

void StoreSource::Produce() {
  uint64_t produced = 0;
  Status st = store_.ReadStream(digest_, [&](std::string_view piece) -> Status {
    produced += piece.size();
    if (produced > size_) return Status::Corruption(digest_.str() + ": the store holds more than its " + std::to_string(size_) + " bytes");
    std::unique_lock<std::mutex> l(mu_);
    while (!piece.empty()) {
      cv_.wait(l, [&] { return cancel_ || fill_ < ring_.size(); });
      if (cancel_) return Status::IOError("upload of " + digest_.str() + " stopped");
      const size_t tail = (head_ + fill_) % ring_.size();
      const size_t k = std::min({piece.size(), ring_.size() - fill_, ring_.size() - tail});
      std::memcpy(ring_.data() + tail, piece.data(), k);
      fill_ += k;
      piece.remove_prefix(k);
      cv_.notify_all();
    }
    return Status::OK();
  });
  if (st.ok() && produced != size_) {
    st = Status::Corruption(digest_.str() + ": the store gave " + std::to_string(produced) + " bytes, its index says " +
                            std::to_string(size_));
  }
  std::lock_guard<std::mutex> l(mu_);
  done_ = true;
  result_ = std::move(st);
  cv_.notify_all();
}

void StoreSource::Stop() {
  if (reader_.joinable()) {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancel_ = true;
      cv_.notify_all();
    }
    reader_.join();
  }
  head_ = fill_ = 0;
  delivered_ = 0;
  cancel_ = done_ = false;
  result_ = Status::OK();
}

void RemoveStaleScratch(Env* env, const std::string& incoming) {
  auto names = env->ListDir(incoming);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    auto dash = name.find("-pull-");
    if (dash == 0 || dash == std::string::npos || name.find_first_not_of("0123456789") != dash) continue;
    long pid = std::strtol(name.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0 || pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask
    (void)env->RemoveFile(incoming + "/" + name);
  }
}

std::string ScratchPath(const Store& store) {
  static std::atomic<uint64_t> counter{0};
  return store.path() + "/objects/incoming/" + std::to_string(::getpid()) + "-pull-" + std::to_string(counter++);
}


}  // namespace ki::remote
