// The trust list: add, remove, revoke, persistence under write faults and power cuts, and the lists refused (src/sign/trust.cc).
#include "ki/sign.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>

#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

// A trust list at `path`, written through `env`, that trusts `key` as the
// runner "alice": the old list the fault tests below try to replace.
void SaveAliceList(const std::string& path, Env* env, const SigningKey& key) {
  auto ts = TrustStore::Load(path, env);
  ASSERT_OK(ts);
  ASSERT_OK(ts->Add(key.public_key(), "alice", Role::kRunner));
  ASSERT_OK(ts->Save());
}

// ---------------------------------------------------------------- trust

TEST(Trust, AddRemoveRevokeAndPersist) {
  TempDir dir;
  std::string path = dir.Join("trust.json");
  auto ts = TrustStore::Load(path);
  ASSERT_OK(ts);
  SigningKey a = SigningKey::Generate("a"), b = SigningKey::Generate("b");
  ASSERT_TRUE(*ts->Add(a.public_key(), "alice", Role::kRunner));
  ASSERT_TRUE(*ts->Add(b.public_key(), "bob", Role::kReviewer));
  EXPECT_FALSE(*ts->Add(b.public_key(), "bob", Role::kRunner));  // update
  EXPECT_TRUE(ts->Add(a.public_key(), "bob", Role::kRunner).status().IsInvalidInput());
  ASSERT_OK(ts->Save());
  auto again = TrustStore::Load(path);
  ASSERT_OK(again);
  ASSERT_EQ(again->trusted().size(), 2u);
  EXPECT_EQ(again->FindTrusted(b.public_key().KeyId())->role, Role::kRunner);
  auto removed = again->Remove(a.public_key().KeyId().substr(0, 10));
  ASSERT_OK(removed);
  EXPECT_EQ(removed->name, "alice");
  EXPECT_TRUE(again->Remove("alice").status().IsNotFound());
  EXPECT_TRUE(again->Remove("1234").status().IsNotFound());  // prefixes need 8 digits
  ASSERT_OK(again->Save());
  auto third = TrustStore::Load(path);
  ASSERT_OK(third);
  EXPECT_EQ(third->FindTrusted(a.public_key().KeyId()), nullptr);
  ASSERT_NE(third->FindRevoked(a.public_key().KeyId()), nullptr);
  // Re-adding lifts the revocation.
  ASSERT_OK(third->Add(a.public_key(), "alice", Role::kRunner));
  EXPECT_EQ(third->FindRevoked(a.public_key().KeyId()), nullptr);

  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  EXPECT_TRUE(TrustStore::Load(path).status().IsIOError());
}


// ki trust remove whose directory fsync failed (after the rename: the key
// is revoked in the list in place) exited 5, and running it again exited 3,
// 'no trusted key'. The error now says the list was changed, and the
// retry finds the key among the revoked (the CLI says 'already removed',
// exit 0, and saves again).
TEST(Trust, ARemoveRetriedAfterAFailedDirectorySyncFindsTheKeyRevoked) {
  TempDir dir;
  const std::string path = dir.Join("trust.json");
  test::FaultInjectionEnv env;
  SigningKey a = SigningKey::Generate("a"), b = SigningKey::Generate("b");
  {
    auto ts = TrustStore::Load(path, &env);
    ASSERT_OK(ts);
    ASSERT_OK(ts->Add(a.public_key(), "alice", Role::kRunner));
    ASSERT_OK(ts->Add(b.public_key(), "bob", Role::kRunner));
    ASSERT_OK(ts->Save());
  }
  {
    auto ts = TrustStore::Load(path, &env);
    ASSERT_OK(ts);
    ASSERT_OK(ts->Remove("alice"));
    env.FailSyncDir(true);
    Status s = ts->Save();
    EXPECT_TRUE(s.IsIOError());
    EXPECT_NE(s.message().find("was changed"), std::string::npos) << s.message();
    env.FailSyncDir(false);
  }
  auto ts = TrustStore::Load(path, &env);
  ASSERT_OK(ts);
  EXPECT_TRUE(ts->Remove("alice").status().IsNotFound());
  for (const std::string& who : {std::string("alice"), a.public_key().KeyId(), a.public_key().KeyId().substr(0, 8)}) {
    auto gone = ts->RevokedMatching(who);
    ASSERT_EQ(gone.size(), 1u) << who;
    EXPECT_EQ(gone[0]->keyid, a.public_key().KeyId());
  }
  EXPECT_TRUE(ts->RevokedMatching("bob").empty());
  EXPECT_TRUE(ts->RevokedMatching(a.public_key().KeyId().substr(0, 7)).empty());  // prefixes need 8 digits
  EXPECT_OK(ts->Save());  // what the retry does: the same list, durable now
}

// ki trust add on a full disk: a failure before the rename (data, fsync,
// rename) leaves the old list byte for byte, and the same add again works.
// A failed directory fsync comes after the rename: the new list is then in
// place (include/ki/sign.h, TrustStore::Save), and adding again says so.
TEST(Trust, WriteErrorAtEachStepKeepsTheOldListAndARetryWorks) {
  using Fault = test::FaultInjectionEnv::CommitFault;
  SigningKey a = SigningKey::Generate("a"), b = SigningKey::Generate("b");
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE(step);
    TempDir dir;
    const std::string path = dir.Join("trust.json");
    test::FaultInjectionEnv env;
    ASSERT_NO_FATAL_FAILURE(SaveAliceList(path, &env, a));
    const std::string before = test::ReadFileOrDie(path);
    if (step == 0) env.SetWriteBudget(10);
    if (step == 1) env.FailCommits(Fault::kFsync);
    if (step == 2) env.FailCommits(Fault::kRename);
    if (step == 3) env.FailSyncDir(true);
    {
      auto ts = TrustStore::Load(path, &env);
      ASSERT_OK(ts);
      ASSERT_OK(ts->Add(b.public_key(), "bob", Role::kRunner));
      Status s = ts->Save();
      EXPECT_TRUE(s.IsIOError()) << s.ToString();
      // After the rename the change is made: the error says so.
      EXPECT_EQ(s.message().find("was changed, but may not survive a crash") != std::string::npos, step == 3)
          << s.message();
    }
    env.SetWriteBudget(-1);
    env.FailCommits(Fault::kNone);
    env.FailSyncDir(false);
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) files.push_back(e.path().filename());
    EXPECT_EQ(files, std::vector<std::string>{"trust.json"});  // no temporary file left
    auto now = TrustStore::Load(path, &env);
    ASSERT_OK(now);
    ASSERT_NE(now->FindTrusted(a.public_key().KeyId()), nullptr);
    if (step < 3) {
      EXPECT_EQ(test::ReadFileOrDie(path), before);
      EXPECT_EQ(now->FindTrusted(b.public_key().KeyId()), nullptr);
    }
    auto added = now->Add(b.public_key(), "bob", Role::kRunner);
    ASSERT_OK(added);
    EXPECT_EQ(*added, step < 3);  // new, or (after the rename) an update
    ASSERT_OK(now->Save());
    auto after = TrustStore::Load(path);
    ASSERT_OK(after);
    EXPECT_NE(after->FindTrusted(b.public_key().KeyId()), nullptr);
  }
}

// ki trust add cut by a power failure at each step of its save (the
// fault Env drops what was not made durable: testutil/fault_env.h): the
// list read afterwards is the old one or the new one, whole, never an
// empty or missing file; and a save that returned survives the cut.
TEST(Trust, PowerCutAtEachStepOfASaveLeavesTheOldListOrTheNew) {
  SigningKey a = SigningKey::Generate("a"), b = SigningKey::Generate("b");
  std::vector<std::string> steps;
  for (int step = -1; step < int(steps.size()) + 1; ++step) {
    SCOPED_TRACE(step);
    TempDir dir;
    const std::string path = dir.Join("home/trust.json");
    test::FaultInjectionEnv env;
    ASSERT_NO_FATAL_FAILURE(SaveAliceList(path, &env, a));
    env.TrackUnsynced();
    env.CrashAtStep(step == int(steps.size()) ? -1 : step);
    Status saved;
    {
      auto ts = TrustStore::Load(path, &env);
      ASSERT_OK(ts);
      ASSERT_OK(ts->Add(b.public_key(), "bob", Role::kRunner));
      saved = ts->Save();
    }
    if (step == -1) {
      ASSERT_OK(saved);
      steps = env.steps();
      ASSERT_GE(steps.size(), 2u);  // the commit and the directory's fsync
    }
    env.Crash();
    env.DropUnsyncedData();
    auto now = TrustStore::Load(path);
    ASSERT_OK(now);
    ASSERT_NE(now->FindTrusted(a.public_key().KeyId()), nullptr) << "the old list is lost";
    if (saved.ok()) {
      EXPECT_NE(now->FindTrusted(b.public_key().KeyId()), nullptr) << "a save that returned is lost";
    }
  }
}

// A trust list that names one key twice, or one trusted name for two keys,
// has no single meaning: FindTrusted took the first entry, so a key both
// trusted and revoked counted as trusted, and a key listed as reviewer then
// runner was a reviewer. Such a list (hand-edited, merged) is refused,
// naming both entries.
TEST(Trust, ConflictingEntriesAreRefused) {
  TempDir dir;
  const std::string path = dir.Join("trust.json");
  SigningKey a = SigningKey::Generate("a"), b = SigningKey::Generate("b");
  auto entry = [](const SigningKey& k, const std::string& name, const std::string& role, const char* when) {
    return Json{{"publicKey", k.public_key().ToString()}, {"name", name}, {"role", role}, {when, "2026-08-16T12:00:00Z"}};
  };
  struct Case {
    const char* what;
    Json keys, revoked;
    const char* message;
  } cases[] = {
      {"a key twice",
       Json::array({entry(a, "alice", "reviewer", "addedAt"), entry(a, "alice2", "runner", "addedAt")}),
       Json::array(), "keys[1]: key " },
      {"trusted and revoked", Json::array({entry(a, "alice", "runner", "addedAt")}),
       Json::array({entry(a, "alice", "runner", "removedAt")}), "revoked[0]: key "},
      {"a key revoked twice", Json::array(),
       Json::array({entry(a, "alice", "runner", "removedAt"), entry(a, "alice", "runner", "removedAt")}),
       "revoked[1]: key "},
      {"a name for two keys",
       Json::array({entry(a, "alice", "runner", "addedAt"), entry(b, "alice", "reviewer", "addedAt")}),
       Json::array(), "keys[1]: the name `alice` is also trusted at keys[0]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    test::WriteFileOrDie(path, Json{{"format", "ki-trust/v1"}, {"keys", c.keys}, {"revoked", c.revoked}}.dump());
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
    auto ts = TrustStore::Load(path);
    ASSERT_FALSE(ts.ok());
    EXPECT_TRUE(ts.status().IsInvalidInput()) << ts.status().ToString();
    EXPECT_NE(ts.status().message().find(c.message), std::string::npos) << ts.status().message();
  }
  // A revoked name reused by another, trusted key is fine (a new key for alice).
  test::WriteFileOrDie(path, Json{{"format", "ki-trust/v1"},
                                  {"keys", Json::array({entry(b, "alice", "runner", "addedAt")})},
                                  {"revoked", Json::array({entry(a, "alice", "runner", "removedAt")})}}
                                 .dump());
  EXPECT_OK(TrustStore::Load(path));
}

// Whoever owns the trust list can rewrite it. One that belongs to another
// user (made where ours was expected, in a shared or world-writable
// KI_HOME) is refused, as another user's secret key file is. It was read as
// long as its mode was not group- or other-writable.
TEST(Trust, AListOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a file of another user needs root";
  TempDir dir;
  const std::string path = dir.Join("trust.json");
  auto ts = TrustStore::Load(path);
  ASSERT_OK(ts);
  ASSERT_OK(ts->Add(SigningKey::Generate("a").public_key(), "alice", Role::kRunner));
  ASSERT_OK(ts->Save());
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  auto r = TrustStore::Load(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("belongs to another user (uid 65534)"), std::string::npos)
      << r.status().message();
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);  // root's own list is the user's here
  EXPECT_OK(TrustStore::Load(path));
}

// A FIFO where trust.json should be is refused at once: the list was read
// by path after a stat, and the read waited for a writer forever.
TEST(Trust, AFifoIsRefusedWithoutWaiting) {
  TempDir dir;
  const std::string path = dir.Join("trust.json");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto loaded = std::async(std::launch::async, [&] { return TrustStore::Load(path); });
  if (loaded.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader so that the test can end, then fail.
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
    FAIL() << "TrustStore::Load waited on a FIFO";
  }
  auto r = loaded.get();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ki
