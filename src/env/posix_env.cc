// The POSIX implementation of Env.
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "ki/env.h"

namespace ki {

Status ErrnoStatus(std::string_view op, const std::string& path, int err) {
  return Status::IOError(std::string(op) + " " + path + ": " + std::strerror(err));
}

// Opens `path` read-only (with `flags` added), fsyncs it and closes it.
Status FsyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus("fsync", path, err);
  return Status::OK();
}

Status Env::WriteFileAtomic(const std::string& path, std::string_view data, Durability d) {
  KI_ASSIGN_OR_RETURN(auto file, NewAtomicFile(path));
  KI_RETURN_IF_ERROR(file->Append(data));
  return file->Commit(d);
}

Result<std::string> ReadAll(SequentialFile& file, const std::string& what, uint64_t max_bytes) {
  KI_ASSIGN_OR_RETURN(FileStat st, file.Stat());
  if (st.directory) return Status::InvalidInput(what + " is a directory");
  // The size is checked before allocating.
  if (st.regular && st.size > max_bytes) {
    return Status::InvalidInput(what + ": " + std::to_string(st.size) + " bytes, over the limit of " +
                                std::to_string(max_bytes));
  }
  // One byte more than the size, so that the read that finds the end needs
  // no room of its own: a regular file is read with one allocation and no
  // copy.
  std::string out(st.regular && st.size > 0 ? size_t(st.size) + 1 : size_t{1} << 16, '\0');
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      const uint64_t cap = max_bytes < UINT64_MAX ? max_bytes + 1 : max_bytes;  // one byte past the limit tells
      out.resize(size_t(std::min<uint64_t>(uint64_t(out.size()) * 2, cap)));
    }
    KI_ASSIGN_OR_RETURN(size_t n, file.Read(out.data() + used, out.size() - used));
    if (n == 0) break;
    used += n;
    if (used > max_bytes) {
      return Status::InvalidInput(what + ": over the limit of " + std::to_string(max_bytes) + " bytes");
    }
  }
  out.resize(used);
  return out;
}

Result<std::string> Env::ReadFile(const std::string& path, uint64_t max_bytes) {
  KI_ASSIGN_OR_RETURN(auto file, NewSequentialFile(path));
  return ReadAll(*file, path, max_bytes);
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

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(int fd, std::string path, bool owned) : fd_(fd), path_(std::move(path)), owned_(owned) {}
  ~PosixSequentialFile() override {
    if (owned_) ::close(fd_);
  }
  Result<size_t> Read(char* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) return size_t(r);
      if (errno != EINTR) return ErrnoStatus("read", path_, errno);
    }
  }
  Result<FileStat> Stat() override {
    struct stat st{};
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("stat", path_, errno);
    FileStat f;
    f.regular = S_ISREG(st.st_mode);
    f.directory = S_ISDIR(st.st_mode);
    f.mode = uint32_t(st.st_mode & 07777);
    f.uid = uint32_t(st.st_uid);
    f.size = uint64_t(st.st_size);
    f.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    f.ctime_ns = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    return f;
  }
  Result<std::unique_ptr<MappedFile>> Map() override;

 private:
  int fd_;
  std::string path_;
  bool owned_;
};

// SIGBUS from a mapped file that shrank (MappedFile::ReadGuarded). The
// handler is process-wide but a guard is per thread: a thread inside
// ReadGuarded points t_mapped_read at the range it reads and where to jump
// back to; a fault at an address inside that range jumps there, any other
// SIGBUS goes where it went before the handler was installed.
struct MappedRead {
  sigjmp_buf jump;
  const char* begin;
  const char* end;
};
// Plain data, zero-initialised: read from the handler without running any
// thread_local initialiser.
thread_local MappedRead* t_mapped_read = nullptr;

std::mutex g_sigbus_mu;
int g_sigbus_users = 0;                 // guards open in all threads (g_sigbus_mu)
struct sigaction g_sigbus_previous{};  // set while g_sigbus_users > 0

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const MappedRead* r = t_mapped_read;
  const char* addr = static_cast<const char*>(info->si_addr);
  // Only a fault reading the guarded mapping is taken back; the signal mask
  // saved by sigsetjmp (SIGBUS unblocked) is restored by the jump.
  if (r && addr >= r->begin && addr < r->end) siglongjmp(const_cast<MappedRead*>(r)->jump, 1);
  if (g_sigbus_previous.sa_flags & SA_SIGINFO) {
    g_sigbus_previous.sa_sigaction(sig, info, context);
  } else if (g_sigbus_previous.sa_handler != SIG_DFL && g_sigbus_previous.sa_handler != SIG_IGN) {
    g_sigbus_previous.sa_handler(sig);
  } else {
    // Returning re-runs the faulting access, which now ends the process as
    // it would have without this handler (an ignored SIGBUS from a fault
    // cannot be ignored either).
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGBUS, &dfl, nullptr);
  }
}

// The handler installed while at least one guard is open in any thread,
// and the previous one put back after the last.
class SigbusHandler {
 public:
  SigbusHandler() {
    std::lock_guard<std::mutex> lock(g_sigbus_mu);
    if (g_sigbus_users++ > 0) return;
    struct sigaction sa{};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_sigbus_previous);
  }
  ~SigbusHandler() {
    std::lock_guard<std::mutex> lock(g_sigbus_mu);
    if (--g_sigbus_users == 0) ::sigaction(SIGBUS, &g_sigbus_previous, nullptr);
  }
  SigbusHandler(const SigbusHandler&) = delete;
  SigbusHandler& operator=(const SigbusHandler&) = delete;
};

class PosixMappedFile final : public MappedFile {
 public:
  PosixMappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~PosixMappedFile() override {
    if (size_) ::munmap(addr_, size_);
  }
  std::string_view data() const override { return {static_cast<const char*>(addr_), size_}; }
  void Release(uint64_t offset) override {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    uint64_t end = std::min<uint64_t>(offset, size_) / page * page;
    // Unmodified pages of a private read-only mapping: dropping them loses
    // nothing (advice only; a failure leaves them resident).
    if (end > released_) (void)::madvise(static_cast<char*>(addr_) + released_, end - released_, MADV_DONTNEED);
    released_ = std::max(released_, end);
  }
  bool ReadGuarded(void (*read)(void*), void* arg) override {
    if (size_ == 0) {
      read(arg);
      return true;
    }
    SigbusHandler handler;  // outside the jump: destroyed on both paths
    MappedRead r;
    r.begin = static_cast<const char*>(addr_);
    r.end = r.begin + size_;
    MappedRead* const outer = t_mapped_read;  // not changed after sigsetjmp
    if (sigsetjmp(r.jump, /*savemask=*/1) != 0) {
      t_mapped_read = outer;
      return false;
    }
    t_mapped_read = &r;
    read(arg);
    t_mapped_read = outer;
    return true;
  }

 private:
  void* addr_;
  size_t size_;
  uint64_t released_ = 0;
};

Result<std::unique_ptr<MappedFile>> PosixSequentialFile::Map() {
  KI_ASSIGN_OR_RETURN(FileStat st, Stat());
  if (!st.regular) return Status::IOError(path_ + " cannot be mapped into memory: not a regular file");
  if (st.size == 0) return std::unique_ptr<MappedFile>(new PosixMappedFile(nullptr, 0));
  void* addr = ::mmap(nullptr, size_t(st.size), PROT_READ, MAP_PRIVATE, fd_, 0);
  if (addr == MAP_FAILED) return ErrnoStatus("mmap", path_, errno);
  (void)::madvise(addr, size_t(st.size), MADV_SEQUENTIAL);
  return std::unique_ptr<MappedFile>(new PosixMappedFile(addr, size_t(st.size)));
}

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            const SequentialFileOptions& options) override {
    int flags = O_RDONLY | O_CLOEXEC | (options.no_follow ? O_NOFOLLOW : 0) | (options.regular_only ? O_NONBLOCK : 0);
    int fd = ::open(path.c_str(), flags);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("no such file: " + path);
      if (errno == ELOOP && options.no_follow) {
        return Status::IOError("refusing to use " + path + ": it is a symbolic link");
      }
      return ErrnoStatus("open", path, errno);
    }
    auto file = std::make_unique<PosixSequentialFile>(fd, path, /*owned=*/true);
    if (options.regular_only) {
      // Opened without blocking (a FIFO's open waits for a writer); checked,
      // then reads block as usual.
      KI_ASSIGN_OR_RETURN(FileStat st, file->Stat());
      if (!st.regular) return Status::IOError("refusing to use " + path + ": not a regular file");
      if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) return ErrnoStatus("fcntl", path, errno);
    }
    return std::unique_ptr<SequentialFile>(std::move(file));
  }

  std::unique_ptr<SequentialFile> StandardInput() override {
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(STDIN_FILENO, "standard input", false));
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

  Status SyncDir(const std::string& path) override { return FsyncPath(path, O_DIRECTORY); }

  // fsync flushes the file's dirty pages whoever wrote them, through any
  // descriptor: a read-only one is enough (Linux, and what POSIX intends).
  Status SyncFile(const std::string& path) override { return FsyncPath(path, O_NOFOLLOW); }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("rename", from + " -> " + to, errno);
    return Status::OK();
  }

  Status RemoveTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Status::IOError("remove " + path + ": " + ec.message());
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
