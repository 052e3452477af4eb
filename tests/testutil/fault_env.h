// FaultInjectionEnv: an Env that forwards to the real one and fails on
// demand, as leveldb's fault-injection tests do: the Nth write reports a
// full disk, or every write does once the budget of bytes is spent.
#pragma once

#include <atomic>
#include <cerrno>
#include <memory>

#include "ki/env.h"

namespace ki::test {

class FaultInjectionEnv : public Env {
 public:
  explicit FaultInjectionEnv(Env* base = Env::Default()) : base_(base) {}

  // After `bytes` more bytes are appended, every Append fails with ENOSPC.
  void SetWriteBudget(int64_t bytes) { budget_ = bytes; }
  // The next SyncDir calls fail with EIO.
  void FailSyncDir(bool fail) { fail_sync_dir_ = fail; }
  int64_t bytes_written() const { return written_; }

  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    return base_->ReadFile(path, max_bytes);
  }
  using Env::NewAtomicFile;
  Result<std::unique_ptr<AtomicFile>> NewAtomicFile(const std::string& path,
                                                    const AtomicFileOptions& options) override;
  bool Exists(const std::string& p) override { return base_->Exists(p); }
  bool IsDirectory(const std::string& p) override { return base_->IsDirectory(p); }
  Status CreateDirs(const std::string& p) override { return base_->CreateDirs(p); }
  Status SyncDir(const std::string& p) override {
    if (fail_sync_dir_) return ErrnoStatus("fsync", p, EIO);
    return base_->SyncDir(p);
  }
  Status RemoveFile(const std::string& p) override { return base_->RemoveFile(p); }
  Result<std::vector<std::string>> ListDir(const std::string& p) override { return base_->ListDir(p); }
  Result<uint64_t> FileSize(const std::string& p) override { return base_->FileSize(p); }
  bool IsWritableDir(const std::string& p) override { return base_->IsWritableDir(p); }

  // Called by the wrapped files.
  Status Charge(size_t n, const std::string& path) {
    if (budget_ >= 0 && int64_t(n) > budget_) {
      budget_ = 0;
      return ErrnoStatus("write", path, ENOSPC);
    }
    if (budget_ >= 0) budget_ -= int64_t(n);
    written_ += int64_t(n);
    return Status::OK();
  }

 private:
  Env* base_;
  std::atomic<int64_t> budget_{-1};
  std::atomic<int64_t> written_{0};
  std::atomic<bool> fail_sync_dir_{false};
};

}  // namespace ki::test
