// Reading an export: plain JSON lines, or a zstd stream of them.
#include <sys/mman.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "ki/catalog.h"
#include "ki/env.h"

namespace ki::catalog {

namespace {

// An export far larger than KernelIndex's (49 MB decompressed) is refused
// rather than exhausting memory.
constexpr uint64_t kMaxExportBytes = 4ull << 30;

// A frame's declared content size is only a claim (zstd.h's note on
// ZSTD_getFrameContentSize): a 17-byte frame may declare 4 GiB, and
// allocating that up front zero-filled 4 GiB before the decoder found the
// frame corrupt. The declared size is used for the one-allocation path only
// up to this many times the compressed input, far above what real JSON lines
// reach (the 49 MB KernelIndex export compresses to a few MB); past it the
// stream is decoded with a buffer that grows with the bytes produced.
constexpr uint64_t kMaxTrustedRatio = 256;

// The longest line an export may hold: a row is parsed with this limit
// (ImportKernelIndex), so a longer line could only fail later, after the
// reader had held all of it (a 134 KB zstd stream of 4 GiB of NULs without
// a newline). The longest line of KernelIndex's export is under 10 KB.
constexpr uint64_t kMaxLineBytes = 64ull << 20;

// Counts lines as bytes arrive and stops at the first one over the limit,
// so a stream is refused after kMaxLineBytes of a line, not at its end.
class LineLimit {
 public:
  explicit LineLimit(const std::string& path) : path_(path) {}
  Status Feed(std::string_view bytes) {
    while (!bytes.empty()) {
      const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
      size_t seg = nl ? static_cast<const char*>(nl) - bytes.data() : bytes.size();
      len_ += seg;
      if (len_ > kMaxLineBytes)
        return Status::InvalidInput(path_ + ":" + std::to_string(line_) + ": line longer than " +
                                    std::to_string(kMaxLineBytes) + " bytes (64 MiB, the limit on an export line)");
      if (!nl) break;
      ++line_;
      len_ = 0;
      bytes.remove_prefix(seg + 1);
    }
    return Status::OK();
  }

 private:
  const std::string& path_;
  uint64_t line_ = 1, len_ = 0;
};

struct DStreamDeleter {
  void operator()(ZSTD_DStream* z) const { ZSTD_freeDStream(z); }
};

bool IsZstdMagic(std::string_view b) { return b.substr(0, 4) == std::string_view("\x28\xB5\x2F\xFD", 4); }

// A large buffer is filled once: with transparent huge pages it costs a few
// dozen page faults instead of one per 4 KiB (where the system lets a
// process ask for them; a hint, so failure is ignored).
void AdviseHugePages(char* p, size_t n) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = 2u << 20;
  if (n < 4 * kHuge) return;
  uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

// The decompressed size of a whole stream, when every frame declares its
// own and the stream is complete (otherwise the streaming decoder decides).
std::optional<uint64_t> DeclaredSize(std::string_view in) {
  uint64_t total = 0;
  while (!in.empty()) {
    size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
    if (ZSTD_isError(frame) || frame > in.size()) return std::nullopt;
    unsigned long long n = ZSTD_getFrameContentSize(in.data(), in.size());
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN) return std::nullopt;
    total += n;
    if (total > kMaxExportBytes) return total;
    in.remove_prefix(frame);
  }
  return total;
}

}  // namespace

Result<std::string> ReadExport(const std::string& path, Env* env) {
  std::unique_ptr<SequentialFile> in;
  if (path == "-") {
    in = env->StandardInput();
  } else {
    auto f = env->NewSequentialFile(path);
    if (!f.ok()) {
      if (f.status().IsNotFound()) return Status::NotFound(path + ": no such file");
      return f.status();
    }
    in = std::move(f).value();
  }
  // The whole input first (compressed it is a few MB): a plain export is
  // then returned as it is, and a compressed one is decompressed in one call
  // into a buffer of its declared size (no regrowing, no copying, no
  // zero-filled slack: page faults dominate on a 49 MB buffer).
  // Used in place, not moved out of the Result: moving it out made GCC 12
  // (-O2) warn that the moved-to string may be read uninitialised.
  Result<std::string> read = ReadAll(*in, path, kMaxExportBytes);
  if (!read.ok()) return read.status();
  std::string& input = *read;
  LineLimit lines(path);
  if (!IsZstdMagic(input)) {
    KI_RETURN_IF_ERROR(lines.Feed(input));
    return std::move(input);
  }

  // Every frame declares its size (zstd's CLI writes it): one allocation,
  // when the declared size is believable for an input this small.
  std::optional<uint64_t> declared = DeclaredSize(input);
  if (declared && *declared <= uint64_t(input.size()) * kMaxTrustedRatio) {
    if (*declared > kMaxExportBytes) return Status::InvalidInput(path + ": export larger than 4 GiB");
    std::string out;
    out.reserve(size_t(*declared));
    AdviseHugePages(out.data(), out.capacity());
    out.resize(size_t(*declared));
    size_t n = ZSTD_decompress(out.data(), out.size(), input.data(), input.size());
    if (ZSTD_isError(n)) {
      return Status::InvalidInput(path + ": not a valid zstd stream (" + ZSTD_getErrorName(n) + ")");
    }
    if (n != out.size()) return Status::InvalidInput(path + ": truncated zstd stream");
    KI_RETURN_IF_ERROR(lines.Feed(out));
    return out;
  }

  // Sizes not declared, not believable, or a truncated stream: decode as a
  // stream, the buffer growing with the output (a frame whose content does
  // not match its declared size is found corrupt by the decoder).
  std::unique_ptr<ZSTD_DStream, DStreamDeleter> z(ZSTD_createDStream());
  if (!z) return Status::IOError("zstd: out of memory");
  std::string out;
  out.reserve(input.size() * 8);
  ZSTD_inBuffer zin{input.data(), input.size(), 0};
  size_t last_ret = 0;
  for (;;) {
    if (out.capacity() - out.size() < (1 << 20)) out.reserve(out.capacity() * 2 + (1 << 20));
    size_t old = out.size();
    size_t room = out.capacity() - old;
    out.resize(old + room);
    ZSTD_outBuffer zout{out.data() + old, room, 0};
    size_t ret = ZSTD_decompressStream(z.get(), &zout, &zin);
    out.resize(old + zout.pos);
    if (ZSTD_isError(ret)) {
      return Status::InvalidInput(path + ": not a valid zstd stream (" + ZSTD_getErrorName(ret) + ")");
    }
    if (zout.pos > 0 || zin.pos == zin.size) last_ret = ret;
    KI_RETURN_IF_ERROR(lines.Feed(std::string_view(out).substr(old)));
    if (out.size() > kMaxExportBytes) return Status::InvalidInput(path + ": export larger than 4 GiB");
    // Done when the input is consumed and the decoder holds nothing back.
    if (zin.pos == zin.size && zout.pos < room) break;
  }
  if (last_ret != 0) return Status::InvalidInput(path + ": truncated zstd stream");
  return out;
}

}  // namespace ki::catalog
