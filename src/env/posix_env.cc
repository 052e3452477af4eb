// The POSIX implementation of Env.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "ki/env.h"

namespace ki {

Status ErrnoStatus(std::string_view op, const std::string& path, int err) {
  return Status::IOError(std::string(op) + " " + path + ": " + std::strerror(err));
}

Status Env::WriteFileAtomic(const std::string& path, std::string_view data, Durability d) {
  KI_ASSIGN_OR_RETURN(auto file, NewAtomicFile(path));
  KI_RETURN_IF_ERROR(file->Append(data));
  return file->Commit(d);
}

namespace {

// Writes fully, retrying on EINTR and short writes.
Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path, errno);
    }
    data.remove_prefix(size_t(n));
  }
  return Status::OK();
}

class PosixAtomicFile final : public AtomicFile {
 public:
  PosixAtomicFile(std::string path, std::string tmp, int fd, bool replace)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd), replace_(replace) {}
  ~PosixAtomicFile() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  Status Append(std::string_view data) override { return WriteAll(fd_, data, tmp_); }
  Status Commit(Durability d) override {
    // fsync before rename: otherwise a crash can leave the new name pointing
    // at an empty or partial file (the rename reaches disk before the data).
    if (d == Durability::kSync && ::fdatasync(fd_) != 0) return ErrnoStatus("fsync", tmp_, errno);
    if (::close(fd_) != 0) {
      fd_ = -1;
      return ErrnoStatus("close", tmp_, errno);
    }
    fd_ = -1;
    if (replace_) {
      if (::rename(tmp_.c_str(), path_.c_str()) != 0) return ErrnoStatus("rename", path_, errno);
      committed_ = true;
      return Status::OK();
    }
    // link() fails when the name exists, where rename() would replace it;
    // the temporary name is removed either way (destructor).
    if (::link(tmp_.c_str(), path_.c_str()) != 0) {
      if (errno == EEXIST) return Status::InvalidInput(path_ + " already exists");
      return ErrnoStatus("link", path_, errno);
    }
    return Status::OK();
  }

 private:
  std::string path_, tmp_;
  int fd_;
  bool replace_;
  bool committed_ = false;  // renamed: no temporary name left to remove
};

class PosixEnv final : public Env {
 public:
  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("no such file: " + path);
      return ErrnoStatus("open", path, errno);
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return ErrnoStatus("stat", path, errno);
    if (S_ISDIR(st.st_mode)) return Status::InvalidInput(path + " is a directory");
    // The size is checked before allocating; pipes report 0 and are read
    // incrementally with the same cap.
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes) {
      return Status::InvalidInput(path + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
                                  std::to_string(max_bytes));
    }
    std::string out;
    if (S_ISREG(st.st_mode)) out.reserve(size_t(st.st_size));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path, errno);
      }
      if (n == 0) break;
      if (out.size() + size_t(n) > max_bytes) {
        return Status::InvalidInput(path + ": over the limit of " + std::to_string(max_bytes) + " bytes");
      }
      out.append(buf, size_t(n));
    }
    return out;
  }

  using Env::NewAtomicFile;
  Result<std::unique_ptr<AtomicFile>> NewAtomicFile(const std::string& path,
                                                    const AtomicFileOptions& options) override {
    static std::atomic<uint64_t> counter{0};
    std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(options.mode));
    if (fd < 0) return ErrnoStatus("create", tmp, errno);
    return std::unique_ptr<AtomicFile>(new PosixAtomicFile(path, std::move(tmp), fd, options.replace));
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  bool IsDirectory(const std::string& path) override {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty() || IsDirectory(path)) return Status::OK();
    auto slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) KI_RETURN_IF_ERROR(CreateDirs(path.substr(0, slash)));
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus("mkdir", path, errno);
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus("fsync", path, err);
    return Status::OK();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", path, errno);
    return Status::OK();
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (!d) {
      if (errno == ENOENT) return std::vector<std::string>{};
      return ErrnoStatus("opendir", path, errno);
    }
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    return uint64_t(st.st_size);
  }

  bool IsWritableDir(const std::string& path) override {
    return IsDirectory(path) && ::access(path.c_str(), W_OK) == 0;
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv();  // never deleted: used until exit
  return env;
}

}  // namespace ki
