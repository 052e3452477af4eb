// StringFile: a SequentialFile over a string, for tests of code that reads
// files front to back (frame streams, streamed puts) without touching disk.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "ki/env.h"

namespace ki::test {

// Looks like a regular file of the string's size, or like a pipe (no size,
// so a reader that would map a file copies it instead: SequentialFile's
// default Map refuses either way). At most `piece` bytes are handed out a
// read, as a pipe returns short reads.
class StringFile final : public SequentialFile {
 public:
  enum class Looks { kFile, kPipe };
  explicit StringFile(std::string data, Looks looks = Looks::kFile, size_t piece = size_t(-1))
      : data_(std::move(data)), regular_(looks == Looks::kFile), piece_(piece) {}
  Result<size_t> Read(char* buf, size_t n) override {
    n = std::min({n, piece_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  Result<FileStat> Stat() override {
    FileStat st;
    st.regular = regular_;
    st.size = regular_ ? data_.size() : 0;
    return st;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
  bool regular_;
  size_t piece_;
};

}  // namespace ki::test
