// MemoryEnv: an Env over a map of paths to bytes, for fuzz targets whose
// code reads through an Env (the export reader, an OCI layout's files):
// an input goes to the code under test without a file write and read per
// execution, which cost more than the parse itself (fuzz_export ran ~14
// executions a second with a real file, bench/results/fuzz-2026-12-01.md).
// One thread; nothing is durable, and nothing needs to be.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "ki/env.h"

namespace ki::fuzz {

class MemoryEnv final : public Env {
 public:
  void Put(const std::string& path, std::string bytes) { files_[path] = std::move(bytes); }
  void AddDir(const std::string& path) { dirs_.insert(path); }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            const SequentialFileOptions&) override {
    if (dirs_.count(path)) return std::unique_ptr<SequentialFile>(new Reader(nullptr));
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path + ": no such file");
    return std::unique_ptr<SequentialFile>(new Reader(&it->second));
  }
  std::unique_ptr<SequentialFile> StandardInput() override { return std::unique_ptr<SequentialFile>(new Reader(&empty_)); }
  Result<std::unique_ptr<AtomicFile>> NewAtomicFile(const std::string& path, const AtomicFileOptions&) override {
    return std::unique_ptr<AtomicFile>(new Writer(this, path));
  }
  bool Exists(const std::string& p) override { return files_.count(p) || dirs_.count(p); }
  bool IsDirectory(const std::string& p) override { return dirs_.count(p) > 0; }
  Status CreateDirs(const std::string& p) override {
    dirs_.insert(p);
    return Status::OK();
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Status SyncFile(const std::string&) override { return Status::OK(); }
  Status RemoveFile(const std::string& p) override {
    files_.erase(p);
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    auto it = files_.find(from);
    if (it == files_.end()) return ErrnoStatus("rename", from, ENOENT);
    files_[to] = std::move(it->second);
    files_.erase(from);
    return Status::OK();
  }
  Status RemoveTree(const std::string& p) override {
    files_.erase(p);
    dirs_.erase(p);
    return Status::OK();
  }
  Result<std::vector<std::string>> ListDir(const std::string&) override { return std::vector<std::string>(); }
  Result<uint64_t> FileSize(const std::string& p) override {
    auto it = files_.find(p);
    if (it == files_.end()) return ErrnoStatus("stat", p, ENOENT);
    return uint64_t(it->second.size());
  }
  bool IsWritableDir(const std::string& p) override { return dirs_.count(p) > 0; }

 private:
  class Reader final : public SequentialFile {
   public:
    explicit Reader(const std::string* bytes) : bytes_(bytes) {}  // nullptr: a directory
    Result<size_t> Read(char* buf, size_t n) override {
      if (!bytes_) return ErrnoStatus("read", "a directory", EISDIR);
      n = std::min(n, bytes_->size() - pos_);
      std::memcpy(buf, bytes_->data() + pos_, n);
      pos_ += n;
      return n;
    }
    Result<FileStat> Stat() override {
      FileStat st;
      st.regular = bytes_ != nullptr;
      st.directory = bytes_ == nullptr;
      st.size = bytes_ ? bytes_->size() : 0;
      return st;
    }

   private:
    const std::string* bytes_;
    size_t pos_ = 0;
  };
  class Writer final : public AtomicFile {
   public:
    Writer(MemoryEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
    Status Append(std::string_view data) override {
      bytes_.append(data);
      return Status::OK();
    }
    Status Commit(Durability) override {
      env_->files_[path_] = std::move(bytes_);
      return Status::OK();
    }

   private:
    MemoryEnv* env_;
    std::string path_, bytes_;
  };

  std::map<std::string, std::string> files_;
  std::set<std::string> dirs_;
  const std::string empty_;
};

}  // namespace ki::fuzz
