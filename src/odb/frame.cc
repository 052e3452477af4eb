#include "odb/frame.h"

// ZSTD_c_stableInBuffer (EncodeFrameStream) is in zstd's experimental API
// (stable since 1.4.6; ki needs 1.5).
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "odb/dict.h"
#include "util/coding.h"

namespace ki::odb {
namespace {

// zstd contexts are reused per thread: creating one costs more than
// compressing a small manifest.
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> t_cctx;
ZSTD_CCtx* ThreadCCtx() {
  if (!t_cctx) t_cctx.reset(ZSTD_createCCtx());
  return t_cctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> c(ZSTD_createDCtx());
  return c.get();
}

// header-check: the first 4 bytes of SHA-256 of the header bytes before
// it. SHA-256 because the library has it already (OpenSSL, with the CPU's
// SHA instructions); 4 bytes because it guards against damage, not forgery
// (the payload's digest is what names the object).
std::string HeaderCheck(std::string_view header) { return std::string(Sha256Of(header).raw().substr(0, 4)); }
void AppendHeaderCheck(std::string& header) { header.append(HeaderCheck(header)); }

constexpr std::string_view kMediaTypeCodes[] = {
    "",  // 0: the media type follows as text
    "application/vnd.kernelindex.manifest+json",
    "application/vnd.kernelindex.document+json",
    "application/vnd.kernelindex.document+yaml",
    "application/vnd.ki.catalog.facts.v1+json",
    "application/vnd.ki.catalog.import.v1+json",
    "application/vnd.ki.zstd-dictionary",
    "application/vnd.dsse.envelope.v1+json",
};
constexpr size_t kMediaTypeCodeCount = sizeof(kMediaTypeCodes) / sizeof(kMediaTypeCodes[0]);

}  // namespace

uint8_t MediaTypeCode(std::string_view media_type) {
  for (size_t i = 1; i < kMediaTypeCodeCount; ++i)
    if (media_type == kMediaTypeCodes[i]) return uint8_t(i);
  return 0;
}

std::string_view CodedMediaType(uint8_t code) {
  return code < kMediaTypeCodeCount ? kMediaTypeCodes[code] : std::string_view();
}

namespace {

// Version 5: magic version type kind flags raw-size(varint) code
// [mt-len(varint) media-type when code is 0] [dict-id] [base-number
// prefix suffix (varints) when based] header-check.
std::string CompactHeader(ObjectType type, uint8_t kind, std::string_view media_type, uint64_t raw_size,
                          bool compressed, uint32_t dict_id, const FrameBase* base) {
  std::string out;
  const uint8_t code = MediaTypeCode(media_type);
  out.reserve(kFrameHeaderPrefix + 10 + 1 + (code ? 0 : 3 + media_type.size()) + kFrameDictIdSize + 25 +
              kFrameHeaderCheckSize);
  out.append(kFrameMagic, 4);
  out.push_back(char(kFrameVersionCompact));
  out.push_back(char(type));
  out.push_back(char(kind));
  out.push_back(char((compressed ? kFrameFlagCompressed : 0) | (dict_id ? kFrameFlagDict : 0) |
                     (base ? kFrameFlagBased : 0)));
  coding::PutVarint64(&out, raw_size);
  out.push_back(char(code));
  if (!code) coding::PutLengthPrefixed(&out, media_type.substr(0, 0xffff));
  if (dict_id) coding::PutFixed32(&out, dict_id);
  if (base) {
    coding::PutVarint64(&out, base->number);
    coding::PutVarint64(&out, base->prefix);
    coding::PutVarint64(&out, base->suffix);
  }
  AppendHeaderCheck(out);
  return out;
}

}  // namespace

std::string EncodeFrameHeader(ObjectType type, uint8_t kind, std::string_view media_type, uint64_t raw_size,
                              bool compressed, uint32_t dict_id, FrameLayout layout) {
  if (layout == FrameLayout::kCompact) return CompactHeader(type, kind, media_type, raw_size, compressed, dict_id, nullptr);
  std::string out;
  const uint8_t code = MediaTypeCode(media_type);
  size_t mt = code ? 0 : std::min<size_t>(media_type.size(), 0xffff);
  out.reserve(kFrameHeaderSize + mt + kFrameDictIdSize + kFrameHeaderCheckSize);
  out.append(kFrameMagic, 4);
  out.push_back(char(code ? kFrameVersionCoded : dict_id ? kFrameVersionDict : kFrameVersion));
  out.push_back(char(type));
  out.push_back(char(kind));
  out.push_back(char((compressed ? 1 : 0) | (code && dict_id ? 2 : 0)));  // flags
  coding::PutFixed64(&out, raw_size);
  const size_t field = code ? code : mt;  // version 4: the code, else the text's length
  out.push_back(char(field & 0xff));
  out.push_back(char(field >> 8));
  out.append(media_type.substr(0, mt));
  if (dict_id) coding::PutFixed32(&out, dict_id);
  AppendHeaderCheck(out);
  return out;
}

namespace {

// Sets up the thread's compression context for one frame's payload: a
// version 5 payload is a zstd frame without magic, content size or
// dictionary ID (ki's header carries them); versions 2 to 4 kept all three.
// With a dictionary its compiled form fixes the level. False when zstd
// refuses a parameter (it does not for these values).
bool SetUpCompression(ZSTD_CCtx* c, int zstd_level, const ZSTD_CDict* cdict, FrameLayout layout) {
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  size_t r = cdict ? ZSTD_CCtx_refCDict(c, cdict) : ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, zstd_level);
  if (!ZSTD_isError(r) && layout == FrameLayout::kCompact) {
    r = ZSTD_CCtx_setParameter(c, ZSTD_c_format, ZSTD_f_zstd1_magicless);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0);
  }
  return !ZSTD_isError(r);
}

// A decompression context set to read a payload of `version`'s layout.
void SetUpDecompression(ZSTD_DCtx* d, uint8_t version) {
  ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  ZSTD_DCtx_setParameter(d, ZSTD_d_format,
                         version == kFrameVersionCompact ? ZSTD_f_zstd1_magicless : ZSTD_f_zstd1);
}

}  // namespace

std::string EncodeFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                        std::string_view raw, int zstd_level, const Dictionary* dict, FrameLayout layout) {
  const ZSTD_CDict* cdict = dict ? dict->cdict(zstd_level) : nullptr;
  const uint32_t dict_id = cdict ? dict->id() : 0;
  // The compressed header is the longer one (a dictionary ID); the raw one
  // replaces it below when compression does not pay.
  std::string out = EncodeFrameHeader(type, kind, media_type, raw.size(), true, dict_id, layout);
  size_t bound = ZSTD_compressBound(raw.size());
  size_t header = out.size();
  out.resize(header + bound);
  size_t n = SetUpCompression(ThreadCCtx(), zstd_level, cdict, layout)
                 ? ZSTD_compress2(ThreadCCtx(), out.data() + header, bound, raw.data(), raw.size())
                 : size_t(-1);
  if (!ZSTD_isError(n) && n < raw.size()) {
    out.resize(header + n);
  } else {
    // Incompressible (or tiny): keep the bytes as they are.
    out = EncodeFrameHeader(type, kind, media_type, raw.size(), false, 0, layout);
    out.append(raw);
  }
  return out;
}

std::optional<std::string> EncodeBasedFrame(ObjectType type, uint8_t kind, std::string_view media_type,
                                            std::string_view raw, std::string_view base_raw, int zstd_level,
                                            const Dictionary* dict, size_t plain, size_t margin) {
  FrameBase base;
  const size_t most = std::min(raw.size(), base_raw.size());
  while (base.prefix < most && raw[base.prefix] == base_raw[base.prefix]) ++base.prefix;
  while (base.prefix + base.suffix < most &&
         raw[raw.size() - 1 - base.suffix] == base_raw[base_raw.size() - 1 - base.suffix])
    ++base.suffix;
  const std::string_view middle = raw.substr(base.prefix, raw.size() - base.prefix - base.suffix);
  // Not worth a try when the two share little (a YAML document and its
  // manifest's JSON): the plain frame is about as small.
  if (base.prefix + base.suffix < raw.size() / 4) return std::nullopt;
  const ZSTD_CDict* cdict = dict ? dict->cdict(zstd_level) : nullptr;
  std::string out = CompactHeader(type, kind, media_type, raw.size(), true, cdict ? dict->id() : 0, &base);
  const size_t header = out.size();
  const size_t bound = ZSTD_compressBound(middle.size());
  out.resize(header + bound);
  const size_t n = SetUpCompression(ThreadCCtx(), zstd_level, cdict, FrameLayout::kCompact)
                       ? ZSTD_compress2(ThreadCCtx(), out.data() + header, bound, middle.data(), middle.size())
                       : size_t(-1);
  if (!ZSTD_isError(n) && n < middle.size()) {
    out.resize(header + n);
  } else {
    out = CompactHeader(type, kind, media_type, raw.size(), false, 0, &base);
    out.append(middle);
  }
  if (out.size() + margin >= plain) return std::nullopt;
  return out;
}

Result<std::string> NumberBasedFrame(std::string_view based, uint32_t number) {
  KI_ASSIGN_OR_RETURN(FrameHeader h, ParseFrameHeader(based, "a based frame"));
  if (!h.base) return Status::InvalidInput("internal: NumberBasedFrame of a frame that is not based");
  FrameBase base = *h.base;
  base.number = number;
  std::string out = CompactHeader(h.type, h.kind, h.media_type, h.raw_size, h.compressed, h.dict_id, &base);
  out.append(based.substr(h.payload_offset));
  return out;
}

namespace {

// The media type of a code, or Corruption naming a code this ki does not know.
Result<std::string> CodedMediaTypeOrError(size_t code, uint8_t version, const std::string& where) {
  const std::string_view media_type = code <= 0xff ? CodedMediaType(uint8_t(code)) : std::string_view();
  if (media_type.empty()) {
    return Status::Corruption(where + ": version " + std::to_string(version) + " frame with media type code " +
                              std::to_string(code) + ", which this ki does not know");
  }
  return std::string(media_type);
}

// Version 5 (CompactHeader).
Result<FrameHeader> ParseCompactHeader(std::string_view f, const std::string& where) {
  FrameHeader h;
  h.version = kFrameVersionCompact;
  const uint8_t flags = uint8_t(f[7]);
  if (flags & ~unsigned(kFrameFlagCompressed | kFrameFlagDict | kFrameFlagBased)) {
    return Status::Corruption(where + ": unknown frame flags");
  }
  h.compressed = flags & kFrameFlagCompressed;
  coding::Decoder in(f.substr(kFrameHeaderPrefix));
  uint8_t code = 0;
  std::string_view text;
  uint32_t dict_id = 0;
  const auto truncated = [&] { return Status::Corruption(where + ": truncated frame header"); };
  if (!in.GetVarint64(&h.raw_size) || !in.GetByte(&code)) return truncated();
  if (code == 0 && !in.GetLengthPrefixed(&text)) return truncated();
  if ((flags & kFrameFlagDict) && !in.GetFixed32(&dict_id)) return truncated();
  FrameBase base;
  uint64_t number = 0;
  if ((flags & kFrameFlagBased) &&
      (!in.GetVarint64(&number) || !in.GetVarint64(&base.prefix) || !in.GetVarint64(&base.suffix))) {
    return truncated();
  }
  const size_t checked = f.size() - in.rest().size();
  std::string_view check;
  if (!in.GetBytes(kFrameHeaderCheckSize, &check)) return truncated();
  if (HeaderCheck(f.substr(0, checked)) != check) {
    return Status::Corruption(where + ": frame header damaged (its check does not match: type, kind, size, "
                              "media type or dictionary altered)");
  }
  if (code) {
    KI_ASSIGN_OR_RETURN(h.media_type, CodedMediaTypeOrError(code, h.version, where));
  } else {
    h.media_type.assign(text);
  }
  if (flags & kFrameFlagBased) {
    // Number 0 is a frame whose base is not numbered yet (EncodeBasedFrame):
    // never stored, and no object has it.
    if (number > 0xffffffffu || base.prefix > h.raw_size || base.suffix > h.raw_size - base.prefix) {
      return Status::Corruption(where + ": based frame whose base number, prefix or suffix is out of range");
    }
    base.number = uint32_t(number);
    h.base = base;
  }
  if (flags & kFrameFlagDict) {
    h.dict_id = dict_id;
    if (h.dict_id == 0 || !h.compressed) {
      return Status::Corruption(where + ": frame with a dictionary ID but no compressed payload, or an ID of 0");
    }
  }
  h.payload_offset = checked + kFrameHeaderCheckSize;
  return h;
}

}  // namespace

Result<FrameHeader> ParseFrameHeader(std::string_view f, const std::string& where) {
  if (f.size() < kFrameHeaderPrefix || std::memcmp(f.data(), kFrameMagic, 4) != 0) {
    return Status::Corruption(where + ": not a ki object frame (bad magic or short header)");
  }
  const uint8_t version = uint8_t(f[4]);
  if (version != kFrameVersion && version != kFrameVersionV1 && version != kFrameVersionDict &&
      version != kFrameVersionCoded && version != kFrameVersionCompact) {
    return Status::Corruption(where + ": object frame version " + std::to_string(version) +
                              " is not supported (this ki reads versions 1 to 5)");
  }
  const uint8_t type = uint8_t(f[5]);
  if (type != uint8_t(ObjectType::kBlob) && type != uint8_t(ObjectType::kManifest)) {
    return Status::Corruption(where + ": unknown object type " + std::to_string(type));
  }
  if (version == kFrameVersionCompact) {
    KI_ASSIGN_OR_RETURN(FrameHeader h, ParseCompactHeader(f, where));
    h.type = ObjectType(type);
    h.kind = uint8_t(f[6]);
    return h;
  }
  if (f.size() < kFrameHeaderSize) {
    return Status::Corruption(where + ": not a ki object frame (bad magic or short header)");
  }
  const bool coded = version == kFrameVersionCoded;
  FrameHeader h;
  h.version = version;
  h.type = ObjectType(type);
  h.kind = uint8_t(f[6]);
  uint8_t flags = uint8_t(f[7]);
  if (flags & ~(coded ? 3u : 1u)) return Status::Corruption(where + ": unknown frame flags");
  h.compressed = flags & 1;
  h.raw_size = coding::DecodeFixed64(f.data() + 8);
  const size_t field = uint8_t(f[16]) | size_t(uint8_t(f[17])) << 8;
  const size_t mt = coded ? 0 : field;
  const size_t check = version == kFrameVersionV1 ? 0 : kFrameHeaderCheckSize;
  const size_t dict = version == kFrameVersionDict || (coded && (flags & 2)) ? kFrameDictIdSize : 0;
  const size_t checked = kFrameHeaderSize + mt + dict;  // the bytes the check covers
  if (checked + check > f.size()) return Status::Corruption(where + ": truncated frame header");
  if (check && HeaderCheck(f.substr(0, checked)) != f.substr(checked, check)) {
    return Status::Corruption(where + ": frame header damaged (its check does not match: type, kind, size, "
                              "media type or dictionary altered)");
  }
  if (coded) {
    KI_ASSIGN_OR_RETURN(h.media_type, CodedMediaTypeOrError(field, version, where));
  } else {
    h.media_type.assign(f.data() + kFrameHeaderSize, mt);
  }
  if (dict) {
    h.dict_id = coding::DecodeFixed32(f.data() + kFrameHeaderSize + mt);
    if (h.dict_id == 0 || !h.compressed) {
      return Status::Corruption(where + ": frame with a dictionary ID but no compressed payload, or an ID of 0");
    }
  }
  h.payload_offset = checked + check;
  return h;
}

namespace {

// The dictionary a compressed payload needs, checked against both headers
// (ours and zstd's) before anything is decoded: nullptr for none.
Result<const ZSTD_DDict*> PayloadDictionary(std::string_view payload, const FrameHeader& h, const Dictionary* dict,
                                            const std::string& where) {
  // A version 5 payload names no dictionary (ki's header does); the
  // digest of what it decodes to is what shows a wrong one.
  const unsigned zid =
      h.version == kFrameVersionCompact ? h.dict_id : ZSTD_getDictID_fromFrame(payload.data(), payload.size());
  if (zid != h.dict_id) {
    return Status::Corruption(where + ": the compressed payload names " +
                              (zid ? DictionaryName(zid) : std::string("no dictionary")) + ", the frame header " +
                              (h.dict_id ? DictionaryName(h.dict_id) : std::string("none")));
  }
  if (!h.dict_id) return nullptr;
  if (!dict || dict->id() != h.dict_id) {
    return Status::Corruption(where + ": compressed with " + DictionaryName(h.dict_id) + ", which was not found");
  }
  return dict->ddict();
}

}  // namespace

Result<std::string> DecodeFrame(std::string_view f, const FrameHeader& h, uint64_t max_size,
                                const std::string& where, const Dictionary* dict,
                                std::optional<std::string_view> base) {
  std::string_view payload = f.substr(h.payload_offset);
  if (h.raw_size > max_size) {
    return Status::Corruption(where + ": frame claims " + std::to_string(h.raw_size) +
                              " bytes, over the limit of " + std::to_string(max_size));
  }
  // A based frame's payload is its middle: the bytes between the base's
  // prefix and suffix (ParseFrameHeader checked that both fit in raw_size).
  uint64_t prefix = 0, suffix = 0;
  if (h.base) {
    if (!base) {
      return Status::Corruption(where + ": based on object number " + std::to_string(h.base->number) +
                                ", whose bytes were not read");
    }
    prefix = h.base->prefix;
    suffix = h.base->suffix;
    if (prefix > base->size() || suffix > base->size() - prefix) {
      return Status::Corruption(where + ": based on object number " + std::to_string(h.base->number) + " (" +
                                std::to_string(base->size()) + " bytes), but takes " + std::to_string(prefix) +
                                " + " + std::to_string(suffix) + " bytes of it");
    }
  }
  const uint64_t middle = h.raw_size - prefix - suffix;
  const auto assemble = [&](std::string out) {
    if (!h.base) return out;
    std::memcpy(out.data(), base->data(), prefix);
    std::memcpy(out.data() + prefix + middle, base->data() + base->size() - suffix, suffix);
    return out;
  };
  if (!h.compressed) {
    if (payload.size() != middle) {
      return Status::Corruption(where + ": frame holds " + std::to_string(payload.size()) +
                                " bytes, header says " + std::to_string(middle));
    }
    if (!h.base) return std::string(payload);
    std::string out(size_t(h.raw_size), '\0');
    std::memcpy(out.data() + prefix, payload.data(), payload.size());
    return assemble(std::move(out));
  }
  if (h.version == kFrameVersionCompact) {
    // No content size to compare: the payload must be exactly one zstd
    // frame (nothing after it), and it must decode to raw_size bytes.
    KI_ASSIGN_OR_RETURN(size_t len, CompressedPayloadSize(payload, h, where));
    if (len != payload.size()) return Status::Corruption(where + ": bytes after the compressed payload");
  } else {
    // The zstd frame's own content size must agree with ours: a header is
    // untrusted until both say the same.
    unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (content == ZSTD_CONTENTSIZE_ERROR || content != middle) {
      return Status::Corruption(where + ": compressed payload does not match the frame header");
    }
  }
  KI_ASSIGN_OR_RETURN(const ZSTD_DDict* ddict, PayloadDictionary(payload, h, dict, where));
  std::string out(size_t(h.raw_size), '\0');
  ZSTD_DCtx* dctx = ThreadDCtx();
  SetUpDecompression(dctx, h.version);  // also drops a dictionary a streamed read referenced
  char* dst = out.data() + prefix;
  size_t n = ddict ? ZSTD_decompress_usingDDict(dctx, dst, size_t(middle), payload.data(), payload.size(), ddict)
                   : ZSTD_decompressDCtx(dctx, dst, size_t(middle), payload.data(), payload.size());
  if (ZSTD_isError(n) || n != middle) {
    return Status::Corruption(where + ": cannot decompress: " +
                              (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output"));
  }
  return assemble(std::move(out));
}

Result<size_t> CompressedPayloadSize(std::string_view payload, const FrameHeader& h, const std::string& where) {
  size_t n;
  if (h.version == kFrameVersionCompact) {
    // zstd measures only frames with their magic number (its _advanced
    // forms that take a format are not public), so the magic is put back
    // in front of a copy: a frame kept in LMDB is at most 64 KiB, and a
    // loose one decoded whole costs its compressed size once more, beside
    // the raw bytes it decodes to (a streamed read copies nothing).
    std::string framed;
    framed.reserve(4 + payload.size());
    coding::PutFixed32(&framed, ZSTD_MAGICNUMBER);  // little-endian, as zstd writes it
    framed.append(payload);
    n = ZSTD_findFrameCompressedSize(framed.data(), framed.size());
    if (!ZSTD_isError(n)) n -= 4;
  } else {
    n = ZSTD_findFrameCompressedSize(payload.data(), payload.size());
  }
  if (ZSTD_isError(n)) {
    return Status::Corruption(where + ": cannot decompress: " + ZSTD_getErrorName(n));
  }
  return n;
}

namespace {

// Pieces a stream is read and written in: large enough that a syscall per
// piece costs little, small enough that memory stays a few MiB.
constexpr size_t kStreamChunk = 1 << 20;
constexpr size_t kReleaseEvery = 64 << 20;

// Reads until buf is full or the file ends (a pipe may return less).
Result<size_t> ReadFull(SequentialFile& f, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    KI_ASSIGN_OR_RETURN(size_t r, f.Read(buf + got, n - got));
    if (r == 0) break;
    got += r;
  }
  return got;
}

std::string ZstdError(size_t r) { return ZSTD_getErrorName(r); }

// One step of EncodeFrameStream over the mapped input: compress until the
// output buffer is full or the frame ends, then hash what zstd consumed. It
// runs inside MappedFile::ReadGuarded and may be abandoned at any read of
// the input, so it owns nothing (plain C calls on state its caller holds).
struct CompressStep {
  ZSTD_CCtx* cctx;
  ZSTD_inBuffer in;
  ZSTD_outBuffer out;
  Sha256* hash;
  size_t hashed;  // input bytes hashed so far
  size_t left;    // ZSTD_compressStream2's answer
};

void RunCompressStep(void* arg) {
  auto* s = static_cast<CompressStep*>(arg);
  s->left = ZSTD_compressStream2(s->cctx, &s->out, &s->in, ZSTD_e_end);
  if (ZSTD_isError(s->left)) return;
  // Hashed right behind zstd, while the pages are resident.
  if (s->in.pos > s->hashed) {
    s->hash->Update(std::string_view(static_cast<const char*>(s->in.src) + s->hashed, s->in.pos - s->hashed));
    s->hashed = s->in.pos;
  }
  // zstd said done: all of it was read.
  if (s->left == 0 && s->hashed != s->in.size) {
    s->hash->Update(std::string_view(static_cast<const char*>(s->in.src) + s->hashed, s->in.size - s->hashed));
    s->hashed = s->in.size;
  }
}

}  // namespace

Result<StreamedFrame> EncodeFrameStream(MappedFile& in, ObjectType type, uint8_t kind, std::string_view media_type,
                                        int zstd_level, const std::string& where, const ByteSink& out,
                                        FrameLayout layout) {
  const std::string_view raw = in.data();
  StreamedFrame s;
  s.raw_size = raw.size();
  std::string header = EncodeFrameHeader(type, kind, media_type, raw.size(), true, 0, layout);
  KI_RETURN_IF_ERROR(out(header));
  s.written = header.size();
  // EncodeFrame's ZSTD_compressCCtx sets the level and fits the window to
  // the source size; the same level with the size pledged gives the same
  // parameters, and the content size in zstd's frame header. The input
  // must also be one stable buffer: fed in pieces, zstd copies them into a
  // ring buffer, and matches across its wrap differ from the one-shot ones
  // (a 3 MiB input already compresses to other bytes).
  ZSTD_CCtx* c = ThreadCCtx();
  size_t r = SetUpCompression(c, zstd_level, nullptr, layout) ? 0 : size_t(-1);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_stableInBuffer, 1);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setPledgedSrcSize(c, raw.size());
  if (ZSTD_isError(r)) return Status::IOError(where + ": zstd: " + ZstdError(r));
  std::string outbuf(kStreamChunk, '\0');
  Sha256 hash;
  CompressStep step{c, ZSTD_inBuffer{raw.data(), raw.size(), 0}, ZSTD_outBuffer{}, &hash, 0, 0};
  size_t released = 0;
  for (;;) {
    step.out = ZSTD_outBuffer{outbuf.data(), outbuf.size(), 0};
    if (!in.ReadGuarded(RunCompressStep, &step)) {
      // The file was truncated under the mapping (SIGBUS), and the step
      // abandoned inside zstd. The context is freed, not reused: its state
      // is half-updated, but freeing it only releases its own allocations
      // (one thread, no workers, no locks; zstd allocates when a frame
      // starts, not while it reads input). The hasher is dropped with
      // this frame.
      t_cctx.reset();
      return Status::InvalidInput(where + ": shrank while being read; nothing was stored");
    }
    if (ZSTD_isError(step.left)) return Status::IOError(where + ": zstd: " + ZstdError(step.left));
    if (step.out.pos) {
      KI_RETURN_IF_ERROR(out(std::string_view(outbuf.data(), step.out.pos)));
      s.written += step.out.pos;
    }
    // Pages well behind zstd and the hash (past any window zstd reads
    // back) leave memory.
    if (step.hashed > released + kReleaseEvery) {
      released = step.hashed - kStreamChunk * 16;
      in.Release(released);
    }
    if (step.left == 0) break;
  }
  s.digest = hash.Finish();
  // EncodeFrame's rule: compressed only when the payload is smaller.
  s.smaller = s.written - header.size() < raw.size();
  return s;
}

namespace {
struct HashStep {
  const char* data;
  size_t size;
  size_t hashed;
  Sha256* hash;
};
// Hashes the next piece; runs inside MappedFile::ReadGuarded (owns nothing).
void RunHashStep(void* arg) {
  auto* s = static_cast<HashStep*>(arg);
  const size_t n = std::min(kStreamChunk * 16, s->size - s->hashed);
  s->hash->Update(std::string_view(s->data + s->hashed, n));
  s->hashed += n;
}
}  // namespace

Result<Digest> HashMapped(MappedFile& in, const std::string& where) {
  const std::string_view raw = in.data();
  Sha256 hash;
  HashStep step{raw.data(), raw.size(), 0, &hash};
  while (step.hashed < step.size) {
    if (!in.ReadGuarded(RunHashStep, &step)) {
      return Status::InvalidInput(where + ": shrank while being read; nothing was stored");
    }
    in.Release(step.hashed);
  }
  return hash.Finish();
}

Result<FrameHeader> ReadFrameHeader(SequentialFile& file, const std::string& where) {
  const auto short_header = [&] {
    return Status::Corruption(where + ": not a ki object frame (bad magic or short header)");
  };
  std::string buf(kFrameHeaderPrefix, '\0');
  KI_ASSIGN_OR_RETURN(size_t n, ReadFull(file, buf.data(), buf.size()));
  if (n < kFrameHeaderPrefix) return short_header();
  const uint8_t version = uint8_t(buf[4]);
  const auto read_more = [&](size_t k) -> Result<bool> {  // false: the file ended first
    const size_t at = buf.size();
    buf.resize(at + k);
    KI_ASSIGN_OR_RETURN(size_t m, ReadFull(file, buf.data() + at, k));
    buf.resize(at + m);
    return m == k;
  };
  if (version == kFrameVersionCompact && (uint8_t(buf[7]) & kFrameFlagBased)) {
    // A file is read a piece at a time, and a based frame needs its base's
    // bytes: ki keeps based frames only in the index.
    return Status::Corruption(where + ": a based frame in a file (ki keeps based frames only in the index)");
  }
  if (version == kFrameVersionCompact) {
    // Varints: read a byte at a time, up to the header's end (never into
    // the payload, which the decoder reads next).
    const auto read_varint = [&]() -> Result<uint64_t> {
      uint64_t v = 0;
      for (int shift = 0; shift < 70; shift += 7) {
        KI_ASSIGN_OR_RETURN(bool got, read_more(1));
        if (!got) return uint64_t(0);  // short: ParseFrameHeader says truncated
        const uint8_t b = uint8_t(buf.back());
        if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
      }
      return v;  // too long: ParseFrameHeader refuses it
    };
    KI_RETURN_IF_ERROR(read_varint().status());  // raw-size
    KI_ASSIGN_OR_RETURN(bool got, read_more(1));  // code
    if (got && buf.back() == 0) {
      KI_ASSIGN_OR_RETURN(uint64_t len, read_varint());
      if (len > 0xffff) return ParseFrameHeader(buf, where);  // no ki writes it: refused there or by its check
      KI_RETURN_IF_ERROR(read_more(size_t(len)).status());
    }
    const bool dict = uint8_t(buf[7]) & 2;
    KI_RETURN_IF_ERROR(read_more((dict ? kFrameDictIdSize : 0) + kFrameHeaderCheckSize).status());
    return ParseFrameHeader(buf, where);
  }
  KI_ASSIGN_OR_RETURN(bool whole, read_more(kFrameHeaderSize - kFrameHeaderPrefix));
  if (!whole) return short_header();
  const bool coded = version == kFrameVersionCoded;
  const size_t mt = coded ? 0 : uint8_t(buf[16]) | size_t(uint8_t(buf[17])) << 8;
  const bool dict = version == kFrameVersionDict || (coded && (uint8_t(buf[7]) & 2));
  const size_t rest = mt + (version == kFrameVersionV1 ? 0 : kFrameHeaderCheckSize) + (dict ? kFrameDictIdSize : 0);
  KI_RETURN_IF_ERROR(read_more(rest).status());  // short: ParseFrameHeader says truncated
  return ParseFrameHeader(buf, where);
}

// The decoder's buffers and zstd context, kept out of frame.h (zstd.h
// wants ZSTD_STATIC_LINKING_ONLY before its first inclusion).
struct FrameDecoder::State {
  explicit State(const FrameHeader& hdr) : h(hdr) {}
  const FrameHeader h;
  Sha256 hash;
  uint64_t produced = 0;
  std::string inbuf = std::string(kStreamChunk, '\0');
  size_t in_size = 0, in_pos = 0;
  std::string outbuf;
  // Its own context, not the thread's: a decoder lives across calls, and
  // the thread may decode other frames in between (a manifest read).
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx;
  bool started = false;     // the first input read (and its checks) done
  bool eof = false;         // the file is spent
  bool full = false;        // the last zstd call filled the output buffer
  bool frame_done = false;  // zstd has ended the frame
  bool finished = false;    // every check passed; digest set
  Digest digest;
};

FrameDecoder::FrameDecoder(SequentialFile& file, const FrameHeader& h, std::string where, const Dictionary* dict)
    : file_(file), where_(std::move(where)), dict_(dict), s_(std::make_unique<State>(h)) {}

FrameDecoder::~FrameDecoder() = default;

const Digest& FrameDecoder::digest() const { return s_->digest; }

Result<std::string_view> FrameDecoder::Next() {
  State& s = *s_;
  const FrameHeader& h = s.h;
  if (s.finished) return std::string_view();
  if (h.base) return Status::Corruption(where_ + ": a based frame cannot be streamed (it needs its base's bytes)");
  auto wrong_length = [&](const std::string& held) {
    return Status::Corruption(where_ + ": frame holds " + held + " bytes, header says " + std::to_string(h.raw_size));
  };
  auto finish = [&] {
    s.digest = s.hash.Finish();
    s.finished = true;
    return std::string_view();
  };
  if (!h.compressed) {
    KI_ASSIGN_OR_RETURN(size_t n, ReadFull(file_, s.inbuf.data(), s.inbuf.size()));
    if (n == 0) {
      if (s.produced != h.raw_size) return wrong_length(std::to_string(s.produced));
      return finish();
    }
    if (n > h.raw_size - s.produced) return wrong_length("more");
    s.produced += n;
    std::string_view piece(s.inbuf.data(), n);
    s.hash.Update(piece);
    return piece;
  }
  for (;;) {
    if (s.frame_done) {
      // Nothing may follow the zstd frame, in the buffer or in the file.
      bool after = s.in_pos < s.in_size;
      if (!after && !s.eof) {
        KI_ASSIGN_OR_RETURN(size_t n, ReadFull(file_, s.inbuf.data(), s.inbuf.size()));
        after = n > 0;
        s.in_size = n;
        s.in_pos = 0;
        s.eof = true;
      }
      if (after) return Status::Corruption(where_ + ": bytes after the compressed payload");
      if (s.produced != h.raw_size) return Status::Corruption(where_ + ": cannot decompress: short output");
      return finish();
    }
    if (s.in_pos == s.in_size && !s.full && !s.eof) {
      KI_ASSIGN_OR_RETURN(size_t n, ReadFull(file_, s.inbuf.data(), s.inbuf.size()));
      if (!s.started) {
        // The zstd frame's own content size must agree with ours before a
        // byte is passed on: a header is untrusted until both say the same.
        // (A version 5 payload has none: the length is checked as it goes.)
        unsigned long long content = ZSTD_getFrameContentSize(s.inbuf.data(), n);
        if (h.version != kFrameVersionCompact && (content == ZSTD_CONTENTSIZE_ERROR || content != h.raw_size)) {
          return Status::Corruption(where_ + ": compressed payload does not match the frame header");
        }
        KI_ASSIGN_OR_RETURN(const ZSTD_DDict* ddict,
                            PayloadDictionary(std::string_view(s.inbuf.data(), n), h, dict_, where_));
        s.dctx.reset(ZSTD_createDCtx());
        if (!s.dctx) return Status::IOError(where_ + ": zstd: out of memory");
        SetUpDecompression(s.dctx.get(), h.version);
        if (ddict) {
          size_t r = ZSTD_DCtx_refDDict(s.dctx.get(), ddict);
          if (ZSTD_isError(r)) return Status::IOError(where_ + ": zstd: " + ZstdError(r));
        }
        s.outbuf.assign(ZSTD_DStreamOutSize(), '\0');
        s.started = true;
      }
      s.in_size = n;
      s.in_pos = 0;
      if (n == 0) s.eof = true;
      continue;
    }
    // One call of zstd, over what input is left (none once the file is
    // spent: zstd may still hold output of the frame).
    const bool starving = s.in_pos == s.in_size;
    ZSTD_inBuffer ib{s.inbuf.data(), s.in_size, s.in_pos};
    ZSTD_outBuffer ob{s.outbuf.data(), s.outbuf.size(), 0};
    size_t r = ZSTD_decompressStream(s.dctx.get(), &ob, &ib);
    if (ZSTD_isError(r)) return Status::Corruption(where_ + ": cannot decompress: " + ZstdError(r));
    s.in_pos = ib.pos;
    if (ob.pos > h.raw_size - s.produced) return Status::Corruption(where_ + ": decompresses to more than raw-size");
    s.produced += ob.pos;
    s.full = ob.pos == ob.size;
    if (r == 0) s.frame_done = true;
    std::string_view piece(s.outbuf.data(), ob.pos);
    s.hash.Update(piece);
    if (!piece.empty()) return piece;
    if (starving && s.eof && !s.full && !s.frame_done) {
      return Status::Corruption(where_ + ": cannot decompress: truncated compressed payload");
    }
  }
}

Result<Digest> DecodeFrameStream(SequentialFile& file, const FrameHeader& h, const std::string& where,
                                 const ByteSink& out, const Dictionary* dict) {
  FrameDecoder decoder(file, h, where, dict);
  for (;;) {
    KI_ASSIGN_OR_RETURN(std::string_view piece, decoder.Next());
    if (piece.empty()) return decoder.digest();
    KI_RETURN_IF_ERROR(out(piece));
  }
}

}  // namespace ki::odb
