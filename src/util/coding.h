// Byte coding of the store's binary records (frame headers, index keys and
// values, catalog tables): little-endian fixed-width integers, LEB128
// varints and length-prefixed text, written onto a std::string and read
// back by a Decoder that never reads past its input (every Get says false
// on a short or malformed input instead). What each record holds is
// docs/format.md's; this is only how numbers and texts are laid down, in
// one place (as leveldb's util/coding.h). Internal to kicore (src/);
// header-only, pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ki::coding {

inline void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}
inline void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}
// The caller has checked that 4 (8) bytes are there.
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}
// Big-endian, for keys whose byte order must be the number's order (LMDB
// compares keys as bytes).
inline void PutBigEndian32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(char((v >> (8 * i)) & 0xff));
}
inline uint32_t DecodeBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

inline void PutDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  PutFixed64(out, bits);
}

// LEB128: 7 bits a byte, low bits first, the high bit set on every byte
// but the last. A u64 takes 1 to 10 bytes; most sizes and counts 1 to 3.
inline void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(char(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out->push_back(char(v));
}
inline size_t VarintLength(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// A varint length, then the bytes.
inline void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->append(s);
}

// Reads a record front to back. Each Get consumes what it read and returns
// true, or returns false (leaving `rest()` unspecified) when the input is
// too short or malformed; a caller checks `done()` at the end so that
// trailing bytes are refused too.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}

  bool done() const { return in_.empty(); }
  std::string_view rest() const { return in_; }

  bool GetByte(uint8_t* b) {
    if (in_.empty()) return false;
    *b = uint8_t(in_.front());
    in_.remove_prefix(1);
    return true;
  }
  bool GetFixed32(uint32_t* v) {
    if (in_.size() < 4) return false;
    *v = DecodeFixed32(in_.data());
    in_.remove_prefix(4);
    return true;
  }
  bool GetFixed64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = DecodeFixed64(in_.data());
    in_.remove_prefix(8);
    return true;
  }
  bool GetDouble(double* v) {
    uint64_t bits;
    if (!GetFixed64(&bits)) return false;
    std::memcpy(v, &bits, 8);
    return true;
  }
  // Refuses more than 10 bytes, and a 10th byte with more than u64's last bit.
  bool GetVarint64(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!GetByte(&b)) return false;
      if (shift == 63 && b > 1) return false;
      x |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = x;
        return true;
      }
    }
    return false;
  }
  bool GetBytes(size_t n, std::string_view* out) {
    if (n > in_.size()) return false;
    *out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool GetLengthPrefixed(std::string_view* out) {
    uint64_t n;
    return GetVarint64(&n) && n <= in_.size() && GetBytes(size_t(n), out);
  }
  bool GetLengthPrefixed(std::string* out) {
    std::string_view s;
    if (!GetLengthPrefixed(&s)) return false;
    out->assign(s);
    return true;
  }

 private:
  std::string_view in_;
};

}  // namespace ki::coding
