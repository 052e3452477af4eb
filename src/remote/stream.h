// Blob bytes that are not held whole: where an upload reads them from and
// where a download puts them (target.h's PutBlobFrom / GetBlobTo, and the
// HTTP client's request and response bodies).
//
// Both can start over: a request that is retried (a 5xx, a dropped
// connection, a 401 answered, a redirect) sends or receives the whole blob
// again, so the HTTP client calls Rewind / Restart before each attempt.
// Neither is thread-safe; each belongs to the one transfer using it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ki/digest.h"
#include "ki/status.h"

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
