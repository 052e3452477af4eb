#include "testutil/fault_env.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

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
    env_->WillReplace(path_);
    KI_RETURN_IF_ERROR(base_->Commit(d));
    env_->Replaced(path_, d);
    return Status::OK();
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

// Paths as the tracking keys them: "a//b/./c/" and "a/b/c" are one path.
std::string Norm(const std::string& p) {
  std::string n = std::filesystem::path(p).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

std::string Parent(const std::string& normal) {
  const size_t slash = normal.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : normal.substr(0, slash);
}

bool Under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

}  // namespace

void FaultInjectionEnv::RecordLocked(const std::string& path) {
  if (!tracking_) return;
  const std::string n = Norm(path);
  if (pending_.count(n)) return;  // the durable state is the one saved first
  Prior pr;
  pr.seq = seq_++;
  if (base_->IsDirectory(n)) {
    pr.existed = pr.directory = true;
  } else if (base_->Exists(n)) {
    pr.existed = true;
    if (!unsynced_.count(n)) {
      auto bytes = base_->ReadFile(n, uint64_t(1) << 30);
      if (bytes.ok()) pr.bytes = std::move(*bytes);
    }
  }
  pending_.emplace(n, std::move(pr));
}

void FaultInjectionEnv::WillReplace(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  RecordLocked(path);
}

void FaultInjectionEnv::Replaced(const std::string& path, Durability d) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tracking_) return;
  if (d == Durability::kSync) {
    unsynced_.erase(Norm(path));
  } else {
    unsynced_.insert(Norm(path));
  }
}

Status FaultInjectionEnv::CreateDirs(const std::string& p) {
  if (dead_) return ErrnoStatus("mkdir", p, EIO);
  std::lock_guard<std::mutex> lock(mu_);
  if (tracking_) {
    // Each directory this creates is a new name in its parent.
    std::vector<std::string> missing;
    for (std::string d = Norm(p); d != "/" && d != "." && !base_->Exists(d); d = Parent(d)) missing.push_back(d);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) RecordLocked(*it);
  }
  return base_->CreateDirs(p);
}

Status FaultInjectionEnv::SyncDir(const std::string& p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    synced_dirs_.push_back(p);
  }
  if (fail_sync_dir_) return ErrnoStatus("fsync", p, EIO);
  if (Step("syncdir " + p)) return ErrnoStatus("fsync", p, EIO);
  KI_RETURN_IF_ERROR(base_->SyncDir(p));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string dir = Norm(p);
  std::vector<std::string> gone;  // names made durably absent: what was under them is gone too
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (Parent(it->first) != dir) {
      ++it;
      continue;
    }
    if (!base_->Exists(it->first)) gone.push_back(it->first);
    it = pending_.erase(it);
  }
  for (const std::string& g : gone) {
    for (auto it = pending_.begin(); it != pending_.end();) it = Under(it->first, g) ? pending_.erase(it) : std::next(it);
    for (auto it = unsynced_.begin(); it != unsynced_.end();) it = Under(*it, g) ? unsynced_.erase(it) : std::next(it);
  }
  return Status::OK();
}

Status FaultInjectionEnv::SyncFile(const std::string& p) {
  if (Step("syncfile " + p)) return ErrnoStatus("fsync", p, EIO);
  KI_RETURN_IF_ERROR(base_->SyncFile(p));
  std::lock_guard<std::mutex> lock(mu_);
  unsynced_.erase(Norm(p));
  return Status::OK();
}

Status FaultInjectionEnv::RemoveFile(const std::string& p) {
  if (dead_) return ErrnoStatus("unlink", p, EIO);
  std::lock_guard<std::mutex> lock(mu_);
  RecordLocked(p);
  KI_RETURN_IF_ERROR(base_->RemoveFile(p));
  unsynced_.erase(Norm(p));
  return Status::OK();
}

Status FaultInjectionEnv::Rename(const std::string& a, const std::string& b) {
  if (Step("rename " + a + " -> " + b)) return ErrnoStatus("rename", a + " -> " + b, EIO);
  std::lock_guard<std::mutex> lock(mu_);
  RecordLocked(a);
  RecordLocked(b);
  KI_RETURN_IF_ERROR(base_->Rename(a, b));
  if (tracking_) {
    // The data go with the file: unsynced at `a`, unsynced at `b`.
    const std::string na = Norm(a), nb = Norm(b);
    const bool was_unsynced = unsynced_.erase(na) > 0;
    unsynced_.erase(nb);
    if (was_unsynced) unsynced_.insert(nb);
    std::vector<std::string> moved;
    for (auto it = unsynced_.begin(); it != unsynced_.end();) {
      if (Under(*it, na)) {
        moved.push_back(nb + it->substr(na.size()));
        it = unsynced_.erase(it);
      } else {
        ++it;
      }
    }
    unsynced_.insert(moved.begin(), moved.end());
  }
  return Status::OK();
}

Status FaultInjectionEnv::RemoveTree(const std::string& p) {
  if (dead_) return ErrnoStatus("remove", p, EIO);
  std::lock_guard<std::mutex> lock(mu_);
  if (tracking_) {
    // Everything under it comes back if its removal is not durable.
    std::vector<std::string> todo = {Norm(p)};
    while (!todo.empty()) {
      const std::string x = todo.back();
      todo.pop_back();
      RecordLocked(x);
      if (!base_->IsDirectory(x)) continue;
      if (auto names = base_->ListDir(x); names.ok())
        for (const std::string& n : *names) todo.push_back(x + "/" + n);
    }
  }
  KI_RETURN_IF_ERROR(base_->RemoveTree(p));
  if (tracking_) {
    const std::string n = Norm(p);
    for (auto it = unsynced_.begin(); it != unsynced_.end();)
      it = (*it == n || Under(*it, n)) ? unsynced_.erase(it) : std::next(it);
  }
  return Status::OK();
}

std::vector<std::string> FaultInjectionEnv::DropUnsyncedData() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> undone;
  for (const std::string& f : unsynced_) {
    if (pending_.count(f) || !base_->Exists(f)) continue;  // its name is undone below
    (void)base_->WriteFileAtomic(f, "", Durability::kNone);
    undone.push_back("emptied " + f);
  }
  std::vector<std::pair<std::string, Prior>> changes(pending_.begin(), pending_.end());
  std::sort(changes.begin(), changes.end(), [](const auto& x, const auto& y) { return x.second.seq > y.second.seq; });
  for (const auto& [path, prior] : changes) {
    if (!prior.existed) {
      if (base_->Exists(path) || base_->IsDirectory(path)) {
        (void)base_->RemoveTree(path);
        undone.push_back("removed " + path);
      }
    } else if (prior.directory) {
      if (!base_->IsDirectory(path)) {
        (void)base_->CreateDirs(path);
        undone.push_back("brought back directory " + path);
      }
    } else {
      (void)base_->CreateDirs(Parent(path));
      (void)base_->WriteFileAtomic(path, prior.bytes, Durability::kNone);
      undone.push_back("brought back " + path + " (" + std::to_string(prior.bytes.size()) + " bytes)");
    }
  }
  pending_.clear();
  unsynced_.clear();
  crash_step_ = -1;
  dead_ = false;
  return undone;
}

Result<std::unique_ptr<SequentialFile>> FaultInjectionEnv::NewSequentialFile(const std::string& path,
                                                                             const SequentialFileOptions& options) {
  KI_ASSIGN_OR_RETURN(auto f, base_->NewSequentialFile(path, options));
  if (read_fault_path_.empty() || path.find(read_fault_path_) == std::string::npos) return f;
  return std::unique_ptr<SequentialFile>(new FaultReader(std::move(f), path, read_fault_after_));
}

Result<std::unique_ptr<AtomicFile>> FaultInjectionEnv::NewAtomicFile(const std::string& path,
                                                                     const AtomicFileOptions& options) {
  if (dead_) return ErrnoStatus("open", path, EIO);
  KI_ASSIGN_OR_RETURN(auto f, base_->NewAtomicFile(path, options));
  return std::unique_ptr<AtomicFile>(new FaultFile(this, std::move(f), path));
}

}  // namespace ki::test
