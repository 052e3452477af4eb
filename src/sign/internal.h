// Helpers shared by the files of src/sign/ (not part of the public API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ki/sign.h"

namespace ki::sign_internal {

// Initialises libsodium once; aborts when the system has no random source.
void EnsureSodium();
// Base64 (standard or URL-safe, padded) into caller-owned memory, so a
// secret never passes through a std::string. False when malformed, when
// not every character is consumed, or when it does not fit.
bool DecodeBase64Into(std::string_view text, uint8_t* out, size_t out_cap, size_t* out_len);

}  // namespace ki::sign_internal

namespace ki::sign_internal {
// ParseEnvelope that also says which check failed: "envelope" (JSON shape),
// "encoding" (base64, signature length) or "signatures" (none present).
Result<DsseEnvelope> ParseEnvelopeStaged(std::string_view json, std::string* failed_check);
}  // namespace ki::sign_internal
