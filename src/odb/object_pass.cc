// Audit's pass over every object (LmdbStore::CheckEveryObject): each
// object's bytes read, decoded and re-hashed, each manifest parsed against
// its header, each document's name read (or, GivesRead::kLater, left to the
// caller, which reads it from the kept bytes). The decoding, hashing and parsing
// run on two threads when the machine has two cores; every read of the
// index stays on the calling thread, which holds the read snapshot (an LMDB
// transaction belongs to one thread), so both threads see one commit. The
// result is in the objects' order whatever the threads did: audit's report
// is the same on one core or two.
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <exception>
#include <thread>

#include "odb/content_check.h"
#include "odb/store_impl.h"

namespace ki::odb {

namespace {

// Objects a thread takes at a time: few enough that the two threads end
// together, many enough that taking them costs nothing.
constexpr size_t kPassChunk = 32;
// Below this many objects a second thread is not worth starting.
constexpr size_t kPassMinForThread = 256;

// KI_AUDIT_THREADS=1 keeps the pass on one thread: a test compares its
// report with the two-thread one's (they must be the same bytes).
bool OneThread() {
  const char* v = std::getenv("KI_AUDIT_THREADS");
  return v && std::string_view(v) == "1";
}

}  // namespace

bool LmdbStore::SecondAuditThread() { return std::thread::hardware_concurrency() > 1 && !OneThread(); }

bool LmdbStore::WantsContent(const ObjectInfo& info) {
  // A loose blob is streamed (Check): its bytes are not kept. Every other
  // object is decoded whole to be re-hashed, so its bytes are kept; a
  // dictionary's are needed (its ID).
  return info.type == ObjectType::kManifest || info.location != Location::kLoose || IsDictionary(info);
}

void LmdbStore::CheckContent(const ObjectInfo& info, GivesRead names, ObjectCheck* c) {
  const bool manifest = info.type == ObjectType::kManifest;
  c->read = c->e.state == CheckState::kOk && (manifest || info.location != Location::kLoose);
  if (IsDocument(info)) {
    // A fault here may still read (a wrong stored size in the entry): read
    // again, as every other reader would, on the snapshot's thread. Read
    // whole, its bytes go to VerifiedContents, where kLater's caller reads
    // them (Audit, beside step 6's thread).
    if (c->read && names == GivesRead::kLater) {
      c->gives_later = true;
    } else if (c->read) {
      c->gives = DocumentGivesOf(info, &c->raw);
    } else {
      c->gives_unread = true;
    }
  }
  if (!manifest || c->e.state != CheckState::kOk) return;
  auto m = ManifestFromCanonical(c->raw, info.digest.str());
  // The index entry agrees with the frame header (Check): both against
  // what the manifest says.
  c->agrees = m.ok() ? ContentAgreesWithHeader(info.type, info.kind ? uint8_t(*info.kind) : 0, info.media_type, &*m,
                                               info.digest.str())
                     : m.status();
  if (!c->agrees.ok()) return;
  c->refs = ExtractReferences(*m);
  c->manifest = std::make_shared<const Manifest>(std::move(m).value());
  c->raw = std::string();  // the manifest's canonical bytes
}

Result<std::vector<LmdbStore::ObjectCheck>> LmdbStore::CheckEveryObject(const std::vector<ObjectInfo>& infos,
                                                                         GivesRead names) {
  const size_t n = infos.size();
  std::vector<ObjectCheck> checks(n);
  // What needs the index, first and here: every frame read (copied out of
  // the map) with its dictionary.
  std::vector<FetchedFrame> fetched(n);
  std::vector<size_t> streamed;
  for (size_t i = 0; i < n; ++i) {
    if (Streamed(infos[i], WantsContent(infos[i]))) {
      streamed.push_back(i);
    } else {
      fetched[i] = FetchFrame(infos[i]);
    }
  }
  std::atomic<size_t> next{0};
  auto decode = [&] {
    for (size_t start; (start = next.fetch_add(kPassChunk)) < n;) {
      for (size_t i = start; i < std::min(n, start + kPassChunk); ++i) {
        const ObjectInfo& info = infos[i];
        if (Streamed(info, WantsContent(info))) continue;
        ObjectCheck& c = checks[i];
        c.e = CheckFetched(info, fetched[i], &c.raw, &c.dict_fault);
        fetched[i] = FetchedFrame();
        CheckContent(info, names, &c);
      }
    }
  };
  std::exception_ptr helper_failed;
  std::thread helper;
  if (n >= kPassMinForThread && SecondAuditThread()) {
    helper = std::thread([&] {
      try {
        decode();
      } catch (...) {
        helper_failed = std::current_exception();
        next = n;  // the other thread stops too
      }
    });
  }
  // Joined however this thread leaves (an exception of its own included).
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{helper};
  // Loose blobs stream through their files, with their dictionaries read
  // from the index: this thread's, while the other decodes.
  for (size_t i : streamed) {
    ObjectCheck& c = checks[i];
    c.e = Check(infos[i], WantsContent(infos[i]) ? &c.raw : nullptr, &c.dict_fault);
    CheckContent(infos[i], names, &c);
  }
  decode();
  if (helper.joinable()) helper.join();
  if (helper_failed) std::rethrow_exception(helper_failed);
  // What needs the index again: a document that did not read whole.
  for (size_t i = 0; i < n; ++i) {
    if (checks[i].gives_unread) checks[i].gives = DocumentGivesOf(infos[i], nullptr);
  }
  return checks;
}

}  // namespace ki::odb
