// FaultInjectionEnv: an Env that forwards to the real one and fails on
// demand, as leveldb's fault-injection tests do: every write reports a full
// disk once the budget of bytes is spent; an atomic file's commit fails at
// its fsync or at its rename; a directory fsync fails; reads of a chosen
// file fail with EIO after a number of bytes; or any one step that makes
// data durable or visible (FailStep), each step logged in order.
//
// It also simulates a crash (a power cut), as leveldb's fault-injection test
// does: with TrackUnsynced() on, it remembers what is not yet durable (file
// data not fsynced; a name created, replaced, renamed or removed in a
// directory not fsynced since), CrashAtStep / Crash end the process's
// writes there, and DropUnsyncedData() leaves the files as a power cut
// could: unsynced data gone (the file empty), every undurable name change
// undone. LMDB's own files are outside it (LMDB fsyncs its commits itself;
// env.h): a crash test covers the files ki writes through its Env.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
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
  // Logs a step; true when it is the one to fail (or the one the process
  // dies at, or the process is dead).
  bool Step(const std::string& what) {
    if (dead_) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (!counting_) return false;
    const int i = static_cast<int>(steps_.size());
    if (i == crash_step_) {
      dead_ = true;
      steps_.push_back(what + " CRASHED");
      return true;
    }
    const bool fail = i == fail_step_;
    steps_.push_back(fail ? what + " FAILED" : what);
    return fail;
  }
  // ---- crash simulation ----
  // Starts remembering what is not durable (what is there now is taken to
  // be durable). Costs a read of each file replaced or removed.
  void TrackUnsynced() {
    std::lock_guard<std::mutex> lock(mu_);
    tracking_ = true;
  }
  // Step `n` (counted as FailStep counts, from this call; logged the same
  // way) is where the process dies: it is not done, and from there every
  // write, sync, rename, remove, directory creation and new file fails with
  // EIO and changes nothing. -1: none.
  void CrashAtStep(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    steps_.clear();
    fail_step_ = -1;
    crash_step_ = n;
    counting_ = true;
  }
  // The process dies now.
  void Crash() { dead_ = true; }
  bool crashed() const { return dead_; }
  // The power cut's aftermath: data not synced is lost (the file is left
  // empty), every name change since its directory's last fsync is undone
  // (a new file or directory disappears with what it holds, a replaced or
  // removed file comes back as it was durably). Then the process lives
  // again, with nothing left to drop. Temporary files of atomic files never
  // committed are left as they are: a crash may leave them either way.
  // A renamed directory comes back empty (not needed by the crash tests so
  // far); a removed one comes back whole. Returns what was undone, one line
  // each.
  std::vector<std::string> DropUnsyncedData();

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
  Status CreateDirs(const std::string& p) override;
  Status SyncDir(const std::string& p) override;
  Status SyncFile(const std::string& p) override;
  Status RemoveFile(const std::string& p) override;
  Status Rename(const std::string& a, const std::string& b) override;
  Status RemoveTree(const std::string& p) override;
  Result<std::vector<std::string>> ListDir(const std::string& p) override { return base_->ListDir(p); }
  Result<uint64_t> FileSize(const std::string& p) override { return base_->FileSize(p); }
  bool IsWritableDir(const std::string& p) override { return base_->IsWritableDir(p); }

  // Called by the wrapped files.
  // An atomic file about to be committed to `path` (before), and committed
  // (after: its data synced or not).
  void WillReplace(const std::string& path);
  void Replaced(const std::string& path, Durability d);
  Status Charge(size_t n, const std::string& path) {
    if (dead_) return ErrnoStatus("write", path, EIO);
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

  // Crash simulation (mu_). A path's durable state before the first change
  // made since its directory was last synced.
  struct Prior {
    bool existed = false, directory = false;
    std::string bytes;  // a file's durable bytes ("" when its data were never synced)
    uint64_t seq = 0;   // order of the changes, to undo them last first
  };
  void RecordLocked(const std::string& path);  // saves the prior state once
  std::atomic<bool> dead_{false};
  int crash_step_ = -1;
  bool tracking_ = false;
  uint64_t seq_ = 0;
  std::map<std::string, Prior> pending_;  // lexically normal paths
  std::set<std::string> unsynced_;        // files whose data are not durable
};

}  // namespace ki::test
