// Packs (pack.h): a ustar archive of objects named by digest, in one zstd frame.
#include "remote/pack.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace ki::remote {

namespace {

// ustar header fields (POSIX pax(1), "ustar Interchange Format"): offset, width.
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kMode = 100, kUid = 108, kGid = 116, kSize = 124, kMtime = 136, kChksum = 148;
constexpr size_t kType = 156, kMagic = 257, kVersion = 263, kDevMajor = 329, kDevMinor = 337;
constexpr size_t kPrefix = 345, kPrefixLen = 155;
constexpr size_t kBlock = 512;
constexpr std::string_view kNamePrefix = "sha256/";

// `width - 1` octal digits, zero-padded, then NUL.
void PutOctal(char* field, size_t width, uint64_t v) {
  for (size_t i = width - 1; i-- > 0; v >>= 3) field[i] = char('0' + (v & 7));
  field[width - 1] = '\0';
}

uint64_t HeaderSum(const unsigned char* h) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += (i >= kChksum && i < kChksum + 8) ? ' ' : h[i];
  return sum;
}

// Octal digits, optionally after spaces, ended by NUL or space (or the end
// of the field). nullopt for anything else (base-256 sizes included).
std::optional<uint64_t> ParseOctal(const unsigned char* field, size_t width) {
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) {
    if (v >> 60) return std::nullopt;
    v = v << 3 | uint64_t(field[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  for (; i < width; ++i)
    if (field[i] != '\0' && field[i] != ' ') return std::nullopt;
  return v;
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '\0'; });
}

struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// The archive, fed as it is decompressed: headers, contents, padding, the
// end-of-archive zero blocks. Holds one entry's bytes at a time.
class TarReader {
 public:
  TarReader(const std::function<std::optional<uint64_t>(const Digest&)>& expected,
            const std::function<Status(const Digest&, std::string&&)>& entry)
      : expected_(expected), entry_(entry) {}

  Status Feed(std::string_view data) {
    while (!data.empty()) {
      size_t take = 0;
      switch (state_) {
        case State::kHeader:
          take = std::min(kBlock - header_.size(), data.size());
          header_.append(data.substr(0, take));
          if (header_.size() == kBlock) {
            KI_RETURN_IF_ERROR(Header());
            header_.clear();
          }
          break;
        case State::kContent:
          take = size_t(std::min<uint64_t>(remaining_, data.size()));
          body_.append(data.substr(0, take));
          remaining_ -= take;
          if (remaining_ == 0) KI_RETURN_IF_ERROR(Deliver());
          break;
        case State::kPadding:
          take = size_t(std::min<uint64_t>(remaining_, data.size()));
          if (!AllZero(data.substr(0, take))) return Bad("padding after entry " + std::to_string(n_) + " is not zero");
          remaining_ -= take;
          if (remaining_ == 0) state_ = State::kHeader;
          break;
        case State::kEnd:
          take = data.size();
          if (!AllZero(data)) return Bad("data after the end-of-archive block");
          end_zeros_ += take;
          break;
      }
      data.remove_prefix(take);
    }
    return Status::OK();
  }

  Status End() const {
    if (state_ != State::kEnd || end_zeros_ < kBlock) {
      return Status::Corruption("pack: the archive is truncated after " + std::to_string(n_) +
                                " entries (no end-of-archive marker)");
    }
    return Status::OK();
  }

  uint64_t entries() const { return n_; }

 private:
  enum class State { kHeader, kContent, kPadding, kEnd };

  Status Bad(const std::string& what) const { return Status::InvalidInput("pack: " + what); }

  Status Header() {
    const auto* h = reinterpret_cast<const unsigned char*>(header_.data());
    if (AllZero(header_)) {
      state_ = State::kEnd;
      return Status::OK();
    }
    std::string where = "entry " + std::to_string(n_ + 1);
    auto sum = ParseOctal(h + kChksum, 8);
    if (!sum || *sum != HeaderSum(h)) return Bad(where + ": header checksum does not match");
    if (std::memcmp(h + kMagic, "ustar\0" "00", 8) != 0) return Bad(where + ": not a POSIX ustar header");
    if (h[kType] != '0' && h[kType] != '\0') {
      return Bad(where + ": not a regular file (type '" + std::string(1, char(h[kType])) + "')");
    }
    std::string_view name(header_.data() + kName, kNameLen);
    name = name.substr(0, name.find('\0'));
    std::string shown;
    for (char c : name.substr(0, 100)) shown.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    if (h[kPrefix] != '\0' || !AllZero(std::string_view(header_.data() + kName + name.size(), kNameLen - name.size())) ||
        name.substr(0, kNamePrefix.size()) != kNamePrefix) {
      return Bad(where + ": name '" + shown + "' is not sha256/<64 hex>");
    }
    auto d = Digest::Parse("sha256:" + std::string(name.substr(kNamePrefix.size())));
    if (!d.ok()) return Bad(where + ": name '" + shown + "' is not sha256/<64 hex>");
    auto size = ParseOctal(h + kSize, 12);
    if (!size) return Bad(where + " (" + d->str() + "): unreadable size field");
    auto want = expected_(*d);
    if (!want) return Bad(where + ": " + d->str() + " is not an object of this bundle");
    if (*size != *want) {
      return Bad(where + ": " + d->str() + " has " + std::to_string(*size) + " bytes, the bundle announces " +
                 std::to_string(*want));
    }
    if (!seen_.insert(*d).second) return Bad(where + ": " + d->str() + " appears twice");
    ++n_;
    digest_ = *d;
    body_.clear();
    body_.reserve(size_t(*size));
    remaining_ = *size;
    state_ = State::kContent;
    if (remaining_ == 0) return Deliver();
    return Status::OK();
  }

  Status Deliver() {
    Digest got = Sha256Of(body_);
    if (got != digest_) {
      return Status::Corruption("pack: entry " + std::to_string(n_) + " (" + digest_.str() + ") hashes to " + got.str());
    }
    uint64_t size = body_.size();
    KI_RETURN_IF_ERROR(entry_(digest_, std::move(body_)));
    body_ = std::string();
    remaining_ = (kBlock - size % kBlock) % kBlock;
    state_ = remaining_ ? State::kPadding : State::kHeader;
    return Status::OK();
  }

  const std::function<std::optional<uint64_t>(const Digest&)>& expected_;
  const std::function<Status(const Digest&, std::string&&)>& entry_;
  State state_ = State::kHeader;
  std::string header_, body_;
  Digest digest_;
  uint64_t remaining_ = 0, end_zeros_ = 0, n_ = 0;
  std::unordered_set<Digest> seen_;
};

}  // namespace

// ---------------------------------------------------------------- key

PackKey::PackKey() {
  h_.Update("ki.pack/" + std::to_string(kPackWriterRevision) + " level=" + std::to_string(kPackZstdLevel) +
            " zstd=" + std::to_string(ZSTD_versionNumber()) + "\n");
}

void PackKey::Add(const Digest& d, uint64_t size) {
  char be[8];
  for (int i = 0; i < 8; ++i) be[i] = char(size >> (56 - 8 * i));
  h_.Update(d.raw());
  h_.Update(std::string_view(be, 8));
}

Digest PackKey::Finish() { return h_.Finish(); }

// ---------------------------------------------------------------- writer

struct PackWriter::Ctx {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  Status status;
  ~Ctx() { ZSTD_freeCCtx(c); }
};

PackWriter::PackWriter(uint64_t tar_bytes) : ctx_(std::make_unique<Ctx>()) {
  // Single-threaded (nbWorkers 0, the default) at a fixed level: the same
  // input gives the same frame. The size goes into the frame header.
  auto set = [&](size_t r) {
    if (ctx_->status.ok() && ZSTD_isError(r)) ctx_->status = Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(r));
  };
  if (!ctx_->c) {
    ctx_->status = Status::IOError("zstd: cannot create a compression context");
    return;
  }
  set(ZSTD_CCtx_setParameter(ctx_->c, ZSTD_c_compressionLevel, kPackZstdLevel));
  set(ZSTD_CCtx_setParameter(ctx_->c, ZSTD_c_nbWorkers, 0));
  set(ZSTD_CCtx_setPledgedSrcSize(ctx_->c, tar_bytes));
}

PackWriter::~PackWriter() = default;

Status PackWriter::Write(std::string_view data, bool end) {
  KI_RETURN_IF_ERROR(ctx_->status);
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  for (;;) {
    size_t old = out_.size();
    out_.resize(old + ZSTD_CStreamOutSize());
    ZSTD_outBuffer out{out_.data() + old, out_.size() - old, 0};
    size_t left = ZSTD_compressStream2(ctx_->c, &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
    out_.resize(old + out.pos);
    if (ZSTD_isError(left)) {
      ctx_->status = Status::IOError(std::string("pack compression: ") + ZSTD_getErrorName(left));
      return ctx_->status;
    }
    if (end ? left == 0 : in.pos == in.size) return Status::OK();
  }
}

Status PackWriter::Add(const Digest& d, std::string_view bytes) {
  std::string h(kBlock, '\0');
  std::string name = std::string(kNamePrefix) + d.hex();
  std::memcpy(h.data() + kName, name.data(), name.size());
  PutOctal(h.data() + kMode, 8, 0644);
  PutOctal(h.data() + kUid, 8, 0);
  PutOctal(h.data() + kGid, 8, 0);
  PutOctal(h.data() + kSize, 12, bytes.size());
  PutOctal(h.data() + kMtime, 12, 0);  // no time: the same objects, the same pack
  h[kType] = '0';
  std::memcpy(h.data() + kMagic, "ustar\0" "00", 8);
  PutOctal(h.data() + kDevMajor, 8, 0);
  PutOctal(h.data() + kDevMinor, 8, 0);
  uint64_t sum = HeaderSum(reinterpret_cast<const unsigned char*>(h.data()));
  PutOctal(h.data() + kChksum, 7, sum);  // six digits, NUL, then the space already there
  h[kChksum + 7] = ' ';
  KI_RETURN_IF_ERROR(Write(h, false));
  KI_RETURN_IF_ERROR(Write(bytes, false));
  static const std::string kZeros(kBlock, '\0');
  KI_RETURN_IF_ERROR(Write(std::string_view(kZeros).substr(0, (kBlock - bytes.size() % kBlock) % kBlock), false));
  ++entries_;
  return Status::OK();
}

Result<std::string> PackWriter::Finish() {
  static const std::string kEnd(2 * kBlock, '\0');
  // zstd refuses to end a frame whose size differs from the pledged one.
  KI_RETURN_IF_ERROR(Write(kEnd, true));
  return std::move(out_);
}

// ---------------------------------------------------------------- reader

Status ReadPack(std::string_view pack, const PackReadLimits& limits,
                const std::function<std::optional<uint64_t>(const Digest&)>& expected,
                const std::function<Status(const Digest&, std::string&&)>& entry) {
  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (!d) return Status::IOError("zstd: cannot create a decompression context");
  size_t r = ZSTD_DCtx_setParameter(d.get(), ZSTD_d_windowLogMax, kPackWindowLogMax);
  if (ZSTD_isError(r)) return Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(r));
  TarReader tar(expected, entry);
  std::string chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{pack.data(), pack.size(), 0};
  uint64_t total = 0;
  for (;;) {
    ZSTD_outBuffer out{chunk.data(), chunk.size(), 0};
    size_t left = ZSTD_decompressStream(d.get(), &out, &in);
    if (ZSTD_isError(left)) return Status::Corruption(std::string("pack: zstd: ") + ZSTD_getErrorName(left));
    total += out.pos;
    if (total > limits.max_tar_bytes) {
      return Status::InvalidInput("pack: decompresses to more than the " + std::to_string(limits.max_tar_bytes) +
                                  " bytes the bundle's objects can fill");
    }
    KI_RETURN_IF_ERROR(tar.Feed(std::string_view(chunk.data(), out.pos)));
    if (left == 0) {  // the frame is complete and flushed
      if (in.pos != in.size) return Status::InvalidInput("pack: data after the zstd frame");
      break;
    }
    if (in.pos == in.size && out.pos < out.size) return Status::Corruption("pack: the zstd frame is truncated");
  }
  return tar.End();
}

Result<std::string> CompressToc(std::string_view json) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> c(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!c) return Status::IOError("zstd: out of memory");
  size_t r = ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, kPackZstdLevel);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c.get(), ZSTD_c_windowLog, 20);
  if (ZSTD_isError(r)) return Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(r));
  std::string out(ZSTD_compressBound(json.size()), '\0');
  r = ZSTD_compress2(c.get(), out.data(), out.size(), json.data(), json.size());
  if (ZSTD_isError(r)) return Status::IOError(std::string("table of contents compression: ") + ZSTD_getErrorName(r));
  out.resize(r);
  return out;
}

Result<std::string> DecompressToc(std::string_view z, uint64_t max_bytes) {
  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (!d) return Status::IOError("zstd: out of memory");
  size_t r = ZSTD_DCtx_setParameter(d.get(), ZSTD_d_windowLogMax, kPackWindowLogMax);
  if (ZSTD_isError(r)) return Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(r));
  std::string out;
  std::string chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{z.data(), z.size(), 0};
  for (;;) {
    ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
    size_t left = ZSTD_decompressStream(d.get(), &o, &in);
    if (ZSTD_isError(left)) return Status::Corruption(std::string("table of contents: zstd: ") + ZSTD_getErrorName(left));
    if (out.size() + o.pos > max_bytes) {
      return Status::InvalidInput("table of contents: more than " + std::to_string(max_bytes) + " bytes decompressed");
    }
    out.append(chunk.data(), o.pos);
    if (left == 0) {  // the frame is complete
      if (in.pos < in.size) return Status::InvalidInput("table of contents: bytes after its zstd frame");
      break;
    }
    if (in.pos == in.size && o.pos < o.size) return Status::Corruption("table of contents: truncated zstd frame");
  }
  return out;
}

}  // namespace ki::remote
