#include "odb/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ki::odb {

std::string LockPath(const std::string& ki_dir) { return ki_dir + "/lock"; }
std::string LockGatePath(const std::string& ki_dir) { return ki_dir + "/lock.gate"; }

namespace {

Status LockError(std::string_view what, const std::string& path, int err) {
  return Status::IOError(std::string(what) + " " + path + ": " + std::strerror(err));
}

// -1 with errno set when it cannot be opened.
int OpenLockFile(const std::string& path) {
  // O_NOFOLLOW: a link put there by someone else is not followed to a file of ours.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && (errno == EACCES || errno == EROFS)) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);  // flock needs no write access
  }
  return fd;
}

Status Flock(int fd, int op, const std::string& path) {
  while (::flock(fd, op) != 0) {
    if (errno != EINTR) return LockError("lock", path, errno);
  }
  return Status::OK();
}

// LOCK_EX without blocking first: true when it was free.
Result<bool> TryExclusive(int fd, const std::string& path) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    if (errno != EINTR) return LockError("lock", path, errno);
  }
  return true;
}

}  // namespace

void StoreLock::Release() {
  if (fd_ >= 0) ::close(fd_);
  if (gate_fd_ >= 0) ::close(gate_fd_);
  fd_ = gate_fd_ = -1;
}

Result<StoreLock> StoreLock::Shared(const std::string& ki_dir, bool read_only) {
  StoreLock lock;
  const std::string gate_path = LockGatePath(ki_dir), path = LockPath(ki_dir);
  int gate = OpenLockFile(gate_path);
  if (gate < 0) {
    if (read_only && (errno == EACCES || errno == EROFS || errno == ENOENT)) return lock;
    return LockError("open the lock file", gate_path, errno);
  }
  // Through the gate: blocks while gc holds it.
  Status s = Flock(gate, LOCK_SH, gate_path);
  if (s.ok()) {
    lock.fd_ = OpenLockFile(path);
    if (lock.fd_ < 0) {
      const int err = errno;
      ::close(gate);
      if (read_only && (err == EACCES || err == EROFS || err == ENOENT)) return lock;
      return LockError("open the lock file", path, err);
    }
    s = Flock(lock.fd_, LOCK_SH, path);
  }
  ::close(gate);  // leaves the gate: gc may now queue for the store lock
  if (!s.ok()) return s;
  return lock;
}

Result<StoreLock> StoreLock::Exclusive(const std::string& ki_dir, const std::function<void()>& waiting) {
  StoreLock lock;
  const std::string gate_path = LockGatePath(ki_dir), path = LockPath(ki_dir);
  lock.gate_fd_ = OpenLockFile(gate_path);
  if (lock.gate_fd_ < 0) return LockError("open the lock file", gate_path, errno);
  bool told = false;
  auto wait = [&] {
    if (!told && waiting) waiting();
    told = true;
  };
  KI_ASSIGN_OR_RETURN(bool free_gate, TryExclusive(lock.gate_fd_, gate_path));
  if (!free_gate) {
    wait();  // another gc
    KI_RETURN_IF_ERROR(Flock(lock.gate_fd_, LOCK_EX, gate_path));
  }
  lock.fd_ = OpenLockFile(path);
  if (lock.fd_ < 0) return LockError("open the lock file", path, errno);
  KI_ASSIGN_OR_RETURN(bool free_store, TryExclusive(lock.fd_, path));
  if (!free_store) {
    wait();  // processes that have the store open; no new one gets past the gate
    KI_RETURN_IF_ERROR(Flock(lock.fd_, LOCK_EX, path));
  }
  return lock;
}

}  // namespace ki::odb
