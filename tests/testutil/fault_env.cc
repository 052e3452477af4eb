#include "testutil/fault_env.h"

#include <algorithm>

namespace ki::test {
namespace {

class FaultFile final : public AtomicFile {
 public:
  FaultFile(FaultInjectionEnv* env, std::unique_ptr<AtomicFile> base, std::string path)
      : env_(env), base_(std::move(base)), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    KI_RETURN_IF_ERROR(env_->Charge(data.size(), path_));
    return base_->Append(data);
  }
  Status Commit(Durability d) override {
    // The base file is not committed: its destructor removes the temporary
    // file, which is what a failed fsync or rename leaves behind.
    switch (env_->commit_fault()) {
      case FaultInjectionEnv::CommitFault::kFsync: return ErrnoStatus("fsync", path_ + ".tmp", env_->commit_fault_err());
      case FaultInjectionEnv::CommitFault::kRename: return ErrnoStatus("rename", path_, env_->commit_fault_err());
      case FaultInjectionEnv::CommitFault::kNone: break;
    }
    if (env_->Step("commit " + path_)) return ErrnoStatus("fsync", path_ + ".tmp", EIO);
    return base_->Commit(d);
  }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<AtomicFile> base_;
  std::string path_;
};

class FaultReader final : public SequentialFile {
 public:
  FaultReader(std::unique_ptr<SequentialFile> base, std::string path, uint64_t budget)
      : base_(std::move(base)), path_(std::move(path)), budget_(budget) {}
  Result<size_t> Read(char* buf, size_t n) override {
    if (budget_ == 0) return ErrnoStatus("read", path_, EIO);
    KI_ASSIGN_OR_RETURN(size_t got, base_->Read(buf, std::min<uint64_t>(n, budget_)));
    budget_ -= got;
    return got;
  }
  Result<FileStat> Stat() override { return base_->Stat(); }

 private:
  std::unique_ptr<SequentialFile> base_;
  std::string path_;
  uint64_t budget_;
};

}  // namespace

Result<std::unique_ptr<SequentialFile>> FaultInjectionEnv::NewSequentialFile(const std::string& path,
                                                                             const SequentialFileOptions& options) {
  KI_ASSIGN_OR_RETURN(auto f, base_->NewSequentialFile(path, options));
  if (read_fault_path_.empty() || path.find(read_fault_path_) == std::string::npos) return f;
  return std::unique_ptr<SequentialFile>(new FaultReader(std::move(f), path, read_fault_after_));
}

Result<std::unique_ptr<AtomicFile>> FaultInjectionEnv::NewAtomicFile(const std::string& path,
                                                                     const AtomicFileOptions& options) {
  KI_ASSIGN_OR_RETURN(auto f, base_->NewAtomicFile(path, options));
  return std::unique_ptr<AtomicFile>(new FaultFile(this, std::move(f), path));
}

}  // namespace ki::test
