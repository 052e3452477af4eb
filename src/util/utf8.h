// UTF-8 text cut to a length without splitting a character. Internal to
// kicore (src/); header-only, pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ki {

// The longest prefix of `s`, at most `max_bytes` long, that ends with a
// whole character: a character the cut (or the end of `s`, when `s` is
// itself a cut) goes through is dropped. Bytes that are not UTF-8 are kept
// as they are.
inline std::string_view Utf8WholePrefix(std::string_view s, size_t max_bytes) {
  const size_t end = std::min(max_bytes, s.size());
  size_t start = end;  // back over continuation bytes (10xxxxxx) to the last character's lead
  while (start > 0 && (static_cast<uint8_t>(s[start - 1]) & 0xC0) == 0x80) --start;
  if (start == 0) return s.substr(0, end);
  const uint8_t lead = static_cast<uint8_t>(s[start - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return s.substr(0, end - (start - 1) < need ? start - 1 : end);
}

}  // namespace ki
