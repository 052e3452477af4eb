// Blob readers and writers (ki/blob_stream.h).
#include "ki/blob_stream.h"

#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include "odb/store_impl.h"
#include "util/process.h"

namespace ki {
namespace odb {
namespace {

// An object kept in LMDB: small, so read and checked whole at open.
class HeldReader final : public BlobReader {
 public:
  explicit HeldReader(std::string bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<size_t> Read(char* buf, size_t n) override {
    const size_t k = std::min(n, bytes_.size() - pos_);
    std::memcpy(buf, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string bytes_;
  size_t pos_ = 0;
};

// A loose object, decoded as it is read; its last byte waits for the hash.
class LooseReader final : public BlobReader {
 public:
  LooseReader(ObjectInfo info, std::unique_ptr<SequentialFile> file, const FrameHeader& h,
              std::shared_ptr<const Dictionary> dict)
      : info_(std::move(info)),
        file_(std::move(file)),
        dict_(std::move(dict)),
        decoder_(*file_, h, info_.digest.str(), dict_.get()) {}

  uint64_t size() const override { return info_.size; }

  Result<size_t> Read(char* buf, size_t n) override {
    KI_RETURN_IF_ERROR(failed_);
    Status st = Fill();
    if (!st.ok()) {
      failed_ = st;
      return st;
    }
    const size_t k = std::min(n, pending_.size());
    std::memcpy(buf, pending_.data(), k);
    pending_.remove_prefix(k);
    delivered_ += k;
    return k;
  }

 private:
  // Makes pending_ hold the next bytes (none at the end). Before the
  // object's last byte is pending, the decoder has passed its end and the
  // content hash has been checked.
  Status Fill() {
    while (pending_.empty() && !verified_) {
      KI_ASSIGN_OR_RETURN(std::string_view piece, decoder_.Next());
      if (piece.empty()) return Verify();
      pending_ = piece;
    }
    if (!verified_ && delivered_ + pending_.size() == info_.size) {
      // The last byte of the object is pending: copied out of the decoder's
      // buffer (the next call may reuse it), and released only after the
      // decoder has reached the end of the frame and the hash agrees.
      tail_.assign(pending_.data(), pending_.size());
      KI_ASSIGN_OR_RETURN(std::string_view more, decoder_.Next());
      if (!more.empty()) {
        return Status::Corruption(info_.digest.str() + ": holds more than its " + std::to_string(info_.size) +
                                  " bytes");
      }
      KI_RETURN_IF_ERROR(Verify());
      pending_ = tail_;
    }
    return Status::OK();
  }

  Status Verify() {
    const uint64_t total = delivered_ + pending_.size();
    if (total != info_.size) {
      return Status::Corruption(info_.digest.str() + ": the store gave " + std::to_string(total) +
                                " bytes, its index says " + std::to_string(info_.size));
    }
    if (decoder_.digest() != info_.digest) {
      return Status::Corruption(info_.digest.str() + ": content hashes to " + decoder_.digest().str());
    }
    verified_ = true;
    return Status::OK();
  }

  const ObjectInfo info_;
  std::unique_ptr<SequentialFile> file_;
  std::shared_ptr<const Dictionary> dict_;
  FrameDecoder decoder_;
  std::string_view pending_;  // decoded, not yet handed out
  std::string tail_;          // the object's last piece, held for the hash check
  uint64_t delivered_ = 0;
  bool verified_ = false;
  Status failed_;
};

// The scratch files of a streamed write are named `<pid>-...` (ScratchName):
// those of a process that is gone are removed; those of a live one (this
// process, or another writer beside it) and anything else are left alone.
// A kill -9 skips every destructor, so the next writer clears what the
// dead one left, as audit --reindex would. Best effort.
void RemoveStaleScratch(Env* env, const std::string& incoming) {
  auto names = env->ListDir(incoming);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    const size_t dash = name.find('-');
    if (dash == 0 || dash == std::string::npos || name.find_first_not_of("0123456789") != dash) continue;
    long pid = std::strtol(name.substr(0, dash).c_str(), nullptr, 10);
    if (!ProcessIsGone(pid)) continue;  // alive, or not ours to ask
    (void)env->RemoveFile(incoming + "/" + name);
  }
}

// Once per store directory and process: before its first writer.
void SweepOnce(Env* env, const std::string& store_dir) {
  static std::mutex mu;
  static std::set<std::string> swept;
  std::lock_guard<std::mutex> l(mu);
  if (!swept.insert(store_dir).second) return;
  RemoveStaleScratch(env, IncomingDir(store_dir));
}

// Appends go to an AtomicFile: until Finish commits it, it is a temporary
// that goes away with the writer (or with a Restart); the committed file is
// removed once stored, and by the destructor on every other way out.
class ScratchWriter final : public BlobWriter {
 public:
  ScratchWriter(Env* env, std::string path, std::string where)
      : env_(env), path_(std::move(path)), where_(std::move(where)) {}
  ~ScratchWriter() override {
    file_.reset();
    if (committed_) (void)env_->RemoveFile(path_);  // best effort: audit notes leftovers
  }
  ScratchWriter(const ScratchWriter&) = delete;
  ScratchWriter& operator=(const ScratchWriter&) = delete;

  Status Restart() override {
    if (finished_) return Status::IOError("internal error: " + where_ + ": written after it was stored");
    file_.reset();
    size_ = 0;
    KI_ASSIGN_OR_RETURN(file_, env_->NewAtomicFile(path_));
    return Status::OK();
  }
  Status Append(std::string_view b) override {
    if (!file_) KI_RETURN_IF_ERROR(Restart());
    KI_RETURN_IF_ERROR(file_->Append(b));
    size_ += b.size();
    return Status::OK();
  }
  uint64_t size() const override { return size_; }

  Result<PutResult> Finish(Batch& batch, std::string_view media_type, const std::optional<Digest>& expected) override {
    if (finished_) return Status::IOError("internal error: " + where_ + " stored twice");
    if (!file_) KI_RETURN_IF_ERROR(Restart());
    finished_ = true;
    // Not fsynced: nothing reads it after a crash (the stored copy is
    // synced by its batch).
    KI_RETURN_IF_ERROR(file_->Commit(Durability::kNone));
    file_.reset();
    committed_ = true;
    Result<PutResult> r = [&]() -> Result<PutResult> {
      KI_ASSIGN_OR_RETURN(auto in, env_->NewSequentialFile(path_));
      return batch.PutBlobStream(*in, media_type, where_, expected);
    }();
    // The batch has its own copy (a staged frame, or the bytes in LMDB).
    (void)env_->RemoveFile(path_);
    committed_ = false;
    return r;
  }

 private:
  Env* env_;
  const std::string path_;
  const std::string where_;
  std::unique_ptr<AtomicFile> file_;
  uint64_t size_ = 0;
  bool committed_ = false, finished_ = false;
};

LmdbStore* Lmdb(Store& store) { return dynamic_cast<LmdbStore*>(&store); }

}  // namespace
}  // namespace odb

Result<std::unique_ptr<BlobReader>> OpenBlobReader(Store& store, const Digest& d) {
  odb::LmdbStore* s = odb::Lmdb(store);
  if (!s) return Status::IOError("internal error: blob readers need a store opened by Store::Open");
  KI_ASSIGN_OR_RETURN(auto info, s->Stat(d));
  if (!info) return Status::NotFound(d.str() + " is not in the store");
  if (info->location != Location::kLoose) {
    KI_ASSIGN_OR_RETURN(std::string bytes, s->Read(d));  // re-hashed whole
    return std::unique_ptr<BlobReader>(std::make_unique<odb::HeldReader>(std::move(bytes)));
  }
  KI_ASSIGN_OR_RETURN(odb::LmdbStore::LooseFrame f, s->OpenLooseFrame(*info));
  return std::unique_ptr<BlobReader>(
      std::make_unique<odb::LooseReader>(*info, std::move(f.file), f.header, std::move(f.dict)));
}

Result<std::unique_ptr<BlobWriter>> OpenBlobWriter(Store& store, const std::string& where) {
  odb::LmdbStore* s = odb::Lmdb(store);
  if (!s) return Status::IOError("internal error: blob writers need a store opened by Store::Open");
  Env* env = s->env();
  const std::string incoming = odb::IncomingDir(s->path());
  KI_RETURN_IF_ERROR(env->CreateDirs(incoming));
  odb::SweepOnce(env, s->path());
  return std::unique_ptr<BlobWriter>(
      std::make_unique<odb::ScratchWriter>(env, incoming + "/" + odb::ScratchName() + ".part", where));
}

}  // namespace ki
