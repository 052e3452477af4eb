// Env: the one small interface through which ki touches files.
//
// Every file ki writes or reads outside LMDB goes through an Env, so tests
// can inject faults (fail the Nth write, report a full disk, drop unsynced
// data) exactly as leveldb's fault-injection tests do. LMDB does its own I/O
// inside its map; its failures (ENOSPC, EFBIG, EACCES) surface as Status from
// the index module instead.
//
// Thread-safety: Env implementations are safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/status.h"

namespace ki {

enum class Durability { kNone, kSync };

// A file being written that becomes visible only on Commit(): data goes to a
// temporary name in the same directory and is renamed over the target. If
// the object is destroyed without Commit(), the temporary file is removed.
class AtomicFile {
 public:
  virtual ~AtomicFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // fsync (when kSync) then rename onto the final path. The caller syncs the
  // directory (Env::SyncDir), so that many renames share one directory fsync.
  virtual Status Commit(Durability d) = 0;
};

struct AtomicFileOptions {
  // Permission bits from creation on (the umask still applies): a secret
  // key is never readable by others, not even for a moment.
  uint32_t mode = 0644;
  // false: Commit refuses to replace an existing file (InvalidInput naming
  // it), atomically: the file is linked into place, not renamed.
  bool replace = true;
};

// What fstat says of an open file: the file checked is the file read,
// whatever happens to its path meanwhile.
struct FileStat {
  bool regular = false;
  bool directory = false;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0;
  uint64_t size = 0;  // as reported: 0 for pipes and procfs files
  int64_t mtime_ns = 0, ctime_ns = 0;  // a file changed meanwhile shows here
};

// A whole file mapped read-only (SequentialFile::Map).
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  virtual std::string_view data() const = 0;
  // Bytes before `offset` will not be read again soon: their pages leave
  // this process's memory (a later read maps them in again), so reading a
  // file front to back keeps a bounded resident set.
  virtual void Release(uint64_t offset) = 0;
  // Calls read(arg), which reads this mapping's bytes. A file truncated
  // while mapped (by another process) loses its pages past the new end,
  // and reading one raises SIGBUS; here such a read is abandoned where it
  // faulted and false is returned, instead of the process dying. True when
  // `read` returned. Abandoned means not unwound: `read` and what it calls
  // must own nothing that needs destroying or unlocking (plain C calls such
  // as zstd's and SHA-256's), and whatever state they were changing must
  // be thrown away by the caller. This default calls `read` unguarded.
  virtual bool ReadGuarded(void (*read)(void*), void* arg) {
    read(arg);
    return true;
  }
};

// A file read front to back: an export piped in, a secret key read straight
// into locked memory. Closed when destroyed.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into buf (retrying EINTR); 0 at the end.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  virtual Result<FileStat> Stat() = 0;
  // The whole file, mapped read-only: for code that needs its bytes
  // contiguous without holding them in memory (zstd's streaming compression
  // gives the one-shot bytes only over contiguous input). IOError when it
  // cannot be mapped (a pipe; this default). A file truncated while mapped
  // raises SIGBUS when the lost pages are read: read the bytes inside
  // MappedFile::ReadGuarded, which turns that into a return value.
  virtual Result<std::unique_ptr<MappedFile>> Map() {
    return Status::IOError("this file cannot be mapped into memory");
  }
};

// The rest of `file` (named `what` in errors), read straight into one
// string sized from its Stat when it has a size (pipes and procfs files
// report 0 and grow it); a directory, or more than max_bytes, is
// InvalidInput. Env::ReadFile and the export reader (standard input too)
// share it.
Result<std::string> ReadAll(SequentialFile& file, const std::string& what, uint64_t max_bytes);

struct SequentialFileOptions {
  // A symbolic link as the last component is refused (IOError saying so)
  // instead of followed: a key file swapped for a link is not read.
  bool no_follow = false;
  // Anything but a regular file is refused (IOError saying so) without
  // waiting: a FIFO put where a key file was expected would otherwise block
  // the open until someone writes to it.
  bool regular_only = false;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();  // the POSIX environment; never deleted

  // Reads at most max_bytes; a larger file is InvalidInput naming the path.
  // Built on NewSequentialFile, so a fault injected there shows here too.
  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes);
  // NotFound when the path does not exist.
  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                                    const SequentialFileOptions& options) = 0;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) {
    return NewSequentialFile(path, {});
  }
  // The process's standard input (not closed when destroyed).
  virtual std::unique_ptr<SequentialFile> StandardInput() = 0;
  virtual Result<std::unique_ptr<AtomicFile>> NewAtomicFile(const std::string& path,
                                                            const AtomicFileOptions& options) = 0;
  Result<std::unique_ptr<AtomicFile>> NewAtomicFile(const std::string& path) { return NewAtomicFile(path, {}); }
  // Convenience: NewAtomicFile + Append + Commit.
  Status WriteFileAtomic(const std::string& path, std::string_view data, Durability d);

  virtual bool Exists(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Status CreateDirs(const std::string& path) = 0;  // mkdir -p
  virtual Status SyncDir(const std::string& path) = 0;
  // fsync of a file that another process wrote (a compiler's output): its
  // data reach the disk before anything that vouches for them is written.
  // A symbolic link is refused, not followed.
  virtual Status SyncFile(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // rename(2): fails (IOError) when `to` is a directory that is not empty,
  // which is how two processes racing to publish one directory find out.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // rm -r; an absent path is fine.
  virtual Status RemoveTree(const std::string& path) = 0;
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;  // names, sorted
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  // True when the process may create files in the directory.
  virtual bool IsWritableDir(const std::string& path) = 0;
};

// Turns an errno into an IOError naming the operation and path, e.g.
// "write objects/ab/cd…: No space left on device".
Status ErrnoStatus(std::string_view op, const std::string& path, int err);

}  // namespace ki
