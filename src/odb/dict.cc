#include "odb/dict.h"

// ZSTD_createCDict_byReference and ZSTD_createDDict_byReference are in
// zstd's experimental API (stable in the 1.5 series ki needs).
#define ZSTD_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

#include <cstdio>
#include <map>

#include "ki/embedded.h"
#include "odb/frame.h"

namespace ki::odb {

Dictionary::~Dictionary() {
  ZSTD_freeDDict(ddict_);
  for (auto& [level, c] : cdicts_) ZSTD_freeCDict(c);
}

Result<std::shared_ptr<const Dictionary>> Dictionary::Load(std::string bytes, const std::string& where,
                                                          const Digest* digest) {
  const uint32_t id = DictionaryId(bytes);
  if (id == 0) return Status::InvalidInput(where + ": not a zstd dictionary (no dictionary ID in its header)");
  std::shared_ptr<Dictionary> d(new Dictionary());
  d->bytes_ = std::move(bytes);
  d->id_ = id;
  d->digest_ = digest ? *digest : Sha256Of(d->bytes_);
  // By reference: the bytes live as long as the DDict (both are ours).
  d->ddict_ = ZSTD_createDDict_byReference(d->bytes_.data(), d->bytes_.size());
  if (!d->ddict_) return Status::InvalidInput(where + ": zstd cannot load it as a dictionary");
  return std::shared_ptr<const Dictionary>(std::move(d));
}

const ZSTD_CDict* Dictionary::cdict(int level) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [l, c] : cdicts_)
    if (l == level) return c;
  ZSTD_CDict* c = ZSTD_createCDict_byReference(bytes_.data(), bytes_.size(), level);
  if (c) cdicts_.emplace_back(level, c);
  return c;
}

uint32_t DictionaryId(std::string_view bytes) {
  return bytes.size() < 8 ? 0 : ZDICT_getDictID(bytes.data(), bytes.size());
}

std::string DictionaryName(uint32_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%08x", id);
  return std::string("zstd dictionary ") + buf;
}

namespace {

// What each built-in dictionary is for, from its file name
// (src/odb/dictionaries): `manifest-<kind number>`, or one blob media type.
struct Use {
  ObjectType type;
  uint8_t kind;
  std::string media_type;  // blobs only
};
bool UseOf(std::string_view file, Use* u) {
  constexpr std::string_view kExt = ".zdict";
  if (file.size() <= kExt.size() || file.substr(file.size() - kExt.size()) != kExt) return false;
  std::string_view stem = file.substr(0, file.size() - kExt.size());
  if (stem.substr(0, 9) == "manifest-") {
    int k = 0;
    for (char c : stem.substr(9)) {
      if (c < '0' || c > '9') return false;
      k = k * 10 + (c - '0');
    }
    if (k <= 0 || k > 255) return false;
    *u = {ObjectType::kManifest, uint8_t(k), ""};
    return true;
  }
  static const std::pair<std::string_view, std::string_view> kBlobs[] = {
      {"document-json", kDocumentMediaTypeJson},
      {"catalog-facts", "application/vnd.ki.catalog.facts.v1+json"},
  };
  for (const auto& [name, mt] : kBlobs) {
    if (stem == name) {
      *u = {ObjectType::kBlob, 0, std::string(mt)};
      return true;
    }
  }
  return false;
}

struct Builtins {
  std::vector<std::shared_ptr<const Dictionary>> all;
  std::map<std::pair<uint8_t, std::string>, const Dictionary*, std::less<>> by_kind;  // (kind, "") or (0, media type)
  std::map<uint32_t, std::shared_ptr<const Dictionary>> by_id;
};

const Builtins& GetBuiltins() {
  // Never destroyed: freeing the compiled dictionaries at exit (ZSTD_freeCDict
  // of blocks over 64 KiB) made glibc consolidate the whole heap of a process
  // that had held a catalog, ~1% of `ki import kernelindex`'s CPU spent after
  // its work was done (bench/results/import-2026-12-02.md).
  static const Builtins& b = *new Builtins([] {
    Builtins out;
    size_t n = 0;
    const EmbeddedFile* files = ki_embedded_dictionaries(&n);
    for (size_t i = 0; i < n; ++i) {
      Use u;
      if (!UseOf(files[i].name, &u)) continue;  // tests/odb/dict_test.cc: every file has a use
      auto d = Dictionary::Load(std::string(files[i].data, files[i].size), files[i].name);
      if (!d.ok()) continue;
      const Dictionary* p = d->get();
      out.by_kind[{u.kind, u.media_type}] = p;
      out.by_id[p->id()] = *d;
      out.all.push_back(std::move(d).value());
    }
    return out;
  }());
  return b;
}

}  // namespace

const Dictionary* BuiltinDictionaryFor(ObjectType type, uint8_t kind, std::string_view media_type) {
  const Builtins& b = GetBuiltins();
  auto it = type == ObjectType::kManifest ? b.by_kind.find(std::pair<uint8_t, std::string>(kind, ""))
                                          : b.by_kind.find(std::pair<uint8_t, std::string>(0, std::string(media_type)));
  return it == b.by_kind.end() ? nullptr : it->second;
}

std::shared_ptr<const Dictionary> BuiltinDictionary(uint32_t id) {
  const Builtins& b = GetBuiltins();
  auto it = b.by_id.find(id);
  return it == b.by_id.end() ? nullptr : it->second;
}

}  // namespace ki::odb
