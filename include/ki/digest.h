// Digest: the identity of every ki object, `sha256:` + 64 lowercase hex.
//
// Hashing goes through OpenSSL's EVP SHA-256, which uses the CPU's SHA
// extensions where present (several times faster than portable code).
// Thread-safety: Digest is a value; a Sha256 hasher belongs to one thread.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ki/status.h"

namespace ki {

struct Digest {
  std::array<uint8_t, 32> bytes{};

  // Parses exactly `sha256:` + 64 lowercase hex digits.
  static Result<Digest> Parse(std::string_view text);
  static bool IsValid(std::string_view text);
  std::string hex() const;    // 64 lowercase hex digits
  std::string str() const;    // "sha256:" + hex()
  std::string_view raw() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  static Digest FromRaw(std::string_view raw32);

  auto operator<=>(const Digest&) const = default;
  bool operator==(const Digest&) const = default;
};

// A hex prefix of a digest, as users type them ("7d44d2", "sha256:7d44d").
// Matches raw 32-byte digests (LMDB keys); an odd number of digits
// constrains the high nibble of the next byte.
class DigestPrefix {
 public:
  // nullopt unless `text` is 1..64 hex digits, optionally after "sha256:".
  static std::optional<DigestPrefix> Parse(std::string_view text);
  size_t digits() const { return digits_; }
  bool had_scheme() const { return had_scheme_; }
  // The whole bytes of the prefix: where a sorted-key scan starts.
  const std::string& key() const { return key_; }
  bool Matches(std::string_view raw32) const;

 private:
  std::string key_;
  size_t digits_ = 0;
  int last_nibble_ = -1;  // the odd trailing digit, or -1
  bool had_scheme_ = false;
};

// Incremental SHA-256 (OpenSSL's SHA256_CTX behind a pointer, so this header names no OpenSSL type).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  Digest Finish();  // the hasher may be reused after Finish

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

Digest Sha256Of(std::string_view data);

// Lowercase hex of any bytes (a digest's own form; index keys and annotation
// values shown as text).
std::string HexEncode(std::string_view raw);

}  // namespace ki

template <>
struct std::hash<ki::Digest> {
  size_t operator()(const ki::Digest& d) const noexcept {
    size_t h;
    static_assert(sizeof(h) <= 32);
    __builtin_memcpy(&h, d.bytes.data(), sizeof(h));
    return h;
  }
};
