// Reading an export: plain JSON lines, or a zstd stream of them.
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <memory>

#include "ki/catalog.h"
#include "ki/env.h"

namespace ki::catalog {

namespace {

// An export far larger than KernelIndex's (49 MB decompressed) is refused
// rather than exhausting memory.
constexpr uint64_t kMaxExportBytes = 4ull << 30;

struct DStreamDeleter {
  void operator()(ZSTD_DStream* z) const { ZSTD_freeDStream(z); }
};

struct Fd {
  int fd = -1;
  bool owned = false;
  ~Fd() {
    if (owned && fd >= 0) ::close(fd);
  }
};

bool IsZstdMagic(std::string_view b) {
  return b.size() >= 4 && uint8_t(b[0]) == 0x28 && uint8_t(b[1]) == 0xB5 && uint8_t(b[2]) == 0x2F &&
         uint8_t(b[3]) == 0xFD;
}

}  // namespace

Result<std::string> ReadExport(const std::string& path) {
  Fd in;
  if (path == "-") {
    in.fd = STDIN_FILENO;
  } else {
    in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in.fd < 0) {
      int err = errno;
      if (err == ENOENT) return Status::NotFound(path + ": no such file");
      return ErrnoStatus("open", path, err);
    }
    in.owned = true;
  }
  std::string out;
  std::unique_ptr<ZSTD_DStream, DStreamDeleter> z;
  std::string buf(1 << 17, '\0');
  std::string pending;  // input bytes not yet decided (first 4 bytes)
  bool decided = false, compressed = false;
  size_t last_ret = 0;
  for (;;) {
    ssize_t n = ::read(in.fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path, errno);
    }
    std::string_view chunk(buf.data(), size_t(n));
    if (!decided) {
      pending.append(chunk);
      if (pending.size() < 4 && n > 0) continue;
      decided = true;
      compressed = IsZstdMagic(pending);
      chunk = pending;
      if (compressed) {
        z.reset(ZSTD_createDStream());
        if (!z) return Status::IOError("zstd: out of memory");
      }
    }
    if (n == 0 && chunk.empty()) break;
    if (!compressed) {
      out.append(chunk);
    } else {
      ZSTD_inBuffer zin{chunk.data(), chunk.size(), 0};
      while (zin.pos < zin.size) {
        size_t old = out.size();
        out.resize(old + (1 << 20));
        ZSTD_outBuffer zout{out.data() + old, 1 << 20, 0};
        size_t ret = ZSTD_decompressStream(z.get(), &zout, &zin);
        out.resize(old + zout.pos);
        if (ZSTD_isError(ret)) {
          return Status::InvalidInput(path + ": not a valid zstd stream (" + ZSTD_getErrorName(ret) + ")");
        }
        last_ret = ret;
      }
      // Flush what the decoder still holds for this input.
      for (;;) {
        size_t old = out.size();
        out.resize(old + (1 << 20));
        ZSTD_outBuffer zout{out.data() + old, 1 << 20, 0};
        size_t ret = ZSTD_decompressStream(z.get(), &zout, &zin);
        out.resize(old + zout.pos);
        if (ZSTD_isError(ret)) {
          return Status::InvalidInput(path + ": not a valid zstd stream (" + ZSTD_getErrorName(ret) + ")");
        }
        if (zout.pos > 0) last_ret = ret;  // a call that produced nothing says nothing of the frame
        if (zout.pos < (1 << 20)) break;
      }
    }
    if (out.size() > kMaxExportBytes) return Status::InvalidInput(path + ": export larger than 4 GiB");
    if (pending.size()) pending.clear();
    if (n == 0) break;
  }
  if (compressed && last_ret != 0) return Status::InvalidInput(path + ": truncated zstd stream");
  return out;
}

}  // namespace ki::catalog
