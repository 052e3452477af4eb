// Builders for packs written by hand (tests of hostile packs): a ustar entry
// as tar(1) writes one, and a zstd frame. Header-only, as fake_registry.h.
#pragma once

#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace ki::test {

// One ustar entry: header (name, mode 0644, owner 0, size, mtime 0, type,
// magic "ustar\0" "00", checksum) + content + zero padding to 512 bytes.
inline std::string TarEntry(const std::string& name, const std::string& bytes, char type = '0') {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  auto octal = [&](size_t off, size_t width, unsigned long long v) {
    std::snprintf(h.data() + off, width, "%0*llo", int(width - 1), v);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, bytes.size());
  octal(136, 12, 0);
  h[156] = type;
  std::memcpy(h.data() + 257, "ustar\0" "00", 8);
  octal(329, 8, 0);
  octal(337, 8, 0);
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h.data() + 148, 7, "%06o", sum);
  h[155] = ' ';
  std::string out = h + bytes;
  out.append((512 - bytes.size() % 512) % 512, '\0');
  return out;
}

inline std::string ZstdFrame(const std::string& raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

}  // namespace ki::test
