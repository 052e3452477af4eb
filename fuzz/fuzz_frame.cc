// Object frames (src/odb/frame.cc): a header from untrusted bytes is parsed
// and bounds-checked, and its payload (zstd or raw) decoded under a size
// cap, or refused; a frame that decodes re-encodes to bytes that decode the
// same (version 5, whatever version it was read in; a based one as a plain
// frame).
#include "fuzz.h"
#include "odb/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  std::string_view frame = fuzz::Bytes(data, size);
  auto h = odb::ParseFrameHeader(frame, "fuzz.frame");
  if (!h.ok()) return 0;
  KI_FUZZ_CHECK(h->payload_offset <= frame.size(), "");
  constexpr uint64_t kMax = 16 << 20;
  // A based frame (store format 14) decodes against its base's bytes: any
  // bytes do here (the input itself), since its prefix and suffix are what
  // must be bounds-checked against them.
  std::optional<std::string_view> base;
  if (h->base) base = frame;
  auto raw = odb::DecodeFrame(frame, *h, kMax, "fuzz.frame", nullptr, base);
  if (!raw.ok()) return 0;
  KI_FUZZ_CHECK(raw->size() == h->raw_size, "");
  std::string again = odb::EncodeFrame(h->type, h->kind, h->media_type, *raw, 1);
  auto h2 = odb::ParseFrameHeader(again, "again");
  KI_FUZZ_CHECK(h2.ok(), h2.status().message());
  auto raw2 = odb::DecodeFrame(again, *h2, kMax, "again");
  KI_FUZZ_CHECK(raw2.ok() && *raw2 == *raw, "");
  return 0;
}
