#include "ki/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

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

// The SHA-256 implementation, fetched once. OpenSSL 3 otherwise looks the
// algorithm up (and loads its configuration file) on first use of each
// call; ki needs no configuration: only the default provider's SHA-256.
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched ? fetched : EVP_sha256();
  }();
  return md;
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

std::string Digest::hex() const {
  std::string out(64, '0');
  for (size_t i = 0; i < 32; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return out;
}

std::string Digest::str() const { return std::string(kPrefix) + hex(); }

Digest Digest::FromRaw(std::string_view raw32) {
  Digest d;
  std::memcpy(d.bytes.data(), raw32.data(), std::min<size_t>(raw32.size(), 32));
  return d;
}

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  // Allocation failure of a few hundred bytes leaves nothing sensible to do.
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view data) {
  EVP_DigestUpdate(ctx_->md, data.data(), data.size());
}

Digest Sha256::Finish() {
  Digest d;
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, d.bytes.data(), &len);
  EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr);
  return d;
}

Digest Sha256Of(std::string_view data) {
  // One-shot EVP_Digest avoids a context allocation per call (hot in bulk add).
  Digest d;
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), d.bytes.data(), &len, Sha256Md(), nullptr);
  return d;
}

}  // namespace ki
