#include "odb/frame.h"

#include <zstd.h>

#include <cstring>
#include <memory>

namespace ki::odb {
namespace {

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

// zstd contexts are reused per thread: creating one costs more than
// compressing a small manifest.
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> c(ZSTD_createCCtx());
  return c.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> c(ZSTD_createDCtx());
  return c.get();
}

}  // namespace

std::string EncodeFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                        std::string_view raw, int zstd_level) {
  std::string out;
  size_t mt = std::min<size_t>(media_type.size(), 0xffff);
  size_t bound = ZSTD_compressBound(raw.size());
  out.reserve(kFrameHeaderSize + mt + bound);
  out.append(kFrameMagic, 4);
  out.push_back(char(kFrameVersion));
  out.push_back(char(type));
  out.push_back(char(kind));
  out.push_back(0);  // flags, set below
  PutU64(out, raw.size());
  out.push_back(char(mt & 0xff));
  out.push_back(char(mt >> 8));
  out.append(media_type.substr(0, mt));
  size_t header = out.size();
  out.resize(header + bound);
  size_t n = ZSTD_compressCCtx(ThreadCCtx(), out.data() + header, bound, raw.data(), raw.size(),
                               zstd_level);
  if (!ZSTD_isError(n) && n < raw.size()) {
    out.resize(header + n);
    out[7] = 1;  // compressed
  } else {
    // Incompressible (or tiny): keep the bytes as they are.
    out.resize(header);
    out.append(raw);
  }
  return out;
}

Result<FrameHeader> ParseFrameHeader(std::string_view f, const std::string& where) {
  if (f.size() < kFrameHeaderSize || std::memcmp(f.data(), kFrameMagic, 4) != 0) {
    return Status::Corruption(where + ": not a ki object frame (bad magic or short header)");
  }
  if (uint8_t(f[4]) != kFrameVersion) {
    return Status::Corruption(where + ": object frame version " + std::to_string(uint8_t(f[4])) +
                              " is not supported (this ki reads version 1)");
  }
  FrameHeader h;
  uint8_t type = uint8_t(f[5]);
  if (type != uint8_t(ObjectType::kBlob) && type != uint8_t(ObjectType::kManifest)) {
    return Status::Corruption(where + ": unknown object type " + std::to_string(type));
  }
  h.type = ObjectType(type);
  h.kind = uint8_t(f[6]);
  uint8_t flags = uint8_t(f[7]);
  if (flags & ~1u) return Status::Corruption(where + ": unknown frame flags");
  h.compressed = flags & 1;
  h.raw_size = GetU64(f.data() + 8);
  size_t mt = uint8_t(f[16]) | size_t(uint8_t(f[17])) << 8;
  if (kFrameHeaderSize + mt > f.size()) return Status::Corruption(where + ": truncated frame header");
  h.media_type.assign(f.data() + kFrameHeaderSize, mt);
  h.payload_offset = kFrameHeaderSize + mt;
  return h;
}

Result<std::string> DecodeFrame(std::string_view f, const FrameHeader& h, uint64_t max_size,
                                const std::string& where) {
  std::string_view payload = f.substr(h.payload_offset);
  if (h.raw_size > max_size) {
    return Status::Corruption(where + ": frame claims " + std::to_string(h.raw_size) +
                              " bytes, over the limit of " + std::to_string(max_size));
  }
  if (!h.compressed) {
    if (payload.size() != h.raw_size) {
      return Status::Corruption(where + ": frame holds " + std::to_string(payload.size()) +
                                " bytes, header says " + std::to_string(h.raw_size));
    }
    return std::string(payload);
  }
  // The zstd frame's own content size must agree with ours: a header is
  // untrusted until both say the same.
  unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content != h.raw_size) {
    return Status::Corruption(where + ": compressed payload does not match the frame header");
  }
  std::string out(size_t(h.raw_size), '\0');
  size_t n = ZSTD_decompressDCtx(ThreadDCtx(), out.data(), out.size(), payload.data(), payload.size());
  if (ZSTD_isError(n) || n != h.raw_size) {
    return Status::Corruption(where + ": cannot decompress: " +
                              (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output"));
  }
  return out;
}

}  // namespace ki::odb
