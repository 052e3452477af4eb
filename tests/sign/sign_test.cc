// Keys, trust, DSSE envelopes and attestation checks (src/sign/).
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

PassphraseSource Fixed(std::string phrase) {
  return [phrase](std::string_view, bool) -> Result<SecretBytes> {
    SecretBytes s(phrase.size() + 1);
    std::memcpy(s.data(), phrase.data(), phrase.size());
    s.Truncate(phrase.size());
    return s;
  };
}

// ---------------------------------------------------------------- encoding

TEST(Dsse, PaeMatchesTheSpecVector) {
  // DSSE protocol.md, "Test Vectors".
  EXPECT_EQ(PreAuthEncoding("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  // LEN counts bytes, not characters.
  EXPECT_EQ(PreAuthEncoding("t", "é"), "DSSEv1 1 t 2 é");
  EXPECT_EQ(PreAuthEncoding("", ""), "DSSEv1 0  0 ");
}

TEST(Base64, RoundTripAndStrictness) {
  std::string bytes = "\x00\xff\xfe ki \x01";
  std::string enc = Base64Encode(bytes);
  auto dec = Base64Decode(enc, "x");
  ASSERT_OK(dec);
  EXPECT_EQ(*dec, bytes);
  EXPECT_EQ(*Base64Decode("aGVsbG8gd29ybGQ=", "x"), "hello world");
  EXPECT_EQ(*Base64Decode("_-8=", "x"), "\xff\xef");  // URL-safe accepted
  EXPECT_TRUE(Base64Decode("aGVsbG8gd29ybGQ", "x").status().IsInvalidInput());    // truncated padding
  EXPECT_TRUE(Base64Decode("aGVsbG8gd29ybGQ=!", "x").status().IsInvalidInput());  // trailing garbage
  EXPECT_TRUE(Base64Decode("aGV sbG8=", "x").status().IsInvalidInput());
  EXPECT_TRUE(Base64Decode("a", "x").status().IsInvalidInput());
}

TEST(PublicKey, TextFormAndKeyId) {
  SigningKey k = SigningKey::Generate("t");
  std::string text = k.public_key().ToString();
  EXPECT_EQ(text.rfind("ed25519:", 0), 0u);
  auto back = PublicKey::Parse(text + "\n");
  ASSERT_OK(back);
  EXPECT_TRUE(*back == k.public_key());
  std::string raw(reinterpret_cast<const char*>(k.public_key().bytes.data()), 32);
  EXPECT_EQ(k.public_key().KeyId(), Sha256Of(raw).hex());
  EXPECT_TRUE(PublicKey::Parse("ssh-ed25519 AAAA").status().IsInvalidInput());
  EXPECT_TRUE(PublicKey::Parse("ed25519:" + Base64Encode(std::string(31, 'a'))).status().IsInvalidInput());
}

TEST(SecretBytes, MoveAndTruncate) {
  SecretBytes a(16);
  std::memset(a.data(), 7, 16);
  SecretBytes b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  ASSERT_EQ(b.size(), 16u);
  b.Truncate(4);
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(b.data()[3], 7);
}

// ---------------------------------------------------------------- keys

TEST(Keyring, PassphraseKeyRoundTrip) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  auto info = ring.Generate("alice", KeyProtection::kPassphrase, Fixed("s3cret"));
  ASSERT_OK(info);
  struct stat st{};
  ASSERT_EQ(::stat(info->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(ring.dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string file = test::ReadFileOrDie(info->path);
  EXPECT_EQ(file.find("s3cret"), std::string::npos);
  EXPECT_NE(file.find("protection: argon2id13-xsalsa20poly1305"), std::string::npos);

  auto key = ring.Load("alice", Fixed("s3cret"));
  ASSERT_OK(key);
  EXPECT_TRUE(key->public_key() == info->key);
  std::string sig = key->Sign("m");
  EXPECT_EQ(sig.size(), 64u);

  auto wrong = ring.Load("alice", Fixed("s3cret!"));
  EXPECT_TRUE(wrong.status().IsInvalidInput());
  EXPECT_NE(wrong.status().message().find("wrong passphrase"), std::string::npos);

  auto list = ring.List();
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name, "alice");
  auto found = ring.FindByKeyId(info->key.KeyId());
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
}

TEST(Keyring, RefusesLooseSecretKeyFiles) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  auto info = ring.Generate("k", KeyProtection::kNone, Fixed(""));
  ASSERT_OK(info);
  ASSERT_OK(ring.Load("k", Fixed("")));
  for (mode_t m : {0644, 0640, 0604, 0660, 0620}) {
    ASSERT_EQ(::chmod(info->path.c_str(), m), 0);
    auto r = ring.Load("k", Fixed(""));
    EXPECT_TRUE(r.status().IsIOError()) << m;
    EXPECT_NE(r.status().message().find("accessible by group or others"), std::string::npos);
  }
  // Public facts stay readable (ki key list / export).
  EXPECT_OK(ring.Info("k"));
  ASSERT_EQ(::chmod(info->path.c_str(), 0600), 0);
  EXPECT_OK(ring.Load("k", Fixed("")));
}

// A key file replaced by a symbolic link is not followed: whoever can
// write the keys folder could otherwise point ki at a file of their own.
TEST(Keyring, RefusesASymlinkedSecretKeyFile) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  auto info = ring.Generate("k", KeyProtection::kNone, Fixed(""));
  ASSERT_OK(info);
  std::string moved = dir.Join("elsewhere.key");
  ASSERT_EQ(::rename(info->path.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(moved.c_str(), info->path.c_str()), 0);
  auto r = ring.Load("k", Fixed(""));
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("symbolic link"), std::string::npos) << r.status().message();
  ASSERT_EQ(::unlink(info->path.c_str()), 0);
  ASSERT_EQ(::rename(moved.c_str(), info->path.c_str()), 0);
  EXPECT_OK(ring.Load("k", Fixed("")));
}

// A FIFO where the key file should be is refused at once; opening it the
// ordinary way would wait for a writer forever.
TEST(Keyring, RefusesAFifoWithoutWaiting) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  auto info = ring.Generate("k", KeyProtection::kNone, Fixed(""));
  ASSERT_OK(info);
  ASSERT_EQ(::unlink(info->path.c_str()), 0);
  ASSERT_EQ(::mkfifo(info->path.c_str(), 0600), 0);
  auto r = ring.Load("k", Fixed(""));
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
}

TEST(Keyring, NamesAndDuplicates) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  ASSERT_OK(ring.Generate("a.b_c-1", KeyProtection::kNone, Fixed("")));
  EXPECT_TRUE(ring.Generate("a.b_c-1", KeyProtection::kNone, Fixed("")).status().IsInvalidInput());
  for (const char* bad : {"", "../x", ".hidden", "-x", "a/b", "a b"})
    EXPECT_TRUE(ring.Generate(bad, KeyProtection::kNone, Fixed("")).status().IsInvalidInput()) << bad;
  EXPECT_TRUE(ring.Generate("e", KeyProtection::kPassphrase, Fixed("")).status().IsInvalidInput());
  EXPECT_TRUE(ring.Load("nobody", Fixed("")).status().IsNotFound());
}

TEST(Keyring, DamagedKeyFiles) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  auto info = ring.Generate("k", KeyProtection::kNone, Fixed(""));
  ASSERT_OK(info);
  std::string text = test::ReadFileOrDie(info->path);
  SigningKey other = SigningKey::Generate("o");
  // A public line that does not belong to the secret.
  std::string swapped = text;
  size_t p = swapped.find("public: ");
  swapped.replace(p + 8, swapped.find('\n', p) - p - 8, other.public_key().ToString());
  size_t id = swapped.find("keyid: ");
  swapped.replace(id + 7, 64, other.public_key().KeyId());
  test::WriteFileOrDie(info->path, swapped);
  ::chmod(info->path.c_str(), 0600);
  EXPECT_TRUE(ring.Load("k", Fixed("")).status().IsInvalidInput());
  test::WriteFileOrDie(info->path, "not a key\n");
  ::chmod(info->path.c_str(), 0600);
  EXPECT_TRUE(ring.Load("k", Fixed("")).status().IsInvalidInput());
}

// ki key generate on a full disk, at each step of writing the key file:
// its data, fsync, link into place, the directory's fsync. The error is an
// IOError naming the step; no key file (nor temporary file) is left, the
// keys made before still load, and generating the same name again works.
// A failed directory fsync used to leave the linked key file in place after
// reporting the failure, so the retry was refused: "already exists".
TEST(Keyring, WriteErrorAtEachStepLeavesNoKeyAndARetryWorks) {
  using Fault = test::FaultInjectionEnv::CommitFault;
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE(step);
    TempDir dir;
    test::FaultInjectionEnv env;
    Keyring ring(dir.Join("keys"), &env);
    ASSERT_OK(ring.Generate("before", KeyProtection::kNone, Fixed("")));
    if (step == 0) env.SetWriteBudget(10);
    if (step == 1) env.FailCommits(Fault::kFsync);
    if (step == 2) env.FailCommits(Fault::kRename);
    if (step == 3) env.FailSyncDir(true);
    auto r = ring.Generate("k", KeyProtection::kNone, Fixed(""));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(step < 3 ? "No space left on device" : "the key was not kept"),
              std::string::npos)
        << r.status().message();
    env.SetWriteBudget(-1);
    env.FailCommits(Fault::kNone);
    env.FailSyncDir(false);
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(ring.dir())) files.push_back(e.path().filename());
    EXPECT_EQ(files, std::vector<std::string>{"before.key"});
    EXPECT_TRUE(ring.Info("k").status().IsNotFound());
    EXPECT_OK(ring.Load("before", Fixed("")));
    auto retry = ring.Generate("k", KeyProtection::kNone, Fixed(""));
    ASSERT_OK(retry);
    auto loaded = ring.Load("k", Fixed(""));
    ASSERT_OK(loaded);
    EXPECT_TRUE(loaded->public_key() == retry->key);
  }
}

// A ki key generate killed between creating its temporary file and linking
// it left keys/<name>.key.tmp-<pid>-<n> (for --no-passphrase, the secret in
// clear) for ever: nothing reported or removed it. Only a temporary whose
// writer is gone is removed; a live writer's and other files are kept.
TEST(Keyring, RemovesTheTemporaryOfAKilledWriterOnly) {
  TempDir dir;
  Keyring ring(dir.Join("keys"));
  ASSERT_OK(ring.Generate("kept", KeyProtection::kNone, Fixed("")));
  // A writer killed mid-way: the child creates the temporary through Env,
  // as Generate does, and dies without committing or cleaning up.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto f = Env::Default()->NewAtomicFile(ring.dir() + "/k.key", AtomicFileOptions{.mode = 0600, .replace = false});
    if (!f.ok() || !(*f)->Append("ki-secret-key v1\nsecret: in clear\n").ok()) ::_exit(1);
    ::_exit(0);  // no destructor: the temporary stays, as after kill -9
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  const std::string dead = std::to_string(child);
  std::vector<std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(ring.dir())) before.push_back(e.path().filename());
  std::sort(before.begin(), before.end());
  ASSERT_EQ(before.size(), 2u);
  const std::string stale = before[0];  // k.key.tmp-<child>-<n> sorts before kept.key
  ASSERT_EQ(stale.rfind("k.key.tmp-" + dead + "-", 0), 0u) << stale;

  // A live writer (this process), pid 1 (alive, maybe another user's), and
  // names that are not a key's temporary all stay.
  auto live = Env::Default()->NewAtomicFile(ring.dir() + "/live.key", AtomicFileOptions{.mode = 0600, .replace = false});
  ASSERT_OK(live);
  ASSERT_OK((*live)->Append("x"));
  const std::vector<std::string> others = {"init.key.tmp-1-0", "k.key.tmp-" + dead + "-x", "notes.tmp-" + dead + "-0",
                                           ".hidden.key.tmp-" + dead + "-0", "k.key.tmp-" + dead};
  for (const auto& n : others) test::WriteFileOrDie(ring.dir() + "/" + n, "x");

  auto removed = ring.RemoveStaleTemporaries();
  ASSERT_OK(removed);
  EXPECT_EQ(*removed, std::vector<std::string>{ring.dir() + "/" + stale});
  EXPECT_FALSE(std::filesystem::exists(ring.dir() + "/" + stale));
  for (const auto& n : others) EXPECT_TRUE(std::filesystem::exists(ring.dir() + "/" + n)) << n;
  size_t live_temporaries = 0;
  for (const auto& e : std::filesystem::directory_iterator(ring.dir()))
    live_temporaries += e.path().filename().string().rfind("live.key.tmp-" + std::to_string(::getpid()) + "-", 0) == 0;
  EXPECT_EQ(live_temporaries, 1u);
  EXPECT_OK((*live)->Commit(Durability::kSync));  // the live writer was not disturbed
  EXPECT_OK(ring.Load("kept", Fixed("")));
  // Nothing left to remove the second time; a missing directory is no error.
  removed = ring.RemoveStaleTemporaries();
  ASSERT_OK(removed);
  EXPECT_TRUE(removed->empty());
  EXPECT_OK(Keyring(dir.Join("none")).RemoveStaleTemporaries());
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
    {
      auto ts = TrustStore::Load(path, &env);
      ASSERT_OK(ts);
      ASSERT_OK(ts->Add(a.public_key(), "alice", Role::kRunner));
      ASSERT_OK(ts->Save());
    }
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
    {
      auto ts = TrustStore::Load(path, &env);
      ASSERT_OK(ts);
      ASSERT_OK(ts->Add(a.public_key(), "alice", Role::kRunner));
      ASSERT_OK(ts->Save());
    }
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
    if (saved.ok()) EXPECT_NE(now->FindTrusted(b.public_key().KeyId()), nullptr) << "a save that returned is lost";
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

// ---------------------------------------------------------------- attestations

class AttestationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.path());
    ASSERT_OK(s);
    store_ = std::move(s).value();
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    auto a = (*batch)->PutBlob("subject A", "text/plain");
    auto b = (*batch)->PutBlob("subject B", "text/plain");
    ASSERT_OK(a);
    ASSERT_OK(b);
    ASSERT_OK((*batch)->Commit());
    subject_a_ = a->digest;
    subject_b_ = b->digest;
    auto t = TrustStore::Load(dir_.Join("trust.json"));
    ASSERT_OK(t);
    keys_.trust = std::move(t).value();
    ASSERT_OK(keys_.trust.Add(runner_.public_key(), "runner", Role::kRunner));
  }

  AttestationRequest Reviewed(const Digest& d) {
    AttestationRequest r;
    r.subject = d;
    r.predicate = PredicateKind::kReviewed;
    r.note = "fine";
    return r;
  }

  // Files raw envelope bytes under `subject`, bypassing every check (what a
  // damaged or malicious store could hold).
  Digest FileRaw(const Digest& subject, const std::string& bytes) {
    auto batch = store_->NewBatch();
    EXPECT_OK(batch);
    auto put = (*batch)->PutBlob(bytes, kEnvelopeMediaType);
    EXPECT_OK(put);
    EXPECT_OK((*batch)->Put(kAttestationTable, std::string(subject.raw()) + std::string(put->digest.raw()), ""));
    EXPECT_OK((*batch)->Commit());
    return put->digest;
  }

  AttestationReport Only(const Digest& subject) {
    auto r = VerifyAttestations(*store_, subject, keys_);
    EXPECT_OK(r);
    EXPECT_EQ(r->size(), 1u);
    return r->empty() ? AttestationReport{} : (*r)[0];
  }

  std::string GoodEnvelope() {
    auto b = BuildAttestation(*store_, runner_, Reviewed(subject_a_));
    EXPECT_OK(b);
    return *b;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  Digest subject_a_, subject_b_;
  SigningKey runner_ = SigningKey::Generate("runner");
  KeySources keys_;
};

TEST_F(AttestationTest, CreateStoresAndVerifies) {
  auto put = CreateAttestation(*store_, runner_, Reviewed(subject_a_));
  ASSERT_OK(put);
  auto info = store_->Stat(put->digest);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->media_type, kEnvelopeMediaType);
  AttestationReport r = Only(subject_a_);
  EXPECT_FALSE(r.fault()) << r.problem();
  EXPECT_TRUE(r.TrustedBy(Role::kRunner));
  ASSERT_EQ(r.signatures.size(), 1u);
  EXPECT_EQ(r.signatures[0].signer, "runner");
  EXPECT_EQ(r.predicate, PredicateKind::kReviewed);
  EXPECT_EQ(r.predicate_body["note"], "fine");
  // The envelope is what DSSE says: canonical JSON with a base64 statement.
  auto bytes = store_->Read(put->digest);
  ASSERT_OK(bytes);
  auto env = ParseEnvelope(*bytes);
  ASSERT_OK(env);
  EXPECT_EQ(env->payload_type, kInTotoPayloadType);
  auto st = ParseDocument(env->payload, DocFormat::kJson, "t");
  ASSERT_OK(st);
  EXPECT_EQ((*st)["_type"], kInTotoStatementType);
  EXPECT_EQ((*st)["subject"][0]["digest"]["sha256"], subject_a_.hex());
  EXPECT_EQ((*st)["predicateType"], PredicateTypeUri(PredicateKind::kReviewed));
  // Nothing under the other subject.
  auto none = VerifyAttestations(*store_, subject_b_, keys_);
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(AttestationTest, UntrustedRevokedAndUnknownKeys) {
  SigningKey stranger = SigningKey::Generate("stranger");
  ASSERT_OK(CreateAttestation(*store_, stranger, Reviewed(subject_a_)));
  AttestationReport r = Only(subject_a_);
  EXPECT_FALSE(r.fault());
  EXPECT_FALSE(r.TrustedBy());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kUntrusted);
  EXPECT_EQ(r.signatures[0].key_source, "statement");
  EXPECT_EQ(r.signatures[0].signer, "self-declared:stranger");

  ASSERT_OK(CreateAttestation(*store_, runner_, Reviewed(subject_b_)));
  ASSERT_OK(keys_.trust.Remove("runner"));
  r = Only(subject_b_);
  EXPECT_FALSE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kRevoked);
  EXPECT_FALSE(r.TrustedBy());

  // A key id nobody knows and no signer key in the statement: unknown. (A
  // predicate of another tool's type: ki's own must name their signer.)
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  Json st = *ParseDocument(env->payload, DocFormat::kJson, "t");
  st["predicate"].erase("signer");
  st["predicateType"] = "https://example.com/other-tool/v1";
  env->payload = *Canonicalize(st);
  env->signatures[0].keyid = std::string(64, 'a');
  env->signatures[0].sig = runner_.Sign(PreAuthEncoding(env->payload_type, env->payload));
  std::string bytes = SerializeEnvelope(*env);
  AttestationReport u = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(u.fault());
  EXPECT_EQ(u.signatures[0].state, SignatureState::kUnknownKey);
}

TEST_F(AttestationTest, TamperedPayloadIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  size_t p = env->payload.find("fine");
  env->payload.replace(p, 4, "FINE");
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kInvalid);
  EXPECT_NE(r.problem().find("does not verify"), std::string::npos);
}

TEST_F(AttestationTest, TamperedSignatureIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  env->signatures[0].sig[10] ^= 0x01;
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kInvalid);
}

TEST_F(AttestationTest, SignatureMovedOntoAnotherSubjectIsAFault) {
  // The same valid envelope filed under B...
  FileRaw(subject_b_, GoodEnvelope());
  AttestationReport r = Only(subject_b_);
  EXPECT_TRUE(r.fault());
  EXPECT_NE(r.problem().find("subject: the statement is about " + subject_a_.str()), std::string::npos);
  EXPECT_EQ(r.signatures[0].state, SignatureState::kTrusted);  // valid, yet never counted
  EXPECT_FALSE(r.TrustedBy());
  // ...or its signature put on a statement about B.
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  std::string payload = env->payload;
  size_t p = payload.find(subject_a_.hex());
  payload.replace(p, 64, subject_b_.hex());
  env->payload = payload;
  std::string bytes = SerializeEnvelope(*env);
  AttestationReport moved = CheckEnvelope(bytes, Sha256Of(bytes), subject_b_, keys_);
  EXPECT_TRUE(moved.fault());
  EXPECT_EQ(moved.signatures[0].state, SignatureState::kInvalid);
}

TEST_F(AttestationTest, WrongPayloadTypeIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  env->payload_type = "application/json";
  // Re-signed properly over the new type: still refused, for its type.
  env->signatures[0].sig = runner_.Sign(PreAuthEncoding(env->payload_type, env->payload));
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.problem().rfind("payloadType:", 0), 0u) << r.problem();
}

TEST_F(AttestationTest, MalformedFieldsAreFaults) {
  Json good = *ParseDocument(GoodEnvelope(), DocFormat::kJson, "t");
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* check;
  } cases[] = {
      {"truncated sig", [](Json& j) { j["signatures"][0]["sig"] = j["signatures"][0]["sig"].get<std::string>().substr(0, 40); }, "encoding"},
      {"non-base64 sig", [](Json& j) { j["signatures"][0]["sig"] = "%%%%"; }, "encoding"},
      {"non-base64 payload", [](Json& j) { j["payload"] = std::string("!").append(j["payload"].get<std::string>()); }, "encoding"},
      {"truncated payload", [](Json& j) { j["payload"] = j["payload"].get<std::string>().substr(0, 21); }, "encoding"},
      {"no signatures", [](Json& j) { j["signatures"] = Json::array(); }, "signatures"},
      {"signatures missing", [](Json& j) { j.erase("signatures"); }, "envelope"},
      {"payloadType missing", [](Json& j) { j.erase("payloadType"); }, "envelope"},
      {"not an object", [](Json& j) { j = Json::array(); }, "envelope"},
  };
  for (const auto& c : cases) {
    Json j = good;
    c.edit(j);
    std::string bytes = j.dump();
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault()) << c.what;
    EXPECT_EQ(r.problem().rfind(std::string(c.check) + ":", 0), 0u) << c.what << ": " << r.problem();
  }
  std::string not_json = "{\"payload\": ";
  EXPECT_TRUE(CheckEnvelope(not_json, Sha256Of(not_json), subject_a_, keys_).fault());
}

TEST_F(AttestationTest, MissingOrCorruptEnvelopeIsAFault) {
  Digest ghost = Sha256Of("never stored");
  auto batch = store_->NewBatch();
  ASSERT_OK(batch);
  ASSERT_OK((*batch)->Put(kAttestationTable, std::string(subject_a_.raw()) + std::string(ghost.raw()), ""));
  ASSERT_OK((*batch)->Commit());
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.problem().rfind("stored:", 0), 0u);
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->faults(), 1u);
}

TEST_F(AttestationTest, ImportChecksBeforeStoring) {
  std::string good = GoodEnvelope();
  // Filed under the wrong subject: VerifyFailed, nothing stored.
  auto wrong = ImportAttestation(*store_, good, subject_b_, keys_);
  EXPECT_EQ(wrong.status().code(), Code::kVerifyFailed);
  auto env = ParseEnvelope(good);
  env->signatures.clear();
  Json j = *ParseDocument(SerializeEnvelope(*env), DocFormat::kJson, "t");
  EXPECT_TRUE(ImportAttestation(*store_, j.dump(), std::nullopt, keys_).status().IsInvalidInput());
  EXPECT_TRUE(ListAttestations(*store_, subject_a_)->empty());
  EXPECT_TRUE(ListAttestations(*store_, subject_b_)->empty());
  // The subject is read from the statement.
  auto ok = ImportAttestation(*store_, good, std::nullopt, keys_);
  ASSERT_OK(ok);
  EXPECT_EQ(ok->second.subject, subject_a_);
  EXPECT_EQ(ListAttestations(*store_, subject_a_)->size(), 1u);
}

TEST_F(AttestationTest, RequestsAreValidated) {
  AttestationRequest r = Reviewed(subject_a_);
  r.predicate = PredicateKind::kReproduced;
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());
  r.rerun = RerunResult{subject_a_, 100, 1.0, true, "", std::nullopt};
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());  // no machine
  r.rerun->machine = "m";
  r.rerun->latency_ns = std::nan("");
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());
  AttestationRequest absent = Reviewed(Sha256Of("absent"));
  EXPECT_TRUE(CreateAttestation(*store_, runner_, absent).status().IsNotFound());
  AttestationRequest dispute = Reviewed(subject_a_);
  dispute.predicate = PredicateKind::kDisputed;
  dispute.note.clear();
  EXPECT_TRUE(CreateAttestation(*store_, runner_, dispute).status().IsInvalidInput());
  EXPECT_TRUE(ListAttestations(*store_, subject_a_)->empty());
}

// A statement whose `_type` is there but not a string made CheckEnvelope
// call nlohmann's value(), which throws: `ki verify` and `ki audit` of a
// store holding such an envelope (a pull stored one unchecked) ended with
// exit 5 and a raw library message, and so did `ki sign --envelope` of it.
// It is a fault of the statement, reported as any other.
TEST_F(AttestationTest, StatementTypeThatIsNotAStringIsAFaultNotAnException) {
  for (Json type : {Json(5), Json::object(), Json::array({std::string(kInTotoStatementType)}), Json(nullptr)}) {
    SCOPED_TRACE(type.dump());
    Json statement = {{"_type", type},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", {{"note", "fine"}}}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    env.signatures.push_back({runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
    std::string bytes = SerializeEnvelope(env);
    AttestationReport direct = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(direct.fault());
    EXPECT_EQ(direct.problem().rfind("statement:", 0), 0u) << direct.problem();
    // `ki sign --envelope` refuses it as malformed, with or without REF.
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, std::nullopt, keys_).status().IsInvalidInput());
  }
  // Filed regardless (what a store written by an older pull may hold):
  // verify and audit report it as a fault, from the library and the CLI.
  Json statement = {{"_type", 5},
                    {"subject", Json::array({{{"digest", {{"sha256", subject_a_.hex()}}}}})},
                    {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                    {"predicate", Json::object()}};
  DsseEnvelope env;
  env.payload_type = std::string(kInTotoPayloadType);
  env.payload = *Canonicalize(statement);
  env.signatures.push_back({runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
  std::string bytes = SerializeEnvelope(env);
  FileRaw(subject_a_, bytes);
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->faults(), 1u);

  TempDir home;
  const std::string env_prefix = "KI_HOME=" + home.path();
  const std::string store = "--store " + dir_.path() + " ";
  auto verify = test::RunKi(store + "verify " + subject_a_.str(), env_prefix);
  EXPECT_EQ(verify.exit_code, 1) << verify.err;
  EXPECT_NE(verify.out.find("`_type` is not"), std::string::npos) << verify.out << verify.err;
  auto audit_cli = test::RunKi(store + "audit", env_prefix);
  EXPECT_EQ(audit_cli.exit_code, 1) << audit_cli.err;
  EXPECT_EQ(audit_cli.err.find("json.exception"), std::string::npos) << audit_cli.err;
  test::WriteFileOrDie(home.Join("env.json"), bytes);
  auto sign = test::RunKi(store + "sign " + subject_b_.str() + " --envelope " + home.Join("env.json"), env_prefix);
  EXPECT_EQ(sign.exit_code, 4) << sign.err;
  EXPECT_NE(sign.err.find("statement"), std::string::npos) << sign.err;
}

// Every ki predicate says when it was signed, as an RFC 3339 UTC time.
// signedAt was not checked: a statement with none, a number or "yesterday"
// counted like any other, and verify --json passed whatever it held on.
// Every ki predicate names its signer: {keyid, publicKey, name}, the key id
// that of the public key, and that key one of the envelope's signers. None
// of it was checked: a statement without a signer, with a key id of another
// key, or naming someone who never signed it counted like any other.
TEST_F(AttestationTest, SignerMustNameTheKeyThatSigned) {
  SigningKey other = SigningKey::Generate("other");
  const Json good_signer = {{"keyid", runner_.public_key().KeyId()},
                            {"publicKey", runner_.public_key().ToString()},
                            {"name", "runner"}};
  // The statement with `signer` set by `edit`, signed by `signers`.
  auto envelope_with = [&](const std::function<void(Json&)>& edit, std::vector<const SigningKey*> signers) {
    Json predicate = {{"note", "fine"}, {"signedAt", "2026-08-16T12:00:00Z"}, {"signer", good_signer}};
    edit(predicate);
    Json statement = {{"_type", kInTotoStatementType},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", predicate}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    for (const SigningKey* k : signers)
      env.signatures.push_back({k->public_key().KeyId(), k->Sign(PreAuthEncoding(env.payload_type, env.payload))});
    return SerializeEnvelope(env);
  };
  struct Bad {
    std::string what, message;
    std::function<void(Json&)> edit;
    std::vector<const SigningKey*> signers;
  };
  const std::vector<Bad> bad = {
      {"absent", "`signer` is missing", [](Json& p) { p.erase("signer"); }, {&runner_}},
      {"a string", "`signer` is not an object", [](Json& p) { p["signer"] = "runner"; }, {&runner_}},
      {"no keyid", "`signer.keyid` is missing", [](Json& p) { p["signer"].erase("keyid"); }, {&runner_}},
      {"no publicKey", "`signer.publicKey` is missing", [](Json& p) { p["signer"].erase("publicKey"); }, {&runner_}},
      {"name a number", "`signer.name` is missing or not a string", [](Json& p) { p["signer"]["name"] = 7; }, {&runner_}},
      {"empty name", "`signer.name` is empty", [](Json& p) { p["signer"]["name"] = ""; }, {&runner_}},
      {"bad publicKey", "`signer.publicKey` is not an Ed25519", [](Json& p) { p["signer"]["publicKey"] = "ed25519:AAAA"; },
       {&runner_}},
      {"keyid of another key", "`signer.keyid` is not the key id of `signer.publicKey`",
       [&](Json& p) { p["signer"]["keyid"] = other.public_key().KeyId(); }, {&runner_}},
      // Consistent, but `other` never signed: the statement misnames who vouches.
      {"a signer who did not sign", "which made none of the envelope's signatures",
       [&](Json& p) {
         p["signer"] = {{"keyid", other.public_key().KeyId()}, {"publicKey", other.public_key().ToString()},
                        {"name", "other"}};
       },
       {&runner_}},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    std::string bytes = envelope_with(b.edit, b.signers);
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault());
    EXPECT_EQ(r.problem().rfind("predicate: ", 0), 0u) << r.problem();
    EXPECT_NE(r.problem().find(b.message), std::string::npos) << r.problem();
    EXPECT_FALSE(r.TrustedBy());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
  }
  // The signer with co-signers, in any order, is fine.
  std::string bytes = envelope_with([](Json&) {}, {&other, &runner_});
  AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(r.fault()) << r.problem();
  EXPECT_TRUE(r.TrustedBy());
  // A signature without a key id (DSSE allows it) that verifies with the signer's key.
  auto env = ParseEnvelope(envelope_with([](Json&) {}, {&runner_}));
  ASSERT_OK(env);
  env->signatures[0].keyid.clear();
  bytes = SerializeEnvelope(*env);
  r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(r.fault()) << r.problem();
  // ...but not one that verifies only with another key.
  env = ParseEnvelope(envelope_with([](Json&) {}, {&other}));
  ASSERT_OK(env);
  env->signatures[0].keyid.clear();
  bytes = SerializeEnvelope(*env);
  r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_TRUE(r.fault());
  EXPECT_NE(r.problem().find("which made none of the envelope's signatures"), std::string::npos) << r.problem();
}

TEST_F(AttestationTest, SignedAtMustBeAnRfc3339UtcTime) {
  auto envelope_with = [&](const std::optional<Json>& signed_at) {
    Json predicate = {{"note", "fine"},
                      {"signer", {{"keyid", runner_.public_key().KeyId()},
                                  {"publicKey", runner_.public_key().ToString()},
                                  {"name", "runner"}}}};
    if (signed_at) predicate["signedAt"] = *signed_at;
    Json statement = {{"_type", kInTotoStatementType},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", predicate}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    env.signatures.push_back(
        {runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
    return SerializeEnvelope(env);
  };
  for (const std::optional<Json>& bad :
       {std::optional<Json>(), std::optional<Json>(Json(1786881600)), std::optional<Json>(Json("yesterday")),
        std::optional<Json>(Json("2026-13-01T00:00:00Z")), std::optional<Json>(Json("2026-08-16T24:00:00Z")),
        std::optional<Json>(Json("2026-08-16 12:00:00Z")), std::optional<Json>(Json("2026-08-16T12:00:00")),
        std::optional<Json>(Json("2026-08-16T12:00:00+02:00")), std::optional<Json>(Json("2026-08-16T12:00:00.Z")),
        std::optional<Json>(Json("2026-08-16T12:00:00Zjunk"))}) {
    SCOPED_TRACE(bad ? bad->dump() : "absent");
    std::string bytes = envelope_with(bad);
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault());
    EXPECT_EQ(r.problem().rfind("predicate: `signedAt`", 0), 0u) << r.problem();
    EXPECT_FALSE(r.TrustedBy());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
  }
  for (const char* good : {"2026-08-16T12:00:00Z", "2026-08-16T12:00:00.123456Z", "2016-12-31T23:59:60Z"}) {
    SCOPED_TRACE(good);
    std::string bytes = envelope_with(Json(good));
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_FALSE(r.fault()) << r.problem();
    EXPECT_TRUE(r.TrustedBy());
  }
  // What ki writes passes, with its own clock and with a given time.
  AttestationRequest req = Reviewed(subject_a_);
  EXPECT_OK(CreateAttestation(*store_, runner_, req));
  req.signed_at = "2026-08-16T12:00:00Z";
  EXPECT_OK(CreateAttestation(*store_, runner_, req));
  req.signed_at = "noon";
  EXPECT_TRUE(CheckAttestationRequest(req).IsInvalidInput());
  EXPECT_TRUE(CreateAttestation(*store_, runner_, req).status().IsInvalidInput());
}

// The attestation index is derived (issue 25.2): an envelope stored by any
// path is filed under its statement's subject; an entry deleted from the
// table is a store audit fault, and reindex files the envelope again.
TEST_F(AttestationTest, EnvelopesAreFiledByTheIndexAndAuditFindsALostEntry) {
  Digest envelope;
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    auto put = (*batch)->PutBlob(GoodEnvelope(), kEnvelopeMediaType);
    ASSERT_OK(put);
    envelope = put->digest;
    ASSERT_OK((*batch)->Commit());
  }
  auto listed = ListAttestations(*store_, subject_a_);
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<Digest>{envelope});
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->reports.size(), 1u);
  EXPECT_TRUE(audit->notes.empty());

  const std::string key = std::string(subject_a_.raw()) + std::string(envelope.raw());
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Delete(kAttestationTable, key));
    ASSERT_OK((*batch)->Commit());
  }
  auto damaged = store_->Audit();
  ASSERT_OK(damaged);
  ASSERT_EQ(damaged->faults.size(), 1u);
  EXPECT_EQ(damaged->faults[0].what,
            std::string(kAttestationTable) + " " + subject_a_.str() + " envelope " + envelope.str());
  EXPECT_NE(damaged->faults[0].detail.find("--reindex restores"), std::string::npos) << damaged->faults[0].detail;
  auto rebuilt = store_->Reindex();
  ASSERT_OK(rebuilt);
  EXPECT_TRUE(rebuilt->faults.empty());
  listed = ListAttestations(*store_, subject_a_);
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<Digest>{envelope});
}

}  // namespace
}  // namespace ki
