// Adapters between the store and a transfer's byte streams: a stored
// object read into an upload (StoreSource), a download written to a
// scratch file of the store (ScratchDownload) that Batch::PutBlobStream
// then stores, and the sweep of the scratch files killed pulls left.
//
// These build paths inside the store (objects/incoming) and adapt its
// callback reader with a thread: what the store should one day hand out
// itself as blob readers and writers (issue 19), at which point this file
// goes.
//
// Thread-safety: each object is one transfer worker's.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ki/env.h"
#include "ki/store.h"
#include "remote/stream.h"

namespace ki::remote {

// What a streamed upload holds of its object at once.
inline constexpr size_t kPipeBytes = 4 << 20;

// A stored object as a BlobSource, for an upload that must not hold it
// whole. Store::ReadStream hands out pieces rather than being asked for
// them, while curl asks, so ReadStream runs on a thread of its own and
// fills a ring of kPipeBytes that Read drains. The object's last byte is
// handed out only after ReadStream has checked the content hash: an
// upload of a damaged object fails before its request completes, instead
// of sending bytes that do not hash to the digest announced.
class StoreSource final : public BlobSource {
 public:
  StoreSource(Store& store, const Digest& d, uint64_t size) : store_(store), digest_(d), size_(size), ring_(kPipeBytes) {}
  ~StoreSource() override { Stop(); }
  StoreSource(const StoreSource&) = delete;
  StoreSource& operator=(const StoreSource&) = delete;

  Status Rewind() override;
  Result<size_t> Read(char* buf, size_t n) override;

 private:
  void Produce();
  // Ends the reading thread (if any) and empties the ring.
  void Stop();

  Store& store_;
  const Digest digest_;
  const uint64_t size_;
  std::thread reader_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<char> ring_;
  size_t head_ = 0, fill_ = 0;
  uint64_t delivered_ = 0;
  bool cancel_ = false, done_ = false;
  Status result_;
};

// A streamed download's scratch file under objects/incoming (the folder
// Batch::PutBlobStream spools to, which audit lists and --reindex clears
// of what a killed process left). Written through an AtomicFile: until
// Commit it is a temporary that goes away with this object, a retried
// download starts a new one, and the committed file is removed on the way
// out too, so a failed or finished download leaves nothing behind.
class ScratchDownload final : public BlobSink {
 public:
  ScratchDownload(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~ScratchDownload() override {
    file_.reset();
    if (committed_) (void)env_->RemoveFile(path_);  // best effort: audit notes leftovers
  }
  ScratchDownload(const ScratchDownload&) = delete;
  ScratchDownload& operator=(const ScratchDownload&) = delete;

  Status Restart() override {
    file_.reset();
    KI_ASSIGN_OR_RETURN(file_, env_->NewAtomicFile(path_));
    return Status::OK();
  }
  Status Append(std::string_view b) override {
    if (!file_) return Status::IOError("internal error: " + path_ + " written before Restart");
    return file_->Append(b);
  }
  // The complete download, under its scratch name. Not fsynced: nothing
  // reads it after a crash (the stored copy is synced by its batch).
  Result<std::string> Commit() {
    if (!file_) return Status::IOError("internal error: " + path_ + " committed before Restart");
    KI_RETURN_IF_ERROR(file_->Commit(Durability::kNone));
    committed_ = true;
    return path_;
  }

 private:
  Env* env_;
  std::string path_;
  std::unique_ptr<AtomicFile> file_;
  bool committed_ = false;
};

// Removes the scratch files (ScratchPath's) that pulls killed before they
// could clean up left in `incoming`: those whose process is gone. A kill
// -9 (or a kill by `timeout`) skips every destructor, so the next pull
// that streams clears what the dead one left, as audit --reindex would.
// A file of a live process, this one or another pull running beside it,
// is left alone; so is anything not named <pid>-pull-<n>. Best effort.
void RemoveStaleScratch(Env* env, const std::string& incoming);

// A scratch name unique among the processes writing to the store, not a
// hex digest (so audit reads it as a leftover, never as an object).
std::string ScratchPath(const Store& store);

}  // namespace ki::remote
