// Crash tests through a FaultInjectionEnv that drops what was not made
// durable (testutil/fault_env.h, as leveldb's fault-injection test does):
// the process dies at each step that makes data durable or visible in turn
// (an atomic file's commit, a rename, a directory or file fsync), the files
// are left as a power cut would leave them, and the store is opened again
// with the real Env. Then: audit is clean, every object of a batch whose
// commit returned is readable, and of the batch that was cut, either all or
// nothing is in the index. LMDB's own files are outside the Env (LMDB
// fsyncs its commits itself): what is tested is that ki's own files (loose
// objects, scratch files, FORMAT, directories) are durable before the index
// names them.
#include <filesystem>
#include <map>
#include <random>

#include "ki/store.h"
#include "odb/tables.h"
#include "testutil/fault_env.h"
#include "testutil/string_file.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::FaultInjectionEnv;
using test::StringFile;
using test::TempDir;

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char('a' + g() % 26);
  return s;
}

StoreOptions Options(Env* env) {
  StoreOptions o;
  o.env = env;
  o.loose_threshold = 4096;  // small, so that loose files are written too
  return o;
}

// What one batch puts: a small object (LMDB), two loose ones (one of them
// into a fan-out directory of its own), and two streamed ones through
// scratch files under objects/incoming (a pipe's copy, then the frame).
struct BatchPlan {
  std::vector<std::string> whole, streamed;
};

BatchPlan Plan(uint32_t seed) {
  BatchPlan p;
  p.whole = {Random(100, seed), Random(20000, seed + 1), Random(30000, seed + 2)};
  p.streamed = {Random(70000, seed + 3), Random(3000, seed + 4)};
  return p;
}

Status RunBatch(Store& store, const BatchPlan& p) {
  KI_ASSIGN_OR_RETURN(auto b, store.NewBatch());
  for (const auto& w : p.whole) KI_RETURN_IF_ERROR(b->PutBlob(w, "text/plain").status());
  for (const auto& s : p.streamed) {
    StringFile in(s, StringFile::Looks::kPipe);
    KI_RETURN_IF_ERROR(b->PutBlobStream(in, "text/plain", "pipe").status());
  }
  return b->Commit();
}

std::vector<std::string> All(const BatchPlan& p) {
  std::vector<std::string> v = p.whole;
  v.insert(v.end(), p.streamed.begin(), p.streamed.end());
  return v;
}

// How many of the plan's objects the store indexes; each one indexed must
// read back as its bytes.
size_t Held(Store& store, const BatchPlan& p) {
  size_t n = 0;
  for (const std::string& bytes : All(p)) {
    const Digest d = Sha256Of(bytes);
    auto st = store.Stat(d);
    EXPECT_OK(st);
    if (!st.ok() || !st->has_value()) continue;
    ++n;
    auto r = store.Read(d);
    EXPECT_OK(r);
    if (r.ok()) EXPECT_TRUE(*r == bytes) << d.str() << " reads back other bytes";
  }
  return n;
}

// One run: batch A commits before the crash tracking starts, then B and C
// run with the process dying at step `crash_step` (-1: not during them; the
// power is cut after both). Returns whether the crash came during B or C;
// *undone_count counts what the power cut took away.
bool CrashRun(int crash_step, std::vector<std::string>* steps, size_t* undone_count) {
  SCOPED_TRACE("crash at step " + std::to_string(crash_step));
  TempDir dir;
  FaultInjectionEnv env;
  const BatchPlan a = Plan(1), b = Plan(10), c = Plan(20);
  bool b_committed = false, c_committed = false;
  {
    auto s = Store::Init(dir.path(), Options(&env));
    EXPECT_OK(s);
    if (!s.ok()) return false;
    EXPECT_OK(RunBatch(**s, a));
    env.TrackUnsynced();
    env.CrashAtStep(crash_step);
    Status sb = RunBatch(**s, b);
    b_committed = sb.ok();
    if (!env.crashed()) {
      EXPECT_OK(sb);
      Status sc = RunBatch(**s, c);
      c_committed = sc.ok();
      if (!env.crashed()) EXPECT_OK(sc);
    } else {
      EXPECT_TRUE(sb.IsIOError()) << sb.ToString();
    }
  }  // the store closes (what LMDB committed stays; nothing else is written)
  *steps = env.steps();
  const bool during = env.crashed();
  env.Crash();
  const std::vector<std::string> undone = env.DropUnsyncedData();
  *undone_count = undone.size();
  std::string what;
  for (const auto& u : undone) what += "  " + u + "\n";
  SCOPED_TRACE("undone by the crash:\n" + what);

  auto s = Store::Open(dir.Join(".ki"), OpenMode::kReadWrite, Options(nullptr));
  EXPECT_OK(s);
  if (!s.ok()) return during;
  Store& store = **s;
  auto audit = store.Audit();
  EXPECT_OK(audit);
  if (audit.ok()) {
    for (const auto& f : audit->faults) ADD_FAILURE() << "audit fault: " << f.digest.str() << " " << f.detail;
  }
  EXPECT_EQ(Held(store, a), All(a).size()) << "batch A committed before the crash";
  const size_t hb = Held(store, b), hc = Held(store, c);
  if (b_committed) EXPECT_EQ(hb, All(b).size()) << "batch B's commit returned";
  if (c_committed) EXPECT_EQ(hc, All(c).size()) << "batch C's commit returned";
  // A batch is atomic: all of it or none (an object of C that B also holds
  // would blur this; the plans share none).
  EXPECT_TRUE(hb == 0 || hb == All(b).size()) << hb;
  EXPECT_TRUE(hc == 0 || hc == All(c).size()) << hc;
  // The store works after the crash: the batches that did not commit can
  // be written again, and then everything is there.
  EXPECT_OK(RunBatch(store, b));
  EXPECT_OK(RunBatch(store, c));
  EXPECT_EQ(Held(store, b) + Held(store, c), All(b).size() + All(c).size());
  auto again = store.Audit();
  EXPECT_OK(again);
  if (again.ok()) EXPECT_FALSE(again->HasFaults());
  return during;
}

TEST(StoreCrash, EveryStepOfTwoBatchesLeavesAStoreThatAuditsClean) {
  std::vector<std::string> steps;
  size_t undone = 0, cuts_that_took_something = 0;
  ASSERT_FALSE(CrashRun(-1, &steps, &undone));  // the power cut after both commits
  const size_t n = steps.size();
  ASSERT_GT(n, 10u) << "too few steps logged: the batches write loose and scratch files";
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> got;
    EXPECT_TRUE(CrashRun(int(i), &got, &undone)) << "step " << i << " (" << steps[i] << ") was not reached";
    if (undone > 0) ++cuts_that_took_something;
    if (HasFailure()) {
      std::string log;
      for (const auto& s : got) log += "  " + s + "\n";
      FAIL() << "at step " << i << "; steps:\n" << log;
    }
  }
  // The cuts are real: most of them find files or names not yet durable
  // and take them away (a cut right after a directory fsync may find none).
  EXPECT_GT(cuts_that_took_something, n / 2) << cuts_that_took_something << " of " << n;
}

// The simulation itself: a file committed without fsync is empty after
// the crash; one whose directory was never synced is gone; a replaced file
// whose directory was not synced since comes back as it was; what was
// synced (data and directory) stays.
TEST(StoreCrash, TheFaultEnvDropsWhatWasNotMadeDurable) {
  TempDir dir;
  FaultInjectionEnv env;
  const std::string d = dir.Join("d");
  ASSERT_OK(env.CreateDirs(d));
  ASSERT_OK(env.WriteFileAtomic(d + "/old", "old bytes", Durability::kSync));
  ASSERT_OK(env.SyncDir(d));
  env.TrackUnsynced();
  ASSERT_OK(env.WriteFileAtomic(d + "/old", "new bytes", Durability::kSync));  // dir not synced
  ASSERT_OK(env.WriteFileAtomic(d + "/synced", "kept", Durability::kSync));
  ASSERT_OK(env.WriteFileAtomic(d + "/nodata", "lost", Durability::kNone));
  ASSERT_OK(env.SyncDir(d));  // names durable: old -> new bytes, synced, nodata (its data not)
  ASSERT_OK(env.WriteFileAtomic(d + "/late", "no dir sync", Durability::kSync));
  ASSERT_OK(env.CreateDirs(d + "/sub/deeper"));
  ASSERT_OK(env.WriteFileAtomic(d + "/sub/deeper/f", "in a new directory", Durability::kSync));
  ASSERT_OK(env.SyncDir(d + "/sub/deeper"));  // but d/sub never synced into d
  ASSERT_OK(env.RemoveFile(d + "/synced"));     // removal not durable
  ASSERT_OK(env.Rename(d + "/old", d + "/moved"));  // not durable either
  env.Crash();
  EXPECT_TRUE(env.WriteFileAtomic(d + "/after", "x", Durability::kSync).IsIOError());
  EXPECT_TRUE(env.SyncDir(d).IsIOError());
  env.DropUnsyncedData();
  EXPECT_EQ(test::ReadFileOrDie(d + "/old"), "new bytes");
  EXPECT_EQ(test::ReadFileOrDie(d + "/synced"), "kept");
  EXPECT_EQ(test::ReadFileOrDie(d + "/nodata"), "");
  EXPECT_FALSE(std::filesystem::exists(d + "/late"));
  EXPECT_FALSE(std::filesystem::exists(d + "/moved"));
  EXPECT_FALSE(std::filesystem::exists(d + "/sub"));
  EXPECT_FALSE(std::filesystem::exists(d + "/after"));
  // Alive again, and with nothing pending a second crash drops nothing.
  ASSERT_OK(env.WriteFileAtomic(d + "/after", "x", Durability::kSync));
  ASSERT_OK(env.SyncDir(d));
  env.Crash();
  EXPECT_TRUE(env.DropUnsyncedData().empty());
  EXPECT_EQ(test::ReadFileOrDie(d + "/after"), "x");
}

// ki init cut at each step: init run again afterwards makes a store that
// works and audits clean, and an open before that either finds no store
// (no FORMAT) or a working one, never a half-made one that breaks later.
TEST(StoreCrash, InitCutAtEachStepCanBeRunAgain) {
  std::vector<std::string> steps;
  {
    TempDir dir;
    FaultInjectionEnv env;
    env.TrackUnsynced();
    env.CrashAtStep(-1);
    ASSERT_OK(Store::Init(dir.path(), Options(&env)));
    steps = env.steps();
  }
  ASSERT_GE(steps.size(), 3u);
  for (size_t i = 0; i <= steps.size(); ++i) {
    SCOPED_TRACE("crash at step " + std::to_string(i) + (i < steps.size() ? " (" + steps[i] + ")" : " (after init)"));
    TempDir dir;
    FaultInjectionEnv env;
    env.TrackUnsynced();
    env.CrashAtStep(int(i));
    {
      auto s = Store::Init(dir.path(), Options(&env));
      EXPECT_EQ(s.ok(), i == steps.size()) << (s.ok() ? "" : s.status().ToString());
    }
    env.Crash();
    env.DropUnsyncedData();
    if (i == steps.size()) {
      // Init returned: the store must be there after the power cut.
      auto s = Store::Open(dir.Join(".ki"), OpenMode::kReadWrite, Options(nullptr));
      ASSERT_OK(s);
    }
    auto s = Store::Init(dir.path(), Options(nullptr));
    ASSERT_OK(s);
    ASSERT_OK(RunBatch(**s, Plan(5)));
    auto audit = (*s)->Audit();
    ASSERT_OK(audit);
    EXPECT_FALSE(audit->HasFaults());
  }
}

}  // namespace
}  // namespace ki
