// The store lock (docs/format.md, "Store lock"): what lets `ki gc` delete
// objects and replace data.mdb while no other process has the store open.
//
// Every process that opens a store's LMDB environment holds `.ki/lock`
// shared (flock) from before mdb_env_open until after mdb_env_close; ki gc
// holds it exclusive for its mark, delete and compaction. A second file,
// `.ki/lock.gate`, keeps a stream of short commands from starving gc: an
// opener passes through it (shared, released as soon as the store lock is
// held), gc holds it exclusive from before it asks for the store lock until
// it is done, so once gc waits no new opener gets in.
//
// Plain POSIX rather than Env, as src/sign/trust.cc's list lock: a lock is
// no data a fault could lose, and Env has no locking. Closing the
// descriptors releases the locks, also when the process is killed.
#pragma once

#include <functional>
#include <string>

#include "ki/status.h"

namespace ki::odb {

class StoreLock {
 public:
  StoreLock() = default;
  ~StoreLock() { Release(); }
  StoreLock(StoreLock&& o) noexcept : fd_(o.fd_), gate_fd_(o.gate_fd_) { o.fd_ = o.gate_fd_ = -1; }
  StoreLock& operator=(StoreLock&& o) noexcept {
    if (this != &o) {
      Release();
      fd_ = o.fd_;
      gate_fd_ = o.gate_fd_;
      o.fd_ = o.gate_fd_ = -1;
    }
    return *this;
  }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // Shared, for as long as the environment is open. A read-only open of a
  // store whose directory cannot be written (read-only media) proceeds
  // without the lock when the lock files cannot be opened: nobody can run
  // gc on such a store either.
  static Result<StoreLock> Shared(const std::string& ki_dir, bool read_only);
  // Exclusive: ki gc. `waiting` is called once if another process holds
  // the store, before blocking until it closes it.
  static Result<StoreLock> Exclusive(const std::string& ki_dir, const std::function<void()>& waiting);

  bool held() const { return fd_ >= 0; }
  // Whether this lock is gc's (exclusive).
  bool exclusive() const { return gate_fd_ >= 0; }

 private:
  void Release();
  int fd_ = -1;       // .ki/lock
  int gate_fd_ = -1;  // .ki/lock.gate, held by an exclusive lock only
};

std::string LockPath(const std::string& ki_dir);      // .ki/lock
std::string LockGatePath(const std::string& ki_dir);  // .ki/lock.gate

}  // namespace ki::odb
