// FaultInjectionEnv: an Env that forwards to the real one and fails on
// demand, as leveldb's fault-injection tests do: the Nth write reports a
// full disk, or every write does once the budget of bytes is spent; reads
// of a chosen file fail with EIO after a number of bytes.
#pragma once

#include <atomic>
#include <cerrno>
#include <memory>
#include <string>

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
  // Reads of files whose path contains `path_part` fail with EIO once
  // `after_bytes` of that file have been read ("" turns it off).
  void FailReads(std::string path_part, uint64_t after_bytes) {
    read_fault_path_ = std::move(path_part);
    read_fault_after_ = after_bytes;
  }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            const SequentialFileOptions& options) override;
  std::unique_ptr<SequentialFile> StandardInput() override { return base_->StandardInput(); }
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
  Status Rename(const std::string& a, const std::string& b) override { return base_->Rename(a, b); }
  Status RemoveTree(const std::string& p) override { return base_->RemoveTree(p); }
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
  std::string read_fault_path_;  // set before the reads it affects
  uint64_t read_fault_after_ = 0;
};

}  // namespace ki::test
