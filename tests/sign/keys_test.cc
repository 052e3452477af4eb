// Keys and encodings: DSSE PAE, base64, public keys, secret bytes and the keyring (src/sign/).
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

}  // namespace
}  // namespace ki
