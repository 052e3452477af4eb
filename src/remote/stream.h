// Blob bytes that are not held whole: where an upload reads them from and
// where a download puts them (target.h's PutBlobFrom / GetBlobTo, and the
// HTTP client's request and response bodies).
//
// Both can start over: a request that is retried (a 5xx, a dropped
// connection, a 401 answered, a redirect) sends or receives the whole blob
// again, so the HTTP client calls Rewind / Restart before each attempt.
// Neither is thread-safe; each belongs to the one transfer using it.
//
// A stored object is uploaded through the store's own blob reader
// (StoredBlob) and a download lands in its blob writer (WriterSink): the
// store keeps its scratch files and checks its bytes (ki/blob_stream.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ki/blob_stream.h"
#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::remote {

class BlobSource {
 public:
  virtual ~BlobSource() = default;
  // Back to the first byte (called before every attempt, the first too).
  virtual Status Rewind() = 0;
  // Up to n bytes into buf; 0 at the end. A source that checks what it
  // reads (the store re-hashes) returns an error instead of its last bytes
  // when the check fails, so a damaged object never completes an upload.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

class BlobSink {
 public:
  virtual ~BlobSink() = default;
  // Drops what was appended so far (called before every attempt).
  virtual Status Restart() = 0;
  virtual Status Append(std::string_view bytes) = 0;
};

// A stored object as a BlobSource: each attempt opens a new reader. The
// reader re-hashes as it goes and withholds the last byte until the hash
// agrees, so an upload of a damaged object fails before its request
// completes, instead of sending bytes that do not hash to the digest
// announced.
class StoredBlob final : public BlobSource {
 public:
  StoredBlob(Store& store, const Digest& d) : store_(store), digest_(d) {}
  Status Rewind() override {
    reader_.reset();
    KI_ASSIGN_OR_RETURN(reader_, OpenBlobReader(store_, digest_));
    return Status::OK();
  }
  Result<size_t> Read(char* buf, size_t n) override {
    if (!reader_) return Status::IOError("internal error: " + digest_.str() + " read before Rewind");
    return reader_->Read(buf, n);
  }

 private:
  Store& store_;
  const Digest digest_;
  std::unique_ptr<BlobReader> reader_;
};

// A download into a store's blob writer.
class WriterSink final : public BlobSink {
 public:
  explicit WriterSink(BlobWriter& w) : w_(w) {}
  Status Restart() override { return w_.Restart(); }
  Status Append(std::string_view b) override { return w_.Append(b); }

 private:
  BlobWriter& w_;
};

// A sink in front of another that counts and hashes what passes, so that a
// Conn can check a streamed download as GetBlob checks a held one.
class CheckedSink final : public BlobSink {
 public:
  explicit CheckedSink(BlobSink& out) : out_(out) {}
  Status Restart() override {
    (void)hash_.Finish();  // resets the hasher
    bytes_ = 0;
    return out_.Restart();
  }
  Status Append(std::string_view b) override {
    bytes_ += b.size();
    hash_.Update(b);
    return out_.Append(b);
  }
  // Corruption unless exactly `size` bytes hashing to `d` went through.
  // `what` names the blob and where it came from in the message.
  Status Check(const Digest& d, uint64_t size, const std::string& what) {
    if (bytes_ != size) {
      return Status::Corruption(what + ": received " + std::to_string(bytes_) + " bytes, the manifest announces " +
                                std::to_string(size));
    }
    Digest got = hash_.Finish();
    if (got != d) return Status::Corruption(what + ": received bytes that hash to " + got.str());
    return Status::OK();
  }

 private:
  BlobSink& out_;
  Sha256 hash_;
  uint64_t bytes_ = 0;
};

}  // namespace ki::remote
