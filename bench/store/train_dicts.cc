// bench helper: trains ki's built-in zstd dictionaries (src/odb/dictionaries)
// from the objects of a store, with zstd's own trainer (ZDICT), one per use:
// `manifest-<kind number>` for the manifests of one kind, `document-json`
// for manifests' original documents, `catalog-facts` for the catalog's
// facts objects (src/odb/dict.cc reads these names).
//
//   bench_train_dicts STORE/.ki OUTDIR [--half even|odd|all]
//
// --half even trains on the objects whose digest's first byte is even and
// then measures on the others (held out): what a dictionary does for data
// it has not seen, as a user's new runs are. Prints, per use, the held-out
// objects' bytes raw, as plain zstd -3 and with the dictionary.
#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ki/store.h"

namespace {

constexpr int kLevel = 3;
// Kinds and media types with fewer objects than this get no dictionary:
// there is too little to learn from, and too little to save.
constexpr size_t kMinSamples = 100;
// Under 64 KiB with its frame, so that it is kept in LMDB, not loose.
constexpr size_t kMaxDict = 60000;
// Samples beyond this many bytes add training time and little else.
constexpr size_t kMaxTrainBytes = 12 << 20;

std::string UseOf(const ki::ObjectInfo& info) {
  if (info.type == ki::ObjectType::kManifest && info.kind) return "manifest-" + std::to_string(int(*info.kind));
  if (info.media_type == ki::kDocumentMediaTypeJson) return "document-json";
  if (info.media_type == "application/vnd.ki.catalog.facts.v1+json") return "catalog-facts";
  return "";
}

size_t Compressed(ZSTD_CCtx* c, const std::string& raw, const ZSTD_CDict* dict, std::string& buf) {
  buf.resize(ZSTD_compressBound(raw.size()));
  size_t n = dict ? ZSTD_compress_usingCDict(c, buf.data(), buf.size(), raw.data(), raw.size(), dict)
                  : ZSTD_compressCCtx(c, buf.data(), buf.size(), raw.data(), raw.size(), kLevel);
  // ki keeps raw bytes when compression does not make them smaller.
  return ZSTD_isError(n) ? raw.size() : std::min(n, raw.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s STORE/.ki OUTDIR [--half even|odd|all]\n", argv[0]);
    return 2;
  }
  std::string half = "all";
  if (argc == 5 && std::string(argv[3]) == "--half") half = argv[4];
  auto store = ki::Store::Open(argv[1], ki::OpenMode::kReadOnly);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  std::map<std::string, std::vector<ki::Digest>> by_use;
  (void)(*store)->ForEachObject([&](const ki::ObjectInfo& info) {
    std::string use = UseOf(info);
    if (!use.empty() && info.size <= (1 << 20)) by_use[use].push_back(info.digest);
    return true;
  });
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::string buf;
  uint64_t tot_raw = 0, tot_plain = 0, tot_dict = 0, tot_dict_bytes = 0;
  std::printf("%-14s %7s %7s %10s %10s %10s %7s %7s\n", "use", "train", "test", "test raw", "zstd -3", "with dict",
              "ratio", "dict");
  for (auto& [use, digests] : by_use) {
    std::vector<std::string> train, test;
    for (const auto& d : digests) {  // digest order: the same samples every run
      const bool even = (uint8_t(d.raw()[0]) & 1) == 0;
      const bool in_train = half == "all" || (half == "even" ? even : !even);
      const bool in_test = half == "all" || !in_train;
      if (!in_train && !in_test) continue;
      auto bytes = (*store)->Read(d);
      if (!bytes.ok()) {
        std::fprintf(stderr, "%s\n", bytes.status().message().c_str());
        return 1;
      }
      if (in_train) train.push_back(*bytes);
      if (in_test) test.push_back(std::move(bytes).value());
    }
    if (train.size() < kMinSamples) continue;
    std::string samples;
    std::vector<size_t> sizes;
    for (const auto& t : train) {
      if (samples.size() + t.size() > kMaxTrainBytes) break;
      samples += t;
      sizes.push_back(t.size());
    }
    const size_t cap = std::clamp<size_t>(samples.size() / 40, 4096, kMaxDict);
    std::string dict(cap, '\0');
    size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(), unsigned(sizes.size()));
    if (ZDICT_isError(n)) {
      std::fprintf(stderr, "%s: %s\n", use.c_str(), ZDICT_getErrorName(n));
      continue;
    }
    dict.resize(n);
    ZSTD_CDict* cdict = ZSTD_createCDict(dict.data(), dict.size(), kLevel);
    uint64_t raw = 0, plain = 0, with = 0;
    for (const auto& t : test) {
      raw += t.size();
      plain += Compressed(cctx, t, nullptr, buf);
      with += Compressed(cctx, t, cdict, buf);
    }
    ZSTD_freeCDict(cdict);
    // A dictionary that saves less than its own size is not worth storing.
    const bool keep = plain > with + dict.size() / (half == "all" ? 1 : 2);
    std::printf("%-14s %7zu %7zu %10llu %10llu %10llu %6.2fx %7zu%s\n", use.c_str(), train.size(), test.size(),
                (unsigned long long)raw, (unsigned long long)plain, (unsigned long long)with,
                with ? double(plain) / double(with) : 0.0, dict.size(), keep ? "" : " (not kept)");
    tot_raw += raw;
    tot_plain += plain;
    tot_dict += keep ? with : plain;
    if (!keep) continue;
    tot_dict_bytes += dict.size();
    std::string path = std::string(argv[2]) + "/" + use + ".zdict";
    std::ofstream out(path, std::ios::binary);
    out.write(dict.data(), std::streamsize(dict.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  ZSTD_freeCCtx(cctx);
  std::printf("%-14s %7s %7s %10llu %10llu %10llu %6.2fx %7llu\n", "total", "", "", (unsigned long long)tot_raw,
              (unsigned long long)tot_plain, (unsigned long long)tot_dict,
              tot_dict ? double(tot_plain) / double(tot_dict) : 0.0, (unsigned long long)tot_dict_bytes);
  return 0;
}
