// Blob streams: a stored object's bytes read a piece at a time when the
// caller asks for them, and a blob's bytes written a piece at a time into
// a scratch file the store owns before a Batch stores them; as libgit2's
// odb read and write streams (git_odb_open_rstream, git_odb_open_wstream)
// are. For what must not be held whole: an upload that curl pulls from, a
// download that arrives in pieces, standard input past its first MiB.
//
// Every file goes through the store's Env (ki/store_env.h), so a
// fault-injection Env reaches them. A writer's scratch file lives under the
// store's objects/incoming, which audit lists and --reindex clears; it is
// removed when the writer is destroyed, whatever happened; a process
// killed before that leaves it, and the next writer opened on the store
// removes what dead processes left.
//
// Free functions rather than Store members, as EnvOf is: store.h is
// included by nearly every file.
//
// Thread-safety: a reader or writer is one thread's at a time; several
// may be open at once, on several threads. The store must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

// A stored object's verified bytes, front to back. The bytes are re-hashed
// as they are read, and the last one is handed out only once all of them
// hash to the digest: a damaged object ends in Corruption before its
// reader reports the end, so an upload of it never completes. An object
// kept in LMDB (at most 64 KiB of frame) is read and checked whole when
// the reader opens; a loose one is decoded as it is read, with about
// 2 MiB of buffers whatever its size.
class BlobReader {
 public:
  virtual ~BlobReader() = default;
  // Its raw size (the index's).
  virtual uint64_t size() const = 0;
  // Up to n bytes into buf; 0 at the end.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

// NotFound when the store does not hold `d`; Corruption when its index
// entry and frame disagree.
Result<std::unique_ptr<BlobReader>> OpenBlobReader(Store& store, const Digest& d);

// A blob to be: bytes appended to a scratch file of the store, then stored
// through a Batch of that store as Batch::PutBlobStream stores a file.
class BlobWriter {
 public:
  virtual ~BlobWriter() = default;
  // Drops what was appended so far (a download retried from its start).
  virtual Status Restart() = 0;
  virtual Status Append(std::string_view bytes) = 0;
  // Bytes appended since the start (or the last Restart).
  virtual uint64_t size() const = 0;
  // Stores what was appended as a blob through `batch`, which must be a
  // Batch of the store this writer was opened on; with `expected`, the
  // bytes must hash to it (Corruption if not: a caller that hashed them as
  // they arrived). The scratch file is removed once stored, or on failure.
  // Once per writer.
  virtual Result<PutResult> Finish(Batch& batch, std::string_view media_type,
                                   const std::optional<Digest>& expected = std::nullopt) = 0;
};

// `where` names the input in errors ("standard input", a remote blob).
Result<std::unique_ptr<BlobWriter>> OpenBlobWriter(Store& store, const std::string& where);

}  // namespace ki
