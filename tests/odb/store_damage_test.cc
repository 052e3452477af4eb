// Damage and its repair: a flipped byte in an object or an index table is
// a fault audit reports; reindex rebuilds what the objects give and never
// adopts damage; the same bytes written again replace a damaged object
// (issue 25). The fixtures are store_fixture.h's.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "index/lmdb.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/manifest.h"
#include "odb/dict.h"
#include "odb/frame.h"
#include "odb/store_fixture.h"
#include "odb/tables.h"
#include "testutil/string_file.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

// objects rows (store format 12): keyed by the object's number, each the
// digest and then the frame.
std::string RowKey(Store& s, const Digest& d) {
  auto info = s.Stat(d);
  return info.ok() && *info ? odb::NumberKey((*info)->number) : std::string();
}
// A held object's frame as its row holds it (nullopt: no row, or no frame).
Result<std::optional<std::string>> GetFrame(Store& s, const Digest& d) {
  KI_ASSIGN_OR_RETURN(auto v, s.Get(odb::kObjects, RowKey(s, d)));
  if (!v || v->size() <= 32) return std::optional<std::string>();
  return std::optional<std::string>(v->substr(32));
}
Status PutFrame(Batch& b, Store& s, const Digest& d, const std::string& frame) {
  return b.Put(odb::kObjects, RowKey(s, d), odb::ObjectsValue(d, frame));
}

using test::SeedTest;
using test::StoreTest;

// The part of a docs or namesof key that stands for a held object: its
// number (store format 10).
std::string KeyPartOf(Store& store, const Digest& d) {
  auto info = store.Stat(d);
  EXPECT_TRUE(info.ok() && info->has_value()) << d.str();
  return info.ok() && *info ? odb::ObjectKeyPart(**info) : std::string();
}

TEST_F(StoreTest, FlippedByteInLooseObjectIsCorruption) {
  Digest d = PutBlob(RandomText(100000, 5));
  std::string path = odb::LoosePath(store_->path(), d);
  std::string frame = test::ReadFileOrDie(path);
  frame[frame.size() / 2] ^= 0x01;
  ::chmod(path.c_str(), 0644);
  test::WriteFileOrDie(path, frame);
  auto r = store_->Read(d);
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  ASSERT_EQ(audit->faults.size(), 1u);
  EXPECT_EQ(audit->faults[0].digest, d);
  auto v = store_->Verify(d);
  ASSERT_OK(v);
  EXPECT_TRUE(v->HasFaults());
}

TEST_F(StoreTest, FlippedByteInIndexedObjectIsCorruption) {
  Digest d = PutBlob("a small object kept inside the index database");
  auto frame = GetFrame(*store_, d);
  ASSERT_OK(frame);
  ASSERT_TRUE(frame->has_value());
  std::string bad = **frame;
  bad.back() ^= 0x20;
  auto b = store_->NewBatch();
  ASSERT_OK(b);
  ASSERT_OK(PutFrame(**b, *store_, d, bad));
  ASSERT_OK((*b)->Commit());
  auto r = store_->Read(d);
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find(d.str()), std::string::npos);
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  ASSERT_EQ(audit->faults.size(), 1u);
  EXPECT_EQ(audit->faults[0].digest, d);
}

// A damaged loose object is never adopted (issue 25.3): reindex leaves it
// out of the index, and audit reports it as a fault, not a note, until a
// good copy replaces it; a write of the same bytes (PutBlob, or a streamed
// put) replaces the damaged file instead of keeping it.
TEST_F(StoreTest, DamagedLooseObjectStaysAFaultUntilAGoodCopyReplacesIt) {
  for (bool streamed : {false, true}) {
    SCOPED_TRACE(streamed);
    Reopen();
    const std::string big = RandomText(70000, streamed ? 21 : 20);
    const Digest d = PutBlob(big);
    const std::string path = odb::LoosePath(store_->path(), d);
    std::string frame = test::ReadFileOrDie(path);
    frame[frame.size() / 2] ^= 0x20;
    test::WriteFileOrDie(path, frame);

    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    auto is_this = [&](const CheckEntry& e) { return e.digest == d && e.state == CheckState::kCorrupt; };
    EXPECT_TRUE(std::any_of(reindexed->faults.begin(), reindexed->faults.end(), is_this));
    for (const auto& n : reindexed->notes) EXPECT_EQ(n.find("adopts it"), std::string::npos) << n;
    EXPECT_TRUE(store_->Read(d).status().IsNotFound());
    auto again = store_->Audit();
    ASSERT_OK(again);
    ASSERT_TRUE(std::any_of(again->faults.begin(), again->faults.end(), is_this));
    const CheckEntry& f = *std::find_if(again->faults.begin(), again->faults.end(), is_this);
    EXPECT_NE(f.detail.find("ki pull"), std::string::npos) << f.detail;

    auto b = store_->NewBatch();
    ASSERT_OK(b);
    if (streamed) {
      test::StringFile in(big);
      ASSERT_OK((*b)->PutBlobStream(in, "text/plain", "good.txt"));
    } else {
      ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    }
    ASSERT_OK((*b)->Commit());
    EXPECT_EQ(*store_->Read(d), big);
    auto clean = store_->Audit();
    ASSERT_OK(clean);
    EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().detail;
  }
}

// A damaged object that is still indexed (no reindex yet), kept in LMDB or
// loose, by a plain write or a streamed one: audit's fault says what to
// run, and writing the same bytes again replaces the damaged copy instead
// of skipping it as held (it was "existed", and the fault stayed). After a
// reindex, a damaged frame kept in LMDB is a fault that says what to run
// too (it said only "object bytes in the index database without an index
// entry"), and the same bytes written again make the store clean.
TEST_F(StoreTest, DamagedIndexedObjectIsReplacedByTheSameBytes) {
  for (bool loose : {false, true}) {
    for (bool streamed : {false, true}) {
      for (bool reindexed : {false, true}) {
        SCOPED_TRACE(testing::Message() << "loose " << loose << " streamed " << streamed << " reindexed " << reindexed);
        Reopen();
        const std::string bytes = RandomText(loose ? 70000 : 900, 30 + 4 * loose + 2 * streamed + reindexed);
        const Digest d = PutBlob(bytes);
        auto info = store_->Stat(d);
        ASSERT_OK(info);
        ASSERT_EQ((*info)->location, loose ? Location::kLoose : Location::kIndex);
        if (loose) {
          const std::string path = odb::LoosePath(store_->path(), d);
          std::string frame = test::ReadFileOrDie(path);
          frame[frame.size() / 2] ^= 0x20;
          ::chmod(path.c_str(), 0644);
          test::WriteFileOrDie(path, frame);
        } else {
          auto frame = GetFrame(*store_, d);
          ASSERT_OK(frame);
          std::string bad = **frame;
          bad[bad.size() / 2] ^= 0x20;
          auto b = store_->NewBatch();
          ASSERT_OK(b);
          ASSERT_OK(PutFrame(**b, *store_, d, bad));
          ASSERT_OK((*b)->Commit());
        }
        if (reindexed) {
          auto r = store_->Reindex();
          ASSERT_OK(r);
          ASSERT_FALSE(r->notes.empty());
          EXPECT_NE(r->notes.front().find("a fault until a good copy replaces it"), std::string::npos)
              << r->notes.front();
        }
        auto damaged = store_->Audit();
        ASSERT_OK(damaged);
        ASSERT_EQ(damaged->faults.size(), 1u);
        const CheckEntry& f = damaged->faults[0];
        EXPECT_EQ(f.digest, d);
        EXPECT_NE(f.detail.find("ki add of the same bytes"), std::string::npos) << f.detail;
        EXPECT_NE(f.detail.find("ki pull"), std::string::npos) << f.detail;
        if (!loose && reindexed) {
          EXPECT_EQ(f.what, "blob text/plain frame");
        }
        EXPECT_FALSE(store_->Read(d).ok());

        auto b = store_->NewBatch();
        ASSERT_OK(b);
        Result<PutResult> put = Status::OK();
        if (streamed) {
          test::StringFile in(bytes);
          put = (*b)->PutBlobStream(in, "text/plain", "again.txt");
        } else {
          put = (*b)->PutBlob(bytes, "text/plain");
        }
        ASSERT_OK(put);
        EXPECT_FALSE(put->existed) << "a damaged copy is not a held object";
        ASSERT_OK((*b)->Commit());
        auto read = store_->Read(d);
        ASSERT_OK(read);
        EXPECT_EQ(*read, bytes);
        auto clean = store_->Audit();
        ASSERT_OK(clean);
        EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
        EXPECT_TRUE(clean->notes.empty()) << clean->notes.front();
        // Held and intact now: the next write of it is "existed" again.
        auto again = store_->NewBatch();
        ASSERT_OK(again);
        auto third = (*again)->PutBlob(bytes, "text/plain");
        ASSERT_OK(third);
        EXPECT_TRUE(third->existed);
      }
    }
  }
}

// Every table of the store's own is compared with what the objects (and
// the recorded names) give (issue 25.2): an entry deleted from kinds, refs,
// namesof, nameset or docs, or a media type changed in meta, is a
// fault audit names by its table, and reindex restores the entry.
TEST_F(SeedTest, AuditComparesEveryStoreTableAndReindexRestoresIt) {
  const Digest blob = AddSeedYamlAndBlob();
  ASSERT_FALSE(HasFailure());
  auto first_key = [&](std::string_view table) {
    std::optional<std::pair<std::string, std::string>> kv;
    EXPECT_OK(store_->Scan(table, "", [&](std::string_view k, std::string_view v) {
      kv.emplace(std::string(k), std::string(v));
      return false;
    }));
    return kv;
  };
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  ASSERT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
  for (std::string_view table : {odb::kRefs, odb::kNamesOf, odb::kNameSet, odb::kDocs, odb::kMeta, odb::kDicts}) {
    SCOPED_TRACE(std::string(table));
    auto kv = first_key(table);
    ASSERT_TRUE(kv.has_value());
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      if (table == odb::kMeta) {
        // The blob's entry, its media type changed (the frame still says text/plain).
        auto meta = store_->Get(odb::kMeta, blob.raw());
        ASSERT_OK(meta);
        ASSERT_TRUE(meta->has_value());
        std::string v = **meta;
        v.back() ^= 0x01;
        kv.emplace(std::string(blob.raw()), **meta);
        ASSERT_OK((*b)->Put(odb::kMeta, blob.raw(), v));
      } else {
        ASSERT_OK((*b)->Delete(table, kv->first));
      }
      ASSERT_OK((*b)->Commit());
    }
    auto damaged = store_->Audit();
    ASSERT_OK(damaged);
    ASSERT_FALSE(damaged->faults.empty());
    const std::string expect = table == odb::kMeta ? "blob " : std::string(table) + " ";
    EXPECT_TRUE(std::any_of(damaged->faults.begin(), damaged->faults.end(), [&](const CheckEntry& e) {
      return e.what.rfind(expect, 0) == 0;
    })) << damaged->faults.front().what << ": " << damaged->faults.front().detail;
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
    auto back = store_->Get(table, kv->first);
    ASSERT_OK(back);
    ASSERT_TRUE(back->has_value());
    EXPECT_EQ(**back, kv->second);
  }
}

// Every byte of the store's own tables is compared with what the objects
// and the recorded names give, and reindex restores each table whole (issue
// 25.2): a refs key no manifest gives, a meta entry's stored size, a lost
// latest mark (format 11: what a lost names entry was), a mark on an
// object the store does not hold or a second one, a namesof, nameset or
// docs entry naming an object the store does not hold, a nameset key that
// is not `Kind/name`, a nameset value that is neither empty nor the mark.
// Each was clean to audit, or not mended by reindex (a lost names entry
// lost the name: reindex dropped barenames' mirror instead of pointing the
// name again).
TEST_F(SeedTest, EveryStoreTableByteIsComparedAndReindexRestoresTheWholeTable) {
  const Digest blob = AddSeedYamlAndBlob();
  ASSERT_FALSE(HasFailure());
  const std::vector<std::string_view> tables = {odb::kMeta,    odb::kRefs,    odb::kDicts,
                                                odb::kNamesOf, odb::kNameSet, odb::kDocs};
  using Dump = std::map<std::string, std::map<std::string, std::string>>;
  auto dump = [&]() {
    Dump out;
    for (auto t : tables) {
      auto& m = out[std::string(t)];
      EXPECT_OK(store_->Scan(t, "", [&](std::string_view k, std::string_view v) {
        m.emplace(std::string(k), std::string(v));
        return true;
      }));
    }
    return out;
  };
  const Dump before = dump();
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  ASSERT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
  auto first = [&](std::string_view table) { return *before.at(std::string(table)).begin(); };
  // The first name's "Kind/name" and its latest holder's raw digest (what
  // the first names entry was before format 11).
  auto first_latest = [&]() -> std::pair<std::string, std::string> {
    for (const auto& [k, v] : before.at(std::string(odb::kNameSet)))
      if (v == odb::kNameLatest) return {k.substr(0, k.size() - 32), k.substr(k.size() - 32)};
    ADD_FAILURE() << "no latest holder marked";
    return {};
  };
  const auto [latest_name, latest_holder] = first_latest();
  const Digest unheld = Sha256Of("an object this store does not hold");
  struct Damage {
    std::string name;
    std::string expect;  // a fault's `what` starts with it
    std::function<void(Batch&)> apply;
  };
  std::vector<Damage> cases = {
      {"refs key no manifest gives", "refs ",
       [&](Batch& b) {
         std::string k = first(odb::kRefs).first;
         k[35] ^= 0x01;  // the referrer's number (format 12: 4 bytes after the target)
         ASSERT_OK(b.Put(odb::kRefs, k, ""));
       }},
      {"meta stored size", "blob text/plain",
       [&](Batch& b) {
         const std::string v = before.at(std::string(odb::kMeta)).at(std::string(blob.raw()));
         ObjectInfo info;
         std::optional<int64_t> added;
         ASSERT_TRUE(odb::UnpackMeta(blob.raw(), v, &info, &added));
         info.stored_size ^= 0x01;  // a varint now: its byte depends on the sizes before it
         ASSERT_OK(b.Put(odb::kMeta, blob.raw(), odb::PackMeta(info, added.value_or(0))));
       }},
      {"latest mark lost", "nameset ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, latest_name + latest_holder, "")); }},
      {"latest mark on an unheld object", "name ",
       [&](Batch& b) {
         ASSERT_OK(b.Put(odb::kNameSet, latest_name + latest_holder, ""));
         ASSERT_OK(b.Put(odb::kNameSet, latest_name + std::string(unheld.raw()), odb::kNameLatest));
       }},
      {"nameset value damaged", "nameset ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, latest_name + latest_holder, "\x07")); }},
      {"namesof of an unheld object", "namesof ",
       // A number no object has (namesof keys hold the holder's number).
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNamesOf, odb::NumberKey(999999) + "BenchmarkRun/forged", "")); }},
      {"nameset of an unheld object", "name ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, "BenchmarkRun/forged" + std::string(unheld.raw()), "")); }},
      {"latest mark under another name", "nameset ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, latest_name + "-forged" + latest_holder, odb::kNameLatest)); }},
      {"latest mark of no kind", "nameset ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, "BenchmarkRuX/forged" + latest_holder, odb::kNameLatest)); }},
      {"nameset key of no kind", "nameset ",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kNameSet, "BenchmarkRuX/forged" + latest_holder, "")); }},
      // A flipped byte in the name part of a key, the kind still valid:
      // no document gives the name (reindex mirrored it into the other
      // table, and audit was clean after).
      {"nameset key's name flipped", "nameset ",
       [&](Batch& b) {
         std::string k = first(odb::kNameSet).first;
         ASSERT_OK(b.Delete(odb::kNameSet, k));
         k[k.find('/') + 1] ^= 0x01;
         ASSERT_OK(b.Put(odb::kNameSet, k, ""));
       }},
      {"namesof key's name flipped", "namesof ",
       [&](Batch& b) {
         std::string k = first(odb::kNamesOf).first;
         ASSERT_OK(b.Delete(odb::kNamesOf, k));
         k[k.find('/', 4) + 1] ^= 0x01;
         ASSERT_OK(b.Put(odb::kNamesOf, k, ""));
       }},
      {"nameset and namesof agree on a name no document gives", "nameset ",
       [&](Batch& b) {
         ASSERT_OK(b.Put(odb::kNameSet, latest_name + "-forged" + latest_holder, ""));
         ASSERT_OK(b.Put(odb::kNamesOf, KeyPartOf(*store_, Digest::FromRaw(latest_holder)) + latest_name + "-forged",
                         ""));
       }},
      {"latest mark moved to another held manifest", "nameset ",
       [&](Batch& b) {
         for (const auto& [other, meta] : before.at(std::string(odb::kMeta))) {
           ObjectInfo info;
           if (other != latest_holder && odb::UnpackMeta(other, meta, &info) && info.type == ObjectType::kManifest) {
             ASSERT_OK(b.Put(odb::kNameSet, latest_name + latest_holder, ""));
             ASSERT_OK(b.Put(odb::kNameSet, latest_name + other, odb::kNameLatest));
             return;
           }
         }
         FAIL() << "one manifest only";
       }},
      {"a second latest mark", "nameset ",
       [&](Batch& b) {
         for (const auto& [other, meta] : before.at(std::string(odb::kMeta))) {
           ObjectInfo info;
           if (other != latest_holder && odb::UnpackMeta(other, meta, &info) && info.type == ObjectType::kManifest) {
             ASSERT_OK(b.Put(odb::kNameSet, latest_name + other, odb::kNameLatest));
             return;
           }
         }
         FAIL() << "one manifest only";
       }},
      {"docs value unheld", "document link",
       [&](Batch& b) { ASSERT_OK(b.Put(odb::kDocs, first(odb::kDocs).first, unheld.raw())); }},
      {"docs key unheld", "document link",
       [&](Batch& b) {
         auto [k, v] = first(odb::kDocs);
         ASSERT_OK(b.Delete(odb::kDocs, k));
         ASSERT_OK(b.Put(odb::kDocs, odb::NumberKey(999999), v));
       }},
  };
  for (const Damage& c : cases) {
    SCOPED_TRACE(c.name);
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      c.apply(**b);
      ASSERT_OK((*b)->Commit());
    }
    auto damaged = store_->Audit();
    ASSERT_OK(damaged);
    ASSERT_FALSE(damaged->faults.empty()) << "audit is clean";
    EXPECT_TRUE(std::any_of(damaged->faults.begin(), damaged->faults.end(), [&](const CheckEntry& e) {
      return e.what.rfind(c.expect, 0) == 0;
    })) << damaged->faults.front().what << ": " << damaged->faults.front().detail;
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
    const Dump after = dump();
    for (auto t : tables) {
      const auto& want = before.at(std::string(t));
      const auto& got = after.at(std::string(t));
      EXPECT_TRUE(want == got) << t << ": " << want.size() << " entries before, " << got.size() << " after reindex";
    }
  }
}

// Names come from documents, every one the store holds and not only the
// one docs links (issue 25.2): a manifest added from a YAML document, then
// from a JSON one that names it otherwise, keeps both names. Both entries
// of the first name lost: audit reports them and reindex records the name
// again from the unlinked YAML document (it re-recorded names from linked
// documents only, so the name was gone). A name no document gives, its two
// entries agreeing, is a fault, and reindex removes it.
TEST_F(SeedTest, NamesAreCheckedAgainstEveryDocumentTheStoreHolds) {
  AddInput yaml;
  yaml.source = "operation-spec.yaml";
  yaml.bytes = test::ReadFileOrDie(test::DataPath("kernelindex/examples/operation-spec.yaml"));
  auto first = AddInputs(*store_, {yaml});
  ASSERT_OK(first);
  ASSERT_EQ(first->size(), 1u);
  const Digest spec = (*first)[0].digest;
  auto doc = ParseDocument(yaml.bytes, DocFormat::kYaml, "operation-spec.yaml");
  ASSERT_OK(doc);
  (*doc)["metadata"]["name"] = "rmsnorm-h4096-renamed";
  AddInput json;
  json.source = "operation-spec.json";
  json.bytes = doc->dump(2) + "\n";
  auto second = AddInputs(*store_, {json});
  ASSERT_OK(second);
  ASSERT_EQ((*second)[0].digest, spec);
  auto names = store_->NamesOf(spec);
  ASSERT_OK(names);
  ASSERT_EQ(names->size(), 2u);
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  ASSERT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
  const std::string yaml_name = "OperationSpec/rmsnorm-h4096";
  auto audit_names = [&](std::string_view expect) {
    auto damaged = store_->Audit();
    ASSERT_OK(damaged);
    EXPECT_TRUE(std::any_of(damaged->faults.begin(), damaged->faults.end(), [&](const CheckEntry& e) {
      return e.what.rfind(std::string(expect), 0) == 0;
    })) << (damaged->faults.empty() ? std::string("audit is clean") : damaged->faults.front().what);
  };
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->Delete(odb::kNameSet, yaml_name + std::string(spec.raw())));
    ASSERT_OK((*b)->Delete(odb::kNamesOf, KeyPartOf(*store_, spec) + yaml_name));
    ASSERT_OK((*b)->Commit());
  }
  audit_names("nameset " + yaml_name);
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
  auto back = store_->NamesOf(spec);
  ASSERT_OK(back);
  EXPECT_EQ(*back, *names);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->Put(odb::kNameSet, "OperationSpec/forged" + std::string(spec.raw()), ""));
    ASSERT_OK((*b)->Put(odb::kNamesOf, KeyPartOf(*store_, spec) + "OperationSpec/forged", ""));
    ASSERT_OK((*b)->Commit());
  }
  audit_names("namesof OperationSpec/forged");
  reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
  back = store_->NamesOf(spec);
  ASSERT_OK(back);
  EXPECT_EQ(*back, *names);
  EXPECT_FALSE(store_->Resolve("OperationSpec/forged").ok());
}

// A lost latest mark of a name several manifests hold (issue 25.2c; a lost
// names entry before format 11): the store records which holder is latest
// in that mark alone, and when each
// object was first added (its meta entry, whole seconds); it records neither when
// a held manifest was named again nor the order within a second. So
// reindex points the name at the holder added last, and of several added
// in the same second at the greatest digest (format.md, "Index"): the
// documented rule, tested here on both of its branches, and the add of a
// holder's document that makes it the latest again.
TEST_F(SeedTest, ALostNameOfSeveralHoldersPointsAtTheOneAddedLast) {
  const std::string name = "BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  const Digest first = AddSeed()[0].digest;
  Json bundle = Json::parse(test::ReadFileOrDie(
      test::DataPath("kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json")));
  bundle["run"]["spec"]["timing"]["latencyNs"]["mean"] = 350000;
  AddInput in;
  in.source = "second.manifest.json";
  in.bytes = bundle.dump();
  auto r = AddInputs(*store_, {in});
  ASSERT_OK(r);
  const Digest second = (*r)[0].digest;
  ASSERT_NE(first, second);
  // The one holder marked latest (none, or several, is nullopt).
  auto latest = [&]() -> std::optional<Digest> {
    std::vector<Digest> marked;
    EXPECT_OK(store_->Scan(odb::kNameSet, name, [&](std::string_view k, std::string_view v) {
      if (k.size() == name.size() + 32 && v == odb::kNameLatest) marked.push_back(Digest::FromRaw(k.substr(name.size())));
      return true;
    }));
    if (marked.size() != 1) return std::nullopt;
    return marked[0];
  };
  ASSERT_EQ(latest(), second);
  auto lose_name_at = [&](int64_t first_added, int64_t second_added) {
    std::vector<std::pair<Digest, std::string>> dated;
    for (const auto& [d, t] : {std::pair{first, first_added}, std::pair{second, second_added}}) {
      auto v = store_->Get(odb::kMeta, d.raw());
      ASSERT_OK(v);
      ASSERT_TRUE(v->has_value());
      ObjectInfo info;
      ASSERT_TRUE(odb::UnpackMeta(d.raw(), **v, &info));
      dated.emplace_back(d, odb::PackMeta(info, t));
    }
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    for (const auto& [d, v] : dated) ASSERT_OK((*b)->Put(odb::kMeta, d.raw(), v));
    for (const Digest& d : {first, second}) ASSERT_OK((*b)->Put(odb::kNameSet, name + std::string(d.raw()), ""));
    ASSERT_OK((*b)->Commit());
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
  };
  // Added in one second: the greatest digest, whichever was latest.
  lose_name_at(1764633600, 1764633600);
  EXPECT_EQ(latest(), std::max(first, second));
  // Added in different seconds: the one added last.
  lose_name_at(1764633601, 1764633600);
  EXPECT_EQ(latest(), first);
  lose_name_at(1764633600, 1764633601);
  EXPECT_EQ(latest(), second);
  // The first holder named again (its document added again) is the latest,
  // and stays so while the names entry is there; meta keeps its first
  // time, so a reindex after a loss would point at the second again.
  ASSERT_EQ(AddSeed().size(), 3u);
  EXPECT_EQ(latest(), first);
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_EQ(latest(), first);
}

// A version 1 frame (no header check, stores written before 2026-12-01)
// whose media type byte was flipped, with an index entry that says the
// same (as a reindex on the old code left it): the manifest's content says
// what a manifest's frame must say, so audit reports it (it was clean) and
// reindex does not index it (it copied the wrong media type into meta);
// the same bytes added again make the store clean. An intact version 1
// frame is still read and indexed.
TEST_F(SeedTest, AVersion1ManifestFrameIsCheckedAgainstItsContent) {
  ASSERT_EQ(AddSeed().size(), 3u);
  const Digest run = *Digest::Parse("sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f");
  auto raw = store_->Read(run);
  ASSERT_OK(raw);
  auto info = store_->Stat(run);
  ASSERT_OK(info);
  ASSERT_EQ((*info)->location, Location::kIndex);
  for (bool flipped : {false, true}) {
    SCOPED_TRACE(flipped);
    std::string mt = (*info)->media_type;
    if (flipped) mt.back() ^= 0x20;  // ...+json -> ...+jsoN
    std::string v1 = "KIOB";
    v1 += char(1);
    v1 += char(ObjectType::kManifest);
    v1 += char(uint8_t(*(*info)->kind));
    v1 += char(0);  // flags: the raw bytes follow
    for (int i = 0; i < 8; ++i) v1 += char((raw->size() >> (8 * i)) & 0xff);
    v1 += char(mt.size() & 0xff);
    v1 += char(mt.size() >> 8);
    v1 += mt + *raw;
    ObjectInfo entry = **info;
    entry.media_type = mt;
    entry.stored_size = v1.size();
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      ASSERT_OK(PutFrame(**b, *store_, run, v1));
      ASSERT_OK((*b)->Put(odb::kMeta, run.raw(), odb::PackMeta(entry)));
      ASSERT_OK((*b)->Commit());
    }
    auto is_run = [&](const CheckEntry& e) { return e.digest == run && e.state == CheckState::kCorrupt; };
    auto audit = store_->Audit();
    ASSERT_OK(audit);
    if (!flipped) {
      EXPECT_TRUE(audit->faults.empty()) << audit->faults.front().what << ": " << audit->faults.front().detail;
      auto again = store_->Read(run);
      ASSERT_OK(again);
      EXPECT_EQ(*again, *raw);
      auto reindexed = store_->Reindex();
      ASSERT_OK(reindexed);
      EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().detail;
      continue;
    }
    ASSERT_TRUE(std::any_of(audit->faults.begin(), audit->faults.end(), is_run)) << "audit is clean";
    const CheckEntry& f = *std::find_if(audit->faults.begin(), audit->faults.end(), is_run);
    EXPECT_NE(f.detail.find("jsoN"), std::string::npos) << f.detail;
    EXPECT_NE(f.detail.find("ki add of the same bytes"), std::string::npos) << f.detail;
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(std::any_of(reindexed->faults.begin(), reindexed->faults.end(), is_run));
    auto stat = store_->Stat(run);
    ASSERT_OK(stat);
    EXPECT_FALSE(stat->has_value()) << "reindex indexed it as " << (*stat)->media_type;
    ASSERT_EQ(AddSeed().size(), 3u);
    auto clean = store_->Audit();
    ASSERT_OK(clean);
    EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
    auto back = store_->Stat(run);
    ASSERT_OK(back);
    ASSERT_TRUE(back->has_value());
    EXPECT_EQ((*back)->media_type, (*info)->media_type);
  }
}

// A version 1 blob frame (no header check) and its index entry are each
// other's only cover of the media type (a blob's content does not say it;
// issue 25.2): a flipped byte in either is a fault of the object, and
// reindex keeps the entry's media type instead of copying the header's
// into the index (which left audit clean with the wrong type when the
// frame's byte was the flipped one); the same bytes added again, with the
// right type, make the store clean. An intact version 1 blob frame is read
// and reindexed as it is.
TEST_F(StoreTest, AVersion1BlobFramesMediaTypeAndItsIndexEntryCoverEachOther) {
  const std::string raw = "a small blob kept in the index database\n";
  for (int flipped : {0, 1, 2}) {  // none, the frame's byte, the entry's
    SCOPED_TRACE(flipped);
    Reopen();
    const Digest d = PutBlob(raw);
    auto info = store_->Stat(d);
    ASSERT_OK(info);
    ASSERT_EQ((*info)->location, Location::kIndex);
    const std::string good = "text/plain", bad = "text/plaiN";
    const std::string frame_mt = flipped == 1 ? bad : good, entry_mt = flipped == 2 ? bad : good;
    std::string v1 = "KIOB";
    v1 += char(1);
    v1 += char(ObjectType::kBlob);
    v1 += char(0);  // kind
    v1 += char(0);  // flags: the raw bytes follow
    for (int i = 0; i < 8; ++i) v1 += char((raw.size() >> (8 * i)) & 0xff);
    v1 += char(frame_mt.size() & 0xff);
    v1 += char(frame_mt.size() >> 8);
    v1 += frame_mt + raw;
    ObjectInfo entry = **info;
    entry.media_type = entry_mt;
    entry.stored_size = v1.size();
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      ASSERT_OK(PutFrame(**b, *store_, d, v1));
      ASSERT_OK((*b)->Put(odb::kMeta, d.raw(), odb::PackMeta(entry)));
      ASSERT_OK((*b)->Commit());
    }
    auto is_this = [&](const CheckEntry& e) { return e.digest == d && e.state == CheckState::kCorrupt; };
    auto audit = store_->Audit();
    ASSERT_OK(audit);
    if (!flipped) {
      EXPECT_TRUE(audit->faults.empty()) << audit->faults.front().what << ": " << audit->faults.front().detail;
      auto reindexed = store_->Reindex();
      ASSERT_OK(reindexed);
      EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().detail;
      auto again = store_->Read(d);
      ASSERT_OK(again);
      EXPECT_EQ(*again, raw);
      continue;
    }
    ASSERT_TRUE(std::any_of(audit->faults.begin(), audit->faults.end(), is_this)) << "audit is clean";
    const CheckEntry& f = *std::find_if(audit->faults.begin(), audit->faults.end(), is_this);
    EXPECT_NE(f.detail.find("version 1 frame has no header check"), std::string::npos) << f.detail;
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(std::any_of(reindexed->faults.begin(), reindexed->faults.end(), is_this)) << "clean after reindex";
    EXPECT_TRUE(std::any_of(reindexed->notes.begin(), reindexed->notes.end(), [&](const std::string& n) {
      return n.find("the entry's is kept") != std::string::npos;
    }));
    auto stat = store_->Stat(d);
    ASSERT_OK(stat);
    ASSERT_TRUE(stat->has_value());
    EXPECT_EQ((*stat)->media_type, entry_mt);
    PutBlob(raw, good);
    auto clean = store_->Audit();
    ASSERT_OK(clean);
    EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
    auto back = store_->Stat(d);
    ASSERT_OK(back);
    EXPECT_EQ((*back)->media_type, good);
    auto frame = GetFrame(*store_, d);
    ASSERT_OK(frame);
    ASSERT_TRUE(frame->has_value());
    EXPECT_GE(uint8_t((**frame)[4]), odb::kFrameVersion) << "written anew in the current frame version";
  }
}

// Frames compressed with a zstd dictionary (frame version 3): the batch
// that writes the first one stores its dictionary; a dictionary that is
// lost or damaged is a fault that names it (once, with the number of
// objects that need it), every read of such an object says which
// dictionary it lacks, and reindex stores the built-in dictionary again.
TEST_F(SeedTest, ALostOrDamagedDictionaryIsANamedFaultAndReindexRestoresIt) {
  ASSERT_EQ(AddSeed().size(), 3u);
  const Digest run = *Digest::Parse("sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f");
  const std::string canonical = *store_->Read(run);
  std::vector<ObjectInfo> dicts;
  ASSERT_OK(store_->ForEachObject([&](const ObjectInfo& info) {
    if (odb::IsDictionary(info)) dicts.push_back(info);
    return true;
  }));
  ASSERT_FALSE(dicts.empty()) << "the seed's frames use built-in dictionaries";
  {
    auto frame = GetFrame(*store_, run);
    ASSERT_OK(frame);
    ASSERT_TRUE(frame->has_value());
    auto fh = odb::ParseFrameHeader(**frame, "run");
    ASSERT_OK(fh);
    ASSERT_NE(fh->dict_id, 0u) << "the run's frame is compressed with a dictionary";
  }
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  ASSERT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
  // The run's dictionary: the one its frame names.
  auto h = odb::ParseFrameHeader(**GetFrame(*store_, run), "run");
  ASSERT_OK(h);
  auto filed = store_->Get(odb::kDicts, odb::DictKey(h->dict_id));
  ASSERT_OK(filed);
  ASSERT_TRUE(filed->has_value());
  const Digest dict = Digest::FromRaw(**filed);
  const std::string name = odb::DictionaryName(h->dict_id);
  for (const char* damage : {"lost", "damaged"}) {
    SCOPED_TRACE(damage);
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      if (std::string(damage) == "lost") {
        ASSERT_OK((*b)->Delete(odb::kObjects, RowKey(*store_, dict)));
        ASSERT_OK((*b)->Delete(odb::kMeta, dict.raw()));
      } else {
        // In LMDB, or loose (this fixture's loose threshold is 4 KiB).
        auto frame = GetFrame(*store_, dict);
        ASSERT_OK(frame);
        const std::string loose = odb::LoosePath(dir_.Join(".ki"), dict);
        std::string bad = frame->has_value() ? **frame : test::ReadFileOrDie(loose);
        bad[bad.size() / 2] ^= 0x04;
        if (frame->has_value()) {
          ASSERT_OK(PutFrame(**b, *store_, dict, bad));
        } else {
          std::filesystem::permissions(loose, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
          test::WriteFileOrDie(loose, bad);
        }
      }
      ASSERT_OK((*b)->Commit());
    }
    Reopen();  // a fresh store: nothing cached from before the damage
    const bool lost = std::string(damage) == "lost";
    // A lost dictionary makes every object that needs it unreadable. A
    // damaged one, those whose bytes it then decodes wrongly (the object's
    // own hash finds that, then the dictionary's is checked): a flipped
    // byte that the run's frame does not use leaves the run readable.
    auto r = store_->Read(run);
    if (lost || !r.ok()) {
      ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
      EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().message();
      EXPECT_NE(r.status().message().find("reindex restores it"), std::string::npos) << r.status().message();
      auto verify = store_->Verify(run);
      ASSERT_OK(verify);
      EXPECT_TRUE(verify->HasFaults());
    } else {
      EXPECT_EQ(*r, canonical);
    }
    auto audit = store_->Audit();
    ASSERT_OK(audit);
    if (lost || !r.ok()) {
      auto named = std::find_if(audit->faults.begin(), audit->faults.end(),
                                [&](const CheckEntry& e) { return e.what == name; });
      ASSERT_NE(named, audit->faults.end()) << audit->faults.front().what << ": " << audit->faults.front().detail;
      EXPECT_EQ(named->digest, dict);
      EXPECT_NE(named->detail.find("cannot be read"), std::string::npos) << named->detail;
      EXPECT_NE(named->detail.find(lost ? "does not hold" : "damaged"), std::string::npos) << named->detail;
    }
    if (!lost) {
      // The dictionary object itself is a fault of its own, by its digest.
      EXPECT_TRUE(std::any_of(audit->faults.begin(), audit->faults.end(), [&](const CheckEntry& e) {
        return e.digest == dict && e.what.find("zstd-dictionary") != std::string::npos;
      })) << audit->faults.front().what << ": " << audit->faults.front().detail;
    }
    auto reindexed = store_->Reindex();
    ASSERT_OK(reindexed);
    EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
    Reopen();
    auto back = store_->Read(run);
    ASSERT_OK(back);
    EXPECT_EQ(*back, canonical);
    EXPECT_OK(store_->Read(dict).status());
  }
}

// A reindex rebuilds `dicts` from the dictionary objects alone.
TEST_F(SeedTest, ReindexRebuildsTheDictionaryTable) {
  ASSERT_EQ(AddSeed().size(), 3u);
  std::map<std::string, std::string> before;
  ASSERT_OK(store_->Scan(odb::kDicts, "", [&](std::string_view k, std::string_view v) {
    before.emplace(std::string(k), std::string(v));
    return true;
  }));
  ASSERT_FALSE(before.empty());
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->DropTable(odb::kDicts));
    ASSERT_OK((*b)->Commit());
  }
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
  std::map<std::string, std::string> after;
  ASSERT_OK(store_->Scan(odb::kDicts, "", [&](std::string_view k, std::string_view v) {
    after.emplace(std::string(k), std::string(v));
    return true;
  }));
  EXPECT_EQ(after, before);
}


// Object numbers (store format 10) are recorded, and audit checks them: two
// meta entries that claim one number and a seq not above every number are
// faults; reindex gives each object the number its objects row holds
// (format 12: data, not derived), so the later claimant gets its own back,
// raises seq, and finds that object's names and document link again.
TEST_F(SeedTest, ObjectNumbersAreCheckedAndReindexMendsThem) {
  AddSeedYamlAndBlob();
  ASSERT_FALSE(HasFailure());
  auto numbered = [&]() {
    std::map<Digest, ObjectInfo> out;  // digest order
    EXPECT_OK(store_->ForEachObject([&](const ObjectInfo& i) {
      out.emplace(i.digest, i);
      return true;
    }));
    return out;
  };
  const auto before = numbered();
  ASSERT_GE(before.size(), 3u);
  std::set<uint32_t> numbers;
  for (const auto& [d, i] : before) {
    EXPECT_NE(i.number, 0u) << d.str();
    numbers.insert(i.number);
  }
  EXPECT_EQ(numbers.size(), before.size()) << "two objects share a number";
  // The later of two manifests that both have names and a document.
  std::vector<Digest> named;
  for (const auto& [d, i] : before) {
    auto names = store_->NamesOf(d);
    auto doc = store_->DocumentOf(d);
    ASSERT_OK(names);
    ASSERT_OK(doc);
    if (!names->empty() && doc->has_value()) named.push_back(d);
  }
  ASSERT_GE(named.size(), 2u);
  const Digest first = named[0], second = named[1];
  auto names_before = store_->NamesOf(second);
  auto doc_before = store_->DocumentOf(second);
  ASSERT_OK(names_before);
  ASSERT_OK(doc_before);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    auto v = store_->Get(odb::kMeta, second.raw());
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value());
    ObjectInfo i;
    std::optional<int64_t> added;
    ASSERT_TRUE(odb::UnpackMeta(second.raw(), **v, &i, &added));
    i.number = before.at(first).number;
    ASSERT_OK((*b)->Put(odb::kMeta, second.raw(), odb::PackMeta(i, added.value_or(0))));
    ASSERT_OK((*b)->Put(odb::kSeq, odb::kSeqObjects, odb::NumberKey(1)));
    ASSERT_OK((*b)->Commit());
  }
  auto damaged = store_->Audit();
  ASSERT_OK(damaged);
  auto has = [&](const AuditReport& r, const std::string& what, const std::string& detail) {
    return std::any_of(r.faults.begin(), r.faults.end(), [&](const CheckEntry& e) {
      return e.what.rfind(what, 0) == 0 && e.detail.find(detail) != std::string::npos;
    });
  };
  EXPECT_TRUE(has(*damaged, "meta " + second.str(), "is also " + first.str() + "'s"));
  EXPECT_TRUE(has(*damaged, "seq objects", "not above the largest given"));
  // The renumbered object's names are keyed by the number it no longer has.
  EXPECT_TRUE(has(*damaged, "namesof #" + std::to_string(before.at(second).number), "does not hold"));
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().what << ": " << reindexed->faults.front().detail;
  const auto after = numbered();
  ASSERT_EQ(after.size(), before.size());
  // Format 12: the renumbered object's objects row, which is data, keeps
  // its number; reindex gives it back (and every other object keeps its).
  for (const auto& [d, i] : after) EXPECT_EQ(i.number, before.at(d).number) << d.str();
  auto names_after = store_->NamesOf(second);
  auto doc_after = store_->DocumentOf(second);
  ASSERT_OK(names_after);
  ASSERT_OK(doc_after);
  EXPECT_EQ(*names_after, *names_before);
  EXPECT_EQ(*doc_after, *doc_before);
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
}

// A manifest's document kept as a frame based on the manifest (store
// format 14, format.md "Based frames"): read, audited and reindexed as any
// frame; a damaged base is a fault of the document too, named in its
// message; reindex and gc keep the base.
TEST_F(StoreTest, ADocumentBasedOnItsManifestReadsAuditsAndNamesItsDamagedBase) {
  AddInput yaml;
  yaml.source = "operation-spec.yaml";
  yaml.bytes = test::ReadFileOrDie(test::DataPath("kernelindex/examples/operation-spec.yaml"));
  auto added = AddInputs(*store_, {yaml});
  ASSERT_OK(added);
  ASSERT_EQ(added->size(), 1u);
  const Digest m = (*added)[0].digest;
  auto canonical = store_->Read(m);
  ASSERT_OK(canonical);
  // The document an export holds: the canonical body with metadata put back.
  const size_t at = canonical->find(",\"spec\"");
  ASSERT_NE(at, std::string::npos);
  AddInput json;
  json.source = "operation-spec.json";
  json.bytes = canonical->substr(0, at) + ",\"metadata\":{\"name\":\"" + (*added)[0].name +
               "\",\"title\":\"the same operation, given as JSON\"}" + canonical->substr(at);
  auto again = AddInputs(*store_, {json});
  ASSERT_OK(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].digest, m);
  const Digest doc = Sha256Of(json.bytes);
  auto frame = GetFrame(*store_, doc);
  ASSERT_OK(frame);
  ASSERT_TRUE(frame->has_value()) << "the document is not kept in the index";
  ASSERT_TRUE(odb::FrameIsBased(**frame));
  auto h = odb::ParseFrameHeader(**frame, "doc");
  ASSERT_OK(h);
  auto mi = store_->Stat(m);
  ASSERT_OK(mi);
  ASSERT_TRUE(mi->has_value());
  EXPECT_EQ(h->base->number, (*mi)->number);
  EXPECT_LT((*frame)->size(), odb::EncodeFrame(ObjectType::kBlob, 0, h->media_type, json.bytes, 3,
                                               odb::BuiltinDictionaryFor(ObjectType::kBlob, 0, h->media_type))
                                  .size());
  auto read = store_->Read(doc);
  ASSERT_OK(read);
  EXPECT_EQ(*read, json.bytes);
  auto clean = store_->Audit();
  ASSERT_OK(clean);
  EXPECT_TRUE(clean->faults.empty()) << clean->faults.front().what << ": " << clean->faults.front().detail;
  // Reindex reads the base through the index it rebuilds, and keeps the frame.
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_TRUE(reindexed->faults.empty()) << reindexed->faults.front().detail;
  auto after = GetFrame(*store_, doc);
  ASSERT_OK(after);
  ASSERT_TRUE(after->has_value());
  EXPECT_EQ(**after, **frame);
  EXPECT_EQ(*store_->Read(doc), json.bytes);

  // The manifest's frame damaged: both are faults, the document's naming it.
  auto base_frame = GetFrame(*store_, m);
  ASSERT_OK(base_frame);
  ASSERT_TRUE(base_frame->has_value());
  std::string bad = **base_frame;
  bad.back() ^= 0x20;
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK(PutFrame(**b, *store_, m, bad));
    ASSERT_OK((*b)->Commit());
  }
  auto r = store_->Read(doc);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find(m.str()), std::string::npos) << r.status().message();
  auto damaged = store_->Audit();
  ASSERT_OK(damaged);
  std::set<Digest> faulty;
  for (const CheckEntry& e : damaged->faults) faulty.insert(e.digest);
  EXPECT_TRUE(faulty.count(m));
  EXPECT_TRUE(faulty.count(doc));
  auto v = store_->Verify(doc);
  ASSERT_OK(v);
  EXPECT_TRUE(v->HasFaults());
  // The same manifest written again replaces the damaged frame: clean again.
  auto mended = AddInputs(*store_, {yaml});
  ASSERT_OK(mended);
  auto fixed = store_->Audit();
  ASSERT_OK(fixed);
  EXPECT_TRUE(fixed->faults.empty()) << fixed->faults.front().what << ": " << fixed->faults.front().detail;
  EXPECT_EQ(*store_->Read(doc), json.bytes);
}

}  // namespace
}  // namespace ki
