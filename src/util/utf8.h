// UTF-8 text: validity, and cuts to a length without splitting a character.
// Internal to kicore (src/); header-only, pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
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

// The offset of the first byte of `s` that is not part of well-formed UTF-8
// (RFC 3629: no overlong forms, no surrogates U+D800..U+DFFF, nothing past
// U+10FFFF), or s.size() when all of it is. What JSON's parser accepts.
inline size_t Utf8InvalidAt(std::string_view s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // the bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;  // no surrogates
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return i;
    if (i + len > n) return i;
    const uint8_t c1 = static_cast<uint8_t>(s[i + 1]);
    if (c1 < lo || c1 > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return i;
    i += len;
  }
  return n;
}

inline bool IsValidUtf8(std::string_view s) { return Utf8InvalidAt(s) == s.size(); }

// `s` as text safe to put in a message that is dumped as JSON: each byte
// that is not part of well-formed UTF-8 becomes `\xNN`, and past
// `max_bytes` the text is cut at a whole character and ends in "...".
inline std::string Utf8Printable(std::string_view s, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const std::string_view rest = s.substr(i);
    const size_t good = Utf8InvalidAt(rest);
    if (good > 0) {
      const std::string_view keep = Utf8WholePrefix(rest.substr(0, good), max_bytes - out.size());
      out.append(keep);
      i += keep.size();
      if (keep.size() < good) {
        out += "...";
        break;
      }
      continue;
    }
    const uint8_t b = static_cast<uint8_t>(rest[0]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
    ++i;
  }
  return out;
}

}  // namespace ki
