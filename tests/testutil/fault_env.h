// FaultInjectionEnv: an Env that forwards to the real one and fails on
// demand, as leveldb's fault-injection tests do: every write reports a full
// disk once the budget of bytes is spent; an atomic file's commit fails at
// its fsync or at its rename; a directory fsync fails; reads of a chosen
// file fail with EIO after a number of bytes; or any one step that makes
// data durable or visible (FailStep), each step logged in order.
#pragma once

#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ki/env.h"

namespace ki::test {

class FaultInjectionEnv : public Env {
 public:
  explicit FaultInjectionEnv(Env* base = Env::Default()) : base_(base) {}

  // After `bytes` more bytes are appended, every Append fails with ENOSPC.
  void SetWriteBudget(int64_t bytes) { budget_ = bytes; }
  // The next SyncDir calls fail with EIO.
  void FailSyncDir(bool fail) { fail_sync_dir_ = fail; }
  // Where an atomic file's Commit fails: its fsync, or its rename (link when
  // it may not replace). Either way the file never reaches its name and its
  // temporary file is removed, as a real failure there leaves it.
  enum class CommitFault { kNone, kFsync, kRename };
  // Every Commit fails at `step` with `err` (ENOSPC: a full disk) until
  // reset with kNone.
  void FailCommits(CommitFault step, int err = ENOSPC) {
    commit_fault_err_ = err;
    commit_fault_ = step;
  }
  CommitFault commit_fault() const { return commit_fault_; }
  int commit_fault_err() const { return commit_fault_err_; }
  // Directories passed to SyncDir (successful or not), in order.
  std::vector<std::string> synced_dirs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return synced_dirs_;
  }
  int64_t bytes_written() const { return written_; }
  // Steps that make data durable or visible, counted from the last
  // FailStep: an atomic file's Commit, SyncFile, SyncDir, Rename. Step `n`
  // (0: the next one) fails with EIO, once, without doing anything (a
  // commit's temporary file is removed); -1 fails none. Either way, from
  // the first FailStep on, every step is logged (steps()) as "commit PATH",
  // "syncfile PATH", "syncdir PATH" or "rename FROM -> TO", and a failed
  // one as that followed by " FAILED".
  void FailStep(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    steps_.clear();
    fail_step_ = n;
    counting_ = true;
  }
  std::vector<std::string> steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  // Logs a step; true when it is the one to fail.
  bool Step(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!counting_) return false;
    const bool fail = static_cast<int>(steps_.size()) == fail_step_;
    steps_.push_back(fail ? what + " FAILED" : what);
    return fail;
  }
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      synced_dirs_.push_back(p);
    }
    if (fail_sync_dir_) return ErrnoStatus("fsync", p, EIO);
    if (Step("syncdir " + p)) return ErrnoStatus("fsync", p, EIO);
    return base_->SyncDir(p);
  }
  Status SyncFile(const std::string& p) override {
    if (Step("syncfile " + p)) return ErrnoStatus("fsync", p, EIO);
    return base_->SyncFile(p);
  }
  Status RemoveFile(const std::string& p) override { return base_->RemoveFile(p); }
  Status Rename(const std::string& a, const std::string& b) override {
    if (Step("rename " + a + " -> " + b)) return ErrnoStatus("rename", a + " -> " + b, EIO);
    return base_->Rename(a, b);
  }
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
  std::atomic<CommitFault> commit_fault_{CommitFault::kNone};
  std::atomic<int> commit_fault_err_{ENOSPC};
  mutable std::mutex mu_;
  std::vector<std::string> synced_dirs_;
  std::vector<std::string> steps_;
  int fail_step_ = -1;
  bool counting_ = false;
  std::string read_fault_path_;  // set before the reads it affects
  uint64_t read_fault_after_ = 0;
};

}  // namespace ki::test
