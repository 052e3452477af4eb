#include "ki/digest.h"

// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but
// they are the same assembly (SHA-NI where the CPU has it) without EVP's
// algorithm fetch: that fetch builds OpenSSL's whole name map and cipher
// table, about 2 ms of every ki process, more than a `ki show` may spend in
// total. OpenSSL 3.x keeps them; bench/store measures the throughput.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace ki {
namespace {

constexpr std::string_view kPrefix = "sha256:";
constexpr char kHex[] = "0123456789abcdef";

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not canonical: refused
}

}  // namespace

bool Digest::IsValid(std::string_view text) {
  if (text.size() != kPrefix.size() + 64 || text.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : text.substr(kPrefix.size()))
    if (HexVal(c) < 0) return false;
  return true;
}

Result<Digest> Digest::Parse(std::string_view text) {
  if (!IsValid(text)) {
    return Status::InvalidInput("not a digest (expected sha256: and 64 lowercase hex digits): '" +
                                std::string(text.substr(0, 80)) + "'");
  }
  Digest d;
  std::string_view hex = text.substr(kPrefix.size());
  for (size_t i = 0; i < 32; ++i) d.bytes[i] = uint8_t(HexVal(hex[2 * i]) << 4 | HexVal(hex[2 * i + 1]));
  return d;
}

std::optional<DigestPrefix> DigestPrefix::Parse(std::string_view text) {
  DigestPrefix p;
  if (text.substr(0, kPrefix.size()) == kPrefix) {
    text.remove_prefix(kPrefix.size());
    p.had_scheme_ = true;
  }
  if (text.empty() || text.size() > 64) return std::nullopt;
  for (char c : text)
    if (HexVal(char(std::tolower(static_cast<unsigned char>(c)))) < 0) return std::nullopt;
  auto nib = [](char c) { return HexVal(char(std::tolower(static_cast<unsigned char>(c)))); };
  for (size_t i = 0; i + 1 < text.size(); i += 2) p.key_.push_back(char(nib(text[i]) << 4 | nib(text[i + 1])));
  if (text.size() % 2 == 1) p.last_nibble_ = nib(text.back());
  p.digits_ = text.size();
  return p;
}

bool DigestPrefix::Matches(std::string_view raw32) const {
  if (raw32.size() != 32 || raw32.substr(0, key_.size()) != key_) return false;
  return last_nibble_ < 0 || (uint8_t(raw32[key_.size()]) >> 4) == last_nibble_;
}

std::string HexEncode(std::string_view raw) {
  std::string out(2 * raw.size(), '0');
  for (size_t i = 0; i < raw.size(); ++i) {
    out[2 * i] = kHex[static_cast<unsigned char>(raw[i]) >> 4];
    out[2 * i + 1] = kHex[static_cast<unsigned char>(raw[i]) & 15];
  }
  return out;
}

std::string Digest::hex() const { return HexEncode(raw()); }

std::string Digest::str() const { return std::string(kPrefix) + hex(); }

Digest Digest::FromRaw(std::string_view raw32) {
  Digest d;
  std::memcpy(d.bytes.data(), raw32.data(), std::min<size_t>(raw32.size(), 32));
  return d;
}

struct Sha256::Ctx {
  SHA256_CTX sha;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) { SHA256_Init(&ctx_->sha); }

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view data) { SHA256_Update(&ctx_->sha, data.data(), data.size()); }

Digest Sha256::Finish() {
  Digest d;
  SHA256_Final(d.bytes.data(), &ctx_->sha);
  SHA256_Init(&ctx_->sha);
  return d;
}

Digest Sha256Of(std::string_view data) {
  // Not SHA256(): in OpenSSL 3 that one-shot goes through EVP's fetch.
  SHA256_CTX c;
  SHA256_Init(&c);
  SHA256_Update(&c, data.data(), data.size());
  Digest d;
  SHA256_Final(d.bytes.data(), &c);
  return d;
}

}  // namespace ki
